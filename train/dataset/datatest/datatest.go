// Package datatest finds the labelled data sets for tests: a test whose
// data is missing is skipped on a developer's machine and fails under CI
// (CI=true), where the data sets must be present.
package datatest

import (
	"image"
	"image/draw"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/infer/feature"
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
	return inFrame640(frontal(tb))
}

// inFrame640 is a Pointing'04 photograph (384×288) in the middle of a
// grey 640×480 frame.
func inFrame640(img *image.Gray) *image.Gray {
	f := grey640()
	draw.Draw(f, image.Rect(128, 96, 512, 384), img, img.Rect.Min, draw.Src)
	return f
}

// Turn640 is Frame640's person turning the head: its photographs at pitch
// 0 and yaw −45 to 45° in 15° steps and back (12 frames, the first at
// −45°), each in the middle of a grey 640×480 frame.
func Turn640(tb testing.TB) []*image.Gray {
	tb.Helper()
	var frames []*image.Gray
	for _, n := range []string{"143+0-45", "144+0-30", "145+0-15", "146+0+0", "147+0+15", "148+0+30", "149+0+45"} {
		img, err := dataset.LoadGray(File(tb, "pointing04", "Person05", "person05"+n+".jpg"))
		if err != nil {
			tb.Fatal(err)
		}
		frames = append(frames, inFrame640(img))
	}
	// And back, each end once.
	for i := len(frames) - 2; i > 0; i-- {
		frames = append(frames, frames[i])
	}
	return frames
}

// frontal is the photograph of Frame640.
func frontal(tb testing.TB) *image.Gray {
	tb.Helper()
	img, err := dataset.LoadGray(File(tb, "pointing04", "Person05", "person05146+0+0.jpg"))
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// grey640 is a mid-grey 640×480 frame.
func grey640() *image.Gray {
	f := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range f.Pix {
		f.Pix[i] = 128
	}
	return f
}

// SmallFaces is a grey 640×480 frame with Frame640's face shrunk 4 times
// (to 28 px wide) at each of at, and the faces' label boxes: faces the
// face network's scan of the frame shrunk by 2 finds weakly (a confidence
// of 0.23, below its default 0.5).
func SmallFaces(tb testing.TB, at ...image.Point) (*image.Gray, []feature.Box) {
	tb.Helper()
	src, frame := frontal(tb), grey640()
	const k = 4
	var boxes []feature.Box
	for _, p := range at {
		for y := range src.Rect.Dy() / k {
			for x := range src.Rect.Dx() / k {
				sum := 0
				for dy := range k {
					for dx := range k {
						sum += int(src.Pix[(y*k+dy)*src.Stride+x*k+dx])
					}
				}
				frame.Pix[(p.Y+y)*640+p.X+x] = uint8(sum / (k * k))
			}
		}
		// The face's label (labels.csv): 73.5, 85.5, 113×101.
		boxes = append(boxes, feature.Box{X: float64(p.X) + 73.5/k, Y: float64(p.Y) + 85.5/k, W: 113.0 / k, H: 101.0 / k})
	}
	return frame, boxes
}

// Facefinder is pigo itself with its facefinder cascade, read from the
// file the detector embeds (infer/detect/cascade): the floor the frame
// benchmarks measure posed against. Unpacked once per test binary.
var Facefinder = sync.OnceValues(func() (*pigo.Pigo, error) {
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "infer", "detect", "cascade", "facefinder"))
	if err != nil {
		return nil, err
	}
	return pigo.NewPigo().Unpack(b)
})
