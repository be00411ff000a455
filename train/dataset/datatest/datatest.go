// Package datatest finds the labelled data sets for tests: a test whose
// data is missing is skipped on a developer's machine and fails under CI
// (CI=true), where the data sets must be present.
package datatest

import (
	"image"
	"image/draw"
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

// Frame640 is a Pointing'04 photograph (person 5, frontal; 384×288) in the
// middle of a grey 640×480 frame: the frame the benchmarks time.
func Frame640(tb testing.TB) *image.Gray {
	tb.Helper()
	img, err := dataset.LoadGray(File(tb, "pointing04", "Person05", "person05146+0+0.jpg"))
	if err != nil {
		tb.Fatal(err)
	}
	f := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range f.Pix {
		f.Pix[i] = 128
	}
	draw.Draw(f, image.Rect(128, 96, 512, 384), img, img.Rect.Min, draw.Src)
	return f
}
