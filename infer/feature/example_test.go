package feature_test

import (
	"fmt"
	"image"
	"math"

	"github.com/edgepose/posed/infer/feature"
)

// The p-HOG descriptor of a face box: the box is cropped to 64×64 pixels,
// equalised, and described by histograms of oriented gradients over three
// cell sizes (docs/method.md §1). Here the "face" is a bright disc on a dark
// frame; every block of the descriptor is L2-Hys normalised (norm ≤ 1).
func ExampleExtractor() {
	img := image.NewGray(image.Rect(0, 0, 320, 240))
	for y := range 240 {
		for x := range 320 {
			if dx, dy := float64(x-160), float64(y-120); dx*dx+dy*dy < 40*40 {
				img.Pix[y*img.Stride+x] = 220
			} else {
				img.Pix[y*img.Stride+x] = 30
			}
		}
	}
	var ex feature.Extractor
	y := make([]float32, feature.Dim)
	ex.Extract(y, img, feature.Box{X: 110, Y: 70, W: 100, H: 100})
	worst := 0.0
	for b := 0; b < len(y); b += 32 { // blocks of 2×2 cells × 8 orientations
		n := 0.0
		for _, v := range y[b : b+32] {
			n += float64(v) * float64(v)
		}
		worst = math.Max(worst, math.Sqrt(n))
	}
	fmt.Printf("%d values in %d blocks, largest block norm ≤ 1: %v\n", len(y), len(y)/32, worst <= 1+1e-6)
	// Output: 1888 values in 59 blocks, largest block norm ≤ 1: true
}

// A mirrored face's descriptor is a permutation of the face's: training
// adds mirrored faces without cropping them again.
func ExampleMirrorPermutation() {
	img := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = uint8(i % 64 * 3) // brighter to the right
	}
	mirrored := image.NewGray(img.Rect)
	for y := range 64 {
		for x := range 64 {
			mirrored.Pix[y*64+x] = img.Pix[y*64+63-x]
		}
	}
	var ex feature.Extractor
	a, b := make([]float32, feature.Dim), make([]float32, feature.Dim)
	box := feature.Box{X: 0, Y: 0, W: 64, H: 64}
	ex.Extract(a, img, box)
	ex.Extract(b, mirrored, box)
	worst := 0.0
	for i, j := range feature.MirrorPermutation() {
		worst = math.Max(worst, math.Abs(float64(b[i]-a[j])))
	}
	fmt.Printf("largest difference: %.3f\n", worst)
	// Output: largest difference: 0.000
}
