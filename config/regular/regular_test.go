//go:build unix

package regular

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A regular file opens and reads whole, though it is opened without
// blocking.
func TestOpenRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "posed.json")
	if err := os.WriteFile(path, []byte(`{"broker":"tcp://localhost:1883"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || string(b) != `{"broker":"tcp://localhost:1883"}` {
		t.Errorf("read %q, %v", b, err)
	}
}

// What is not a regular file is refused at once with an error that names
// the path and what is there; a FIFO does not wait for a writer.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "zero.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := Open(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is not a regular file (a FIFO)") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a FIFO hangs")
	}
	for path, what := range map[string]string{dir: "a directory", "/dev/null": "a device"} {
		f, err := Open(path)
		if f != nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), path+" is not a regular file ("+what+")") {
			t.Errorf("%s: %v", path, err)
		}
	}
	// A socket cannot be opened at all (Linux: ENXIO); the error names it.
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if f, err := Open(sock); err == nil || !strings.Contains(err.Error(), sock) {
		f.Close()
		t.Errorf("a socket: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
}
