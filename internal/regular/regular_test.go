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

// A state file is replaced whole, and no temporary file is left behind.
func TestWriteStateFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "detect")
	for _, v := range []string{"ON\n", "OFF\n"} {
		if err := WriteFile(f, []byte(v)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(f); err != nil || string(b) != v {
			t.Fatalf("read back %q, %v; want %q", b, err, v)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("state directory holds %d files, want 1", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("writing into a missing folder succeeded")
	}
}

// WriteFile leaves no temporary file when it fails (here the rename:
// a folder holds the state file's name), and writes through nothing
// planted in the state directory: a link at the old temporary name to a
// file outside is left alone, and so is that file.
func TestStateFileNoLeftoverNoFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	if err := os.MkdirAll(filepath.Join(path, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("ON\n")); err == nil {
		t.Fatal("replacing a folder with a state file succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("state directory holds %d entries after a failed write, want the folder alone", len(entries))
	}

	outside := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(outside, []byte("root:x:0:0\n"), 0o644)
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink(outside, zero+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(zero, []byte(`{"yaw":1}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "root:x:0:0\n" {
		t.Errorf("the file outside the state directory was written: %q", b)
	}
	if b, _ := os.ReadFile(zero); string(b) != `{"yaw":1}` {
		t.Errorf("the state file holds %q", b)
	}
	if st, err := os.Stat(zero); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("the state file's mode: %v, %v", st, err)
	}
}

// ReadFile goes through Open (TestOpenRefuses covers FIFOs, devices and
// sockets): a folder in a file's place is refused, named.
func TestReadFileRefusesNotRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), dir+" is not a regular file (a directory)") {
		t.Errorf("reading a folder: %v", err)
	}
}
