package yunet_test

import (
	"fmt"
	"image"
	"testing"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// BenchmarkDetect: the network on the benchmark frame (a face in a 640×480
// grey frame) at the sizes posed runs it — the whole frame, the frame at
// half and a quarter of its size (an acquisition scan), and a 96×96 crop
// around a candidate (a verification) — by the vector kernels and by the
// Go ones (ARM and purego builds), beside pigo's facefinder on the whole
// frame with the daemon's settings: the floor the issue measures a frame
// against, in the same run.
func BenchmarkDetect(b *testing.B) {
	g := datatest.Frame640(b)
	ref, err := datatest.Facefinder()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pigo-facefinder-640", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref.RunCascade(pigo.CascadeParams{MinSize: 60, MaxSize: 400, ShiftFactor: 0.1, ScaleFactor: 1.1,
				ImageParams: pigo.ImageParams{Pixels: g.Pix, Rows: 480, Cols: 640, Dim: g.Stride}}, 0)
		}
	})
	net := yunet.New(yunet.Default())
	for _, vec := range []bool{true, false} {
		kern := "go"
		if vec {
			if !yunet.UseVectorKernels(true) {
				continue // no vector kernels on this CPU or build
			}
			kern = "avx2"
		}
		for _, c := range []struct {
			name string
			r    image.Rectangle
			k    int
		}{
			{"640x480", g.Rect, 1},
			{"shrunk2-320x240", g.Rect, 2},
			{"shrunk4-160x120", g.Rect, 4},
			{"crop96", image.Rect(272, 192, 368, 288), 1},
			{"crop128", image.Rect(256, 176, 384, 304), 1}, // a landmark look's crop
		} {
			b.Run(fmt.Sprintf("%s-%s", c.name, kern), func(b *testing.B) {
				prev := yunet.UseVectorKernels(vec)
				defer yunet.UseVectorKernels(prev)
				var buf yunet.Buffers
				net.DetectShrunk(&buf, g, c.r, c.k, 0.5)
				b.ReportAllocs()
				for b.Loop() {
					net.DetectShrunk(&buf, g, c.r, c.k, 0.5)
				}
			})
		}
	}
}
