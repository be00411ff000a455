package feature

import (
	"fmt"
	"image"
	"math"
)

// Box is a face box in pixel coordinates: top-left corner (X, Y), width W
// and height H. Coordinates are continuous: pixel (i, j) covers
// [i, i+1) × [j, j+1), so its centre is at (i+0.5, j+0.5).
type Box struct{ X, Y, W, H float64 }

// Centre returns the centre of b.
func (b Box) Centre() (float64, float64) { return b.X + b.W/2, b.Y + b.H/2 }

// Square returns the square box with b's centre and side √(W·H).
func (b Box) Square() Box {
	cx, cy := b.Centre()
	s := math.Sqrt(b.W * b.H)
	return Box{cx - s/2, cy - s/2, s, s}
}

// SquareAt returns the square box of side s centred at (cx, cy).
func SquareAt(cx, cy, s float64) Box { return Box{cx - s/2, cy - s/2, s, s} }

// IoU is the intersection over union of two boxes.
func IoU(a, b Box) float64 {
	in := intersection(a, b)
	if in == 0 {
		return 0
	}
	return in / (a.W*a.H + b.W*b.H - in)
}

// Finds reports whether a detected (or published) box finds the labelled
// face label, by the rule of face-detection benchmarks on single labelled
// faces: its centre within half the label's side of the label's centre,
// its side 0.5–2.5 times the label's (sides as √(w·h)).
func Finds(det, label Box) bool {
	lx, ly := label.Centre()
	dx, dy := det.Centre()
	side := math.Sqrt(label.W * label.H)
	r := math.Sqrt(det.W*det.H) / side
	return math.Abs(dx-lx) <= side/2 && math.Abs(dy-ly) <= side/2 && r >= 0.5 && r <= 2.5
}

// Inside is the share of a's area that lies inside b (0 for an empty a).
func Inside(a, b Box) float64 {
	in := intersection(a, b)
	if in == 0 || !(a.W > 0 && a.H > 0) {
		return 0
	}
	return in / (a.W * a.H)
}

// intersection is the area two boxes share.
func intersection(a, b Box) float64 {
	w := math.Min(a.X+a.W, b.X+b.W) - math.Max(a.X, b.X)
	h := math.Min(a.Y+a.H, b.Y+b.H) - math.Max(a.Y, b.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// Valid reports whether b has a finite position and a positive finite size.
func (b Box) Valid() bool {
	for _, v := range []float64{b.X, b.Y, b.W, b.H} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b.W > 0 && b.H > 0
}

// Overlaps reports whether b covers any part of the rectangle r.
func (b Box) Overlaps(r image.Rectangle) bool {
	return b.X < float64(r.Max.X) && b.X+b.W > float64(r.Min.X) && b.Y < float64(r.Max.Y) && b.Y+b.H > float64(r.Min.Y)
}

func (b Box) String() string { return fmt.Sprintf("(%.1f,%.1f %.1f×%.1f)", b.X, b.Y, b.W, b.H) }

// maxSub caps the supersampling per axis when a box is shrunk; maxPatch caps
// the patch side so the sample tables fit on the stack.
const (
	maxSub   = 4
	maxPatch = 128
)

// Crop samples the region box of src into the n×n patch dst (row-major,
// len(dst) = n·n, n ≤ 128). Each patch pixel is the mean of s×s bilinear
// samples spread evenly over the source area it covers, with s = ⌈box side /
// n⌉ (at most 4): plain bilinear interpolation when enlarging, an area
// average when shrinking, so that large boxes do not alias. Samples outside
// src take the nearest edge pixel (border replication). The box may be
// sub-pixel and partly or wholly outside the image.
func Crop(dst []uint8, n int, src *image.Gray, box Box) {
	if len(dst) != n*n || n > maxPatch {
		panic(fmt.Sprintf("feature: Crop: patch buffer holds %d pixels, want %d×%d (n ≤ %d)", len(dst), n, n, maxPatch))
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	if w == 0 || h == 0 {
		panic("feature: Crop: empty image")
	}
	// Box coordinates are the image's; Pix[0] is at Rect.Min.
	bx, by := box.X-float64(src.Rect.Min.X), box.Y-float64(src.Rect.Min.Y)
	sx, sy := box.W/float64(n), box.H/float64(n) // source pixels per patch pixel
	nx := min(max(int(math.Ceil(sx-1e-9)), 1), maxSub)
	ny := min(max(int(math.Ceil(sy-1e-9)), 1), maxSub)
	// Sample tables: for sample k along an axis, the first source pixel, the
	// next one (clamped) and the interpolation weight of the next.
	var x0, x1, y0, y1 [maxPatch * maxSub]int32
	var tx, ty [maxPatch * maxSub]float32
	table(x0[:n*nx], x1[:n*nx], tx[:n*nx], bx, sx, nx, w)
	table(y0[:n*ny], y1[:n*ny], ty[:n*ny], by, sy, ny, h)
	inv := 1 / float32(nx*ny)
	// Separably: the sum over a patch pixel's s×s samples of the bilinear
	// values is, by linearity, Σ_a [(1 − wy_a)·T(y0_a) + wy_a·T(y1_a)],
	// where T(row)[j] sums the horizontal interpolations of that source
	// row at pixel j's nx column samples. Each source row's T is computed
	// once (consecutive samples share rows; a three-row cache suffices, as
	// the rows only move forward), which makes the work per source row and
	// patch column instead of per sample: 2–4× less for shrunk boxes.
	var cache rowCache
	cache.init()
	var acc [maxPatch]float32
	for i := 0; i < n; i++ {
		sum := acc[:n]
		clear(sum)
		for a := i * ny; a < (i+1)*ny; a++ {
			t0 := cache.row(src, int(y0[a]), x0[:n*nx], x1[:n*nx], tx[:n*nx], n, nx, w)
			t1 := cache.row(src, int(y1[a]), x0[:n*nx], x1[:n*nx], tx[:n*nx], n, nx, w)
			wy := ty[a]
			for j := range sum {
				sum[j] += t0[j] + wy*(t1[j]-t0[j])
			}
		}
		out := dst[i*n : i*n+n]
		for j, v := range sum {
			out[j] = uint8(v*inv + 0.5)
		}
	}
}

// rowCache keeps the horizontal sums T(row) of the last three source rows.
type rowCache struct {
	id   [3]int
	t    [3][maxPatch]float32
	next int
}

func (c *rowCache) init() { c.id = [3]int{-1, -1, -1} }

// row returns T(y): for each patch column j, the sum over its nx column
// samples of the interpolation of source row y between x0 and x1 by tx.
func (c *rowCache) row(src *image.Gray, y int, x0, x1 []int32, tx []float32, n, nx, w int) []float32 {
	for k, id := range c.id {
		if id == y {
			return c.t[k][:n]
		}
	}
	k := c.next
	c.next = (c.next + 1) % len(c.id)
	c.id[k] = y
	r := src.Pix[y*src.Stride : y*src.Stride+w]
	t := c.t[k][:n]
	clear(t)
	// Sample q of every column in turn: the sums of different columns are
	// independent, so they do not wait on each other (each column still
	// adds its samples in order).
	for q := 0; q < nx; q++ {
		for j := range t {
			cc := j*nx + q
			p0, p1 := float32(r[x0[cc]]), float32(r[x1[cc]])
			t[j] += p0 + tx[cc]*(p1-p0)
		}
	}
	return t
}

// table fills the sample positions along one axis: patch pixel j's sample c
// sits at continuous coordinate off + (j + (c+½)/s)·step, i.e. at
// pixel-centre coordinate f = that − ½, clamped to [0, size−1].
func table(i0, i1 []int32, t []float32, off, step float64, s, size int) {
	maxF := float64(size - 1)
	for k := range i0 {
		j, c := k/s, k%s
		f := off + (float64(j)+(float64(c)+0.5)/float64(s))*step - 0.5
		f = math.Min(math.Max(f, 0), maxF)
		p := int(f)
		i0[k] = int32(p)
		i1[k] = int32(min(p+1, size-1))
		t[k] = float32(f - float64(p))
	}
}

// Equalize applies histogram equalisation to the grey pixels p in place:
// each level v maps to round(255·(cdf(v) − cdf_min)/(N − cdf_min)), where
// cdf_min is the count of the darkest level present. A flat patch is left
// as it is.
func Equalize(p []uint8) {
	var hist [256]int
	for _, v := range p {
		hist[v]++
	}
	var lut [256]uint8
	cdf, cdfMin := 0, 0
	for v := 0; v < 256; v++ {
		if cdfMin == 0 && hist[v] > 0 {
			cdfMin = hist[v]
		}
		cdf += hist[v]
		den := len(p) - cdfMin
		if den <= 0 {
			return
		}
		lut[v] = uint8((255*(cdf-cdfMin) + den/2) / den)
	}
	for i, v := range p {
		p[i] = lut[v]
	}
}
