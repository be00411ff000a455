//go:build !unix

package device

import (
	"fmt"
	"os"
)

// mapFile reads the file where it cannot be mapped.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}

// openRegular opens path for reading, refusing what is not a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
		}
		return nil, err
	}
	return f, nil
}
