//go:build !unix

package regular

import "os"

// open opens path (no FIFOs to fear here).
func open(path string) (*os.File, error) { return os.Open(path) }
