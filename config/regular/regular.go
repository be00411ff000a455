// Package regular opens the files posed reads — its configuration, state,
// password, TLS and model files, replayed pictures — refusing what is not
// a regular file (a FIFO, a device, a socket, a directory) with an error
// that names it. A file is opened without blocking, then checked: a FIFO
// opened plainly waits for a writer, and posed with it (a state file or a
// model planted as a FIFO hung the start and every reload).
package regular

import (
	"fmt"
	"os"
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
