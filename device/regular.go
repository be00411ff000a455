package device

import (
	"fmt"
	"os"
)

// regular returns f, opened from path (with err), if it is a regular
// file; anything else (a FIFO, a device, a folder) is closed and refused
// with an error that says what it is.
func regular(f *os.File, path string, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
