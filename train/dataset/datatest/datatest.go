// Package datatest finds the labelled data sets for tests: a test whose
// data is missing is skipped on a developer's machine and fails under CI
// (CI=true), where the data sets must be present.
package datatest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/train/dataset"
)

// Missing ends the test because what it needs is not there: a failure
// under CI, a skip elsewhere.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true and "+format, args...)
	}
	tb.Skipf(format, args...)
}

// Root returns the data sets' folder (dataset.Root), ending the test with
// Missing where it does not exist.
func Root(tb testing.TB) string {
	tb.Helper()
	d := dataset.Root()
	if _, err := os.Stat(d); err != nil {
		Missing(tb, "no data set at %s (set POSED_DATA): %v", d, err)
	}
	return d
}

// File returns the path of a file under the data sets' folder, ending the
// test with Missing where it does not exist.
func File(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{dataset.Root()}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "data set file not available: %v", err)
	}
	return p
}
