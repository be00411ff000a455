package dataset

import (
	"errors"
	"image"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/edgepose/posed/infer/feature"
)

// A studio's plain wall teaches a detector or a pose model little about
// the clutter behind a head turned away in the wild: a window on a
// profile is a third background. Backdrops put faces photographed against
// a wall (Pointing'04's) in front of face-free pictures instead: a matte
// separates the person from the wall (Matte), and a copy of the image
// takes a seeded crop of a picture wherever the wall was (Composite).

// Matte is the share of each pixel of img that is the person in front of
// a plain wall, row by row (1 on the person, 0 on the wall, between at
// the edge). The wall is what a flood from the top row and the upper
// sides reaches through pixels near the wall's colour (the median of
// those borders) without crossing an edge: a step of more than step in
// RGB between neighbours (0–255 each), or a colour more than far from
// the wall's. It errs when the borders are not a wall (their colours
// spread) or the flood takes nearly all of the image or almost none.
// step is 8 and far 50 here, chosen by eye on Pointing'04's turned heads
// (the flood crosses no face's edge there but those of faces lit as
// bright and grey as the wall, which MatteHolds turns away).
func Matte(img image.Image) ([]float32, error) {
	const chromaWeight, step, far = 3, 8, 50
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w < 8 || h < 8 {
		return nil, errors.New("dataset: matte: image smaller than 8×8")
	}
	// RGB in 0–255 (as encoded), each channel smoothed 3×3 against the
	// JPEG's noise.
	var ch [3][]float64
	for c := range ch {
		ch[c] = make([]float64, w*h)
	}
	for i := range w * h {
		r, g, bl, _ := img.At(b.Min.X+i%w, b.Min.Y+i/w).RGBA()
		ch[0][i], ch[1][i], ch[2][i] = float64(r)/257, float64(g)/257, float64(bl)/257
	}
	for c := range ch {
		ch[c] = box3(w, h, ch[c])
	}
	rgb := make([][3]float64, w*h)
	for i := range rgb {
		rgb[i] = [3]float64{ch[0][i], ch[1][i], ch[2][i]}
	}
	var seeds []int
	for x := range w {
		seeds = append(seeds, x)
	}
	for y := 1; y < h*3/5; y++ {
		seeds = append(seeds, y*w, y*w+w-1)
	}
	var wall [3]float64
	for c := range 3 {
		v := make([]float64, len(seeds))
		for i, s := range seeds {
			v[i] = rgb[s][c]
		}
		slices.Sort(v)
		wall[c] = v[len(v)/2]
	}
	// Distances weigh colour (chroma) chromaWeight times brightness: a lit
	// face can be as bright as the wall, but a wall is grey and skin is not.
	dist := func(p, q [3]float64) float64 {
		dl := (p[0] + p[1] + p[2] - q[0] - q[1] - q[2]) / 3
		drg := (p[0] - p[1]) - (q[0] - q[1])
		dgb := (p[1] - p[2]) - (q[1] - q[2])
		return math.Sqrt(dl*dl + chromaWeight*chromaWeight*(drg*drg+dgb*dgb)/2)
	}
	isWall := make([]bool, w*h)
	var stack []int
	for _, s := range seeds {
		if !isWall[s] && dist(rgb[s], wall) <= far {
			isWall[s] = true
			stack = append(stack, s)
		}
	}
	if len(stack) < len(seeds)/2 {
		return nil, errors.New("dataset: matte: the image's borders are not a plain wall")
	}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		x, y := p%w, p/w
		for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			xx, yy := x+d[0], y+d[1]
			if xx < 0 || yy < 0 || xx >= w || yy >= h {
				continue
			}
			q := yy*w + xx
			if isWall[q] || dist(rgb[q], rgb[p]) > step || dist(rgb[q], wall) > far {
				continue
			}
			isWall[q] = true
			stack = append(stack, q)
		}
	}
	walls := 0
	for _, v := range isWall {
		if v {
			walls++
		}
	}
	if walls < w*h/20 || walls > w*h*19/20 {
		return nil, errors.New("dataset: matte: no person stands out from the wall")
	}
	// A soft edge: the share of wall-free pixels in each 3×3.
	fg := make([]float64, w*h)
	for i, wall := range isWall {
		if !wall {
			fg[i] = 1
		}
	}
	alpha := make([]float32, w*h)
	for i, v := range box3(w, h, fg) {
		alpha[i] = float32(v)
	}
	return alpha, nil
}

// box3 is the mean of v over each pixel's 3×3 neighbourhood in a w×h
// image (the part of it inside the image at the borders).
func box3(w, h int, v []float64) []float64 {
	out := make([]float64, w*h)
	for y := range h {
		for x := range w {
			var sum, n float64
			for yy := max(y-1, 0); yy <= min(y+1, h-1); yy++ {
				for xx := max(x-1, 0); xx <= min(x+1, w-1); xx++ {
					sum += v[yy*w+xx]
					n++
				}
			}
			out[y*w+x] = sum / n
		}
	}
	return out
}

// Composite returns im with a crop of pic wherever alpha (Matte) says the
// wall was: a crop of a seeded size (the image's larger side to all of
// the picture's shorter one) at a seeded place, scaled to im's size
// (nearest pixel), blended by alpha.
func Composite(im *image.Gray, alpha []float32, pic *image.Gray, rng *rand.Rand) *image.Gray {
	iw, ih := im.Rect.Dx(), im.Rect.Dy()
	pw, ph := pic.Rect.Dx(), pic.Rect.Dy()
	out := image.NewGray(image.Rect(0, 0, iw, ih))
	short := min(pw, ph)
	need := max(iw, ih)
	side := short
	if short > need {
		side = need + rng.IntN(short-need+1)
	}
	// The crop keeps im's shape: side covers im's larger side.
	cw, ch := side*iw/need, side*ih/need
	x0, y0 := rng.IntN(pw-cw+1), rng.IntN(ph-ch+1)
	for y := range ih {
		py := y0 + y*ch/ih
		for x := range iw {
			px := x0 + x*cw/iw
			a := alpha[y*iw+x]
			v := a*float32(im.Pix[y*im.Stride+x]) + (1-a)*float32(pic.Pix[py*pic.Stride+px])
			out.Pix[y*out.Stride+x] = uint8(v + 0.5)
		}
	}
	return out
}

// MirrorMatte is a matte of an image w pixels wide flipped left to right.
func MirrorMatte(alpha []float32, w int) []float32 {
	out := make([]float32, len(alpha))
	for y := range len(alpha) / w {
		for x := range w {
			out[y*w+w-1-x] = alpha[y*w+x]
		}
	}
	return out
}

// MatteHolds reports whether a matte keeps the middle of a face box (its
// central third each way) for the person, 90 % or more of it: where the
// flood found a way into a face lit as bright and grey as the wall, the
// face keeps its wall rather than a picture through it. (The box's
// central half is too wide: on a profile it reaches past the nose.)
func MatteHolds(alpha []float32, w int, box feature.Box) bool {
	h := len(alpha) / w
	x0, x1 := max(int(box.X+box.W/3), 0), min(int(box.X+2*box.W/3), w)
	y0, y1 := max(int(box.Y+box.H/3), 0), min(int(box.Y+2*box.H/3), h)
	var sum float64
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			sum += float64(alpha[y*w+x])
			n++
		}
	}
	return n > 0 && sum >= 0.9*float64(n)
}

// Bilinear samples src at (x, y), pixel centres at half-integers, clamped
// to the border.
func Bilinear(src *image.Gray, x, y float64) uint8 {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	x, y = x-0.5, y-0.5
	x = math.Max(0, math.Min(float64(w-1), x))
	y = math.Max(0, math.Min(float64(h-1), y))
	x0, y0 := int(x), int(y)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	fx, fy := x-float64(x0), y-float64(y0)
	at := func(x, y int) float64 { return float64(src.Pix[y*src.Stride+x]) }
	v := (1-fy)*((1-fx)*at(x0, y0)+fx*at(x1, y0)) + fy*((1-fx)*at(x0, y1)+fx*at(x1, y1))
	return uint8(math.Round(v))
}
