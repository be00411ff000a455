//go:build unix

package regular

import (
	"os"
	"syscall"
)

// open opens path without blocking (a FIFO does not wait for a writer).
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
