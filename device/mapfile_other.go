//go:build !unix

package device

import "os"

// mapFile reads the file where it cannot be mapped.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}
