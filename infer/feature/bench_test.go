package feature

import (
	"fmt"
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

// BenchmarkCrop: the 64×64 patch of a face box of side 60 (enlarged, one
// sample per pixel), 107 (2×2 samples) and 200 pixels (4×4 samples).
func BenchmarkCrop(b *testing.B) {
	img := randomGray(rand.New(rand.NewPCG(1, 1)), 640, 480)
	dst := make([]uint8, PatchSize*PatchSize)
	for _, side := range []float64{60, 107, 200} {
		b.Run(fmt.Sprintf("side-%.0f", side), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Crop(dst, PatchSize, img, Box{X: 200, Y: 150, W: side, H: side})
			}
		})
	}
}
