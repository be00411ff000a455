//go:build !unix

package device

import "os"

// mapFile reads the file where it cannot be mapped.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}

// openRegular opens path for reading, refusing what is not a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	return regular(f, path, err)
}
