package grey

import (
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

const greyTolY = 2 // grey levels: YCbCr's Y plane against GrayModel of its RGB

func TestGreyFastPathsMatchGrayModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	r := image.Rect(3, 5, 40, 30)
	rgba := image.NewRGBA(r)
	nrgba := image.NewNRGBA(r)
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(rng.IntN(256))
		nrgba.Pix[i] = uint8(rng.IntN(256))
	}
	for i := 3; i < len(rgba.Pix); i += 4 {
		rgba.Pix[i], nrgba.Pix[i] = 255, 255
	}
	for _, src := range []image.Image{rgba, nrgba} {
		g := Grey(nil, src)
		if g.Rect != r {
			t.Fatalf("%T: bounds %v, want %v", src, g.Rect, r)
		}
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				want := color.GrayModel.Convert(src.At(x, y)).(color.Gray).Y
				if got := g.GrayAt(x, y).Y; got != want {
					t.Fatalf("%T at (%d,%d): %d, want %d", src, x, y, got, want)
				}
			}
		}
	}
	// YCbCr: a view of the Y plane, no copy.
	yc := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
	// Colours inside the RGB gamut (no channel clips when decoded).
	for i := range yc.Y {
		yc.Y[i] = uint8(40 + rng.IntN(176))
	}
	for i := range yc.Cb {
		yc.Cb[i], yc.Cr[i] = uint8(118+rng.IntN(20)), uint8(118+rng.IntN(20))
	}
	g := Grey(nil, yc)
	if &g.Pix[0] != &yc.Y[0] {
		t.Error("YCbCr was copied")
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			want := int(color.GrayModel.Convert(yc.At(x, y)).(color.Gray).Y)
			if d := int(g.GrayAt(x, y).Y) - want; d > greyTolY || d < -greyTolY {
				t.Fatalf("YCbCr at (%d,%d): Y %d, GrayModel %d", x, y, g.GrayAt(x, y).Y, want)
			}
		}
	}
	// Reuse of dst: no allocation once it is large enough.
	dst := image.NewGray(r)
	if a := testing.AllocsPerRun(10, func() { Grey(dst, rgba) }); a != 0 {
		t.Errorf("Grey into a large enough dst allocates %.0f times", a)
	}
}
