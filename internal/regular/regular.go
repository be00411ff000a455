// Package regular opens the files posed reads — its configuration, state,
// password, TLS and model files, replayed pictures — refusing what is not
// a regular file (a FIFO, a device, a socket, a directory) with an error
// that names it, and writes its state files whole or not at all. A file
// is opened without blocking, then checked: a FIFO
// opened plainly waits for a writer, and posed with it (a state file or a
// model planted as a FIFO hung the start and every reload).
package regular

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Open opens the file at path for reading if it is a regular file.
func Open(path string) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, kind(st.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kind names what a file that is not a regular one is.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// MaxSize bounds a file ReadFile reads (a configuration, a password, a
// state file): posed reads no more, so that a path such as /dev/zero is
// an error, not a hang.
const MaxSize = 1 << 20

// ReadFile reads the file at path, refusing one larger than MaxSize and
// anything but a regular file.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxSize)
	}
	return data, nil
}

// WriteFile replaces the file at path with data (mode 0640) through
// a temporary file renamed over it, so that a crash of posed leaves the
// old content or the new, never a part (no fsync: the attention events'
// file is written from the frame loop, where a flash card's sync could
// stall a frame): the small files posed keeps in its
// state directory. The temporary file gets a name of its own, created
// anew (never a file or link already there), so that nothing planted in
// the directory is written through.
func WriteFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o640)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp) // a full disk leaves no temporary file behind
		return err
	}
	return nil
}
