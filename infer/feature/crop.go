package feature

import (
	"fmt"
	"image"
	"math"
	"sync"
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
// the patch side; maxTaps is the most source pixels one patch pixel draws on
// along an axis for which Crop's kept tables suffice (a box up to 18 patch
// sides: larger ones take theirs from the heap).
const (
	maxSub   = 4
	maxPatch = 128
	maxTaps  = 16
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
	// The mean of a patch pixel's s×s bilinear samples is separable and
	// linear in the source pixels: along each axis, patch index j draws
	// on k consecutive source pixels from a start x_j (tapCount), with
	// weights (taps) that sum to 1, so that
	//   dst[i][j] = Σ_a Σ_c Wy[i][a] · Wx[j][c] · src[y_i+a][x_j+c].
	// Each source row's horizontal sums H(row)[j] = Σ_c Wx[j][c]·row[x_j+c]
	// are made once (rows only move forward: a ring holds the ones a patch
	// row needs), then each patch row is Σ_a Wy[i][a]·H(y_i+a).
	kx, ky := tapCount(sx, nx, w), tapCount(sy, ny, h)
	c := cropPool.Get().(*cropScratch)
	defer cropPool.Put(c)
	wx, wy, ring, rows, id := c.wx[:], c.wy[:], c.ring[:], c.rows[:], c.id[:]
	if kx > maxTaps {
		wx = make([]float32, n*kx)
	}
	if ky > maxTaps {
		wy, ring, rows, id = make([]float32, n*ky), make([][maxPatch]float32, ky), make([][]float32, ky), make([]int, ky)
	}
	wx, wy, rows, id = wx[:n*kx], wy[:n*ky], rows[:ky], id[:ky]
	xs, ys := c.xs[:n], c.ys[:n]
	taps(xs, wx, bx, sx, nx, w, kx)
	taps(ys, wy, by, sy, ny, h, ky)
	// The ring holds ky consecutive rows, row y in slot y mod ky (id[slot]
	// says which): a patch row's ky rows are consecutive, so they never
	// share a slot.
	for r := range id {
		id[r] = -1
	}
	for i := 0; i < n; i++ {
		y0 := int(ys[i])
		for a := range rows {
			y := y0 + a
			slot := y % ky
			rows[a] = ring[slot][:n]
			if id[slot] != y {
				id[slot] = y
				hsums(rows[a], src.Pix[y*src.Stride:y*src.Stride+w], xs, wx, kx)
			}
		}
		vsums(dst[i*n:i*n+n], rows, wy[i*ky:i*ky+ky], c.acc[:n])
	}
}

// vsums fills out[j] = round(Σ_a wy[a] · rows[a][j]), a patch row from the
// horizontal sums of its source rows; acc is scratch of len(out).
func vsums(out []uint8, rows [][]float32, wy []float32, acc []float32) {
	switch len(rows) {
	case 2:
		r0, r1 := rows[0][:len(out)], rows[1][:len(out)]
		w0, w1 := wy[0], wy[1]
		for j := range out {
			out[j] = uint8(w0*r0[j] + w1*r1[j] + 0.5)
		}
	case 3:
		r0, r1, r2 := rows[0][:len(out)], rows[1][:len(out)], rows[2][:len(out)]
		w0, w1, w2 := wy[0], wy[1], wy[2]
		for j := range out {
			out[j] = uint8(w0*r0[j] + w1*r1[j] + w2*r2[j] + 0.5)
		}
	default:
		acc = acc[:len(out)]
		clear(acc)
		for a, r := range rows {
			wa, r := wy[a], r[:len(acc)]
			for j := range acc {
				acc[j] += wa * r[j]
			}
		}
		for j, v := range acc {
			out[j] = uint8(v + 0.5)
		}
	}
}

// cropScratch is Crop's tables and rows, kept between calls (cropPool) so
// that a crop neither allocates nor clears 20 KB of stack each time; every
// value Crop reads from it is written first.
type cropScratch struct {
	xs, ys [maxPatch]int32
	wx, wy [maxPatch * maxTaps]float32
	ring   [maxTaps][maxPatch]float32
	rows   [maxTaps][]float32
	id     [maxTaps]int
	acc    [maxPatch]float32
}

var cropPool = sync.Pool{New: func() any { return new(cropScratch) }}

// hsums fills t[j] = Σ_c wx[j·k+c] · row[xs[j]+c], the horizontal sums of
// one source row.
func hsums(t []float32, row []uint8, xs []int32, wx []float32, k int) {
	// The taps as arrays, not slices: row[x:][:k] costs a dozen
	// instructions (the new slice's pointer is masked in case it is
	// empty), more than the sum itself; the same sums in the same order.
	switch k {
	case 2:
		for j := range t {
			x := int(xs[j])
			p := (*[2]uint8)(row[x : x+2])
			q := (*[2]float32)(wx[2*j : 2*j+2])
			t[j] = q[0]*float32(p[0]) + q[1]*float32(p[1])
		}
	case 3:
		for j := range t {
			x := int(xs[j])
			p := (*[3]uint8)(row[x : x+3])
			q := (*[3]float32)(wx[3*j : 3*j+3])
			t[j] = q[0]*float32(p[0]) + q[1]*float32(p[1]) + q[2]*float32(p[2])
		}
	case 4: // a box of 2–3 patch sides
		for j := range t {
			x := int(xs[j])
			p := (*[4]uint8)(row[x : x+4])
			q := (*[4]float32)(wx[4*j : 4*j+4])
			t[j] = q[0]*float32(p[0]) + q[1]*float32(p[1]) + q[2]*float32(p[2]) + q[3]*float32(p[3])
		}
	case 5: // 3–4 patch sides
		for j := range t {
			x := int(xs[j])
			p := (*[5]uint8)(row[x : x+5])
			q := (*[5]float32)(wx[5*j : 5*j+5])
			t[j] = q[0]*float32(p[0]) + q[1]*float32(p[1]) + q[2]*float32(p[2]) + q[3]*float32(p[3]) + q[4]*float32(p[4])
		}
	default:
		for j := range t {
			p := row[xs[j]:][:k]
			var s float32
			for c, v := range wx[k*j:][:k] {
				s += v * float32(p[c])
			}
			t[j] = s
		}
	}
}

// tapCount is the number of taps an axis needs: the s samples of a patch
// index span (s−1)/s·step pixels, each sample reaching one pixel on, so a
// span of d pixels takes ⌈d⌉ + 2 taps (at most s + 1 when step ≤ s), and
// no more than the image has.
func tapCount(step float64, s, size int) int {
	d := float64(s-1) / float64(s) * step
	return max(min(int(math.Ceil(d-1e-9))+2, size), 1)
}

// taps fills one axis's tap table of k taps per patch index: patch index
// j's sample c sits at continuous coordinate off + (j + (c+½)/s)·step, i.e.
// at pixel-centre coordinate f = that − ½, clamped to [0, size−1]; its
// bilinear weights 1 − (f − ⌊f⌋) and f − ⌊f⌋ on pixels ⌊f⌋ and ⌊f⌋ + 1
// (clamped), each over s, are added to the taps from start[j], which is
// moved back so that its k taps stay in the image.
func taps(start []int32, w []float32, off, step float64, s, size, k int) {
	clear(w)
	inv := 1 / float64(s)
	maxF := float64(size - 1)
	at := func(j, c int) float64 {
		f := off + (float64(j)+(float64(c)+0.5)/float64(s))*step - 0.5
		if f < 0 || f != f {
			return 0
		}
		return min(f, maxF)
	}
	for j := range start {
		x0 := min(int(at(j, 0)), size-k)
		start[j] = int32(x0)
		for c := 0; c < s; c++ {
			f := at(j, c)
			p := int(f)
			t := f - float64(p)
			w[j*k+p-x0] += float32((1 - t) * inv)
			w[j*k+min(p+1, size-1)-x0] += float32(t * inv)
		}
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
