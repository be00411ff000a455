package feature

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkExtract: crop of a 150-pixel box (shrunk with 3×3 supersampling)
// from a 640×480 frame, equalisation and p-HOG.
func BenchmarkExtract(b *testing.B) {
	img := randomGray(rand.New(rand.NewPCG(1, 1)), 640, 480)
	var e Extractor
	d := make([]float32, Dim)
	box := Box{X: 250.3, Y: 160.7, W: 150, H: 150}
	b.Run("crop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Crop(e.patch[:], PatchSize, img, box)
		}
	})
	b.Run("equalize", func(b *testing.B) {
		for b.Loop() {
			Equalize(e.patch[:])
		}
	})
	b.Run("phog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.Describe(d, e.patch[:])
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.Extract(d, img, box)
		}
	})
}
