//go:build unix

package device

import (
	"fmt"
	"syscall"

	"github.com/edgepose/posed/internal/regular"
)

// mapFile maps a video file read-only: its frames are read from the page
// cache as they are replayed, and the kernel can drop those pages again,
// so a long recording costs no heap. release unmaps it. An empty file is
// returned as nil data.
func mapFile(path string) (data []byte, release func() error, err error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if size > maxMappedFile || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes, more than a replay maps (%d)", path, size, int64(maxMappedFile))
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mapping: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
