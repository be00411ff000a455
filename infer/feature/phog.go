// Package feature turns a face box in a grey frame into the feature vector
// the pose model reads: a 64×64 crop of the box, histogram equalisation and
// a pyramid of HOG descriptors (p-HOG, docs/method.md §1). The frame's grey
// conversion is internal/grey's.
//
// Every step writes into caller-owned or Extractor-owned buffers: in steady
// state, extracting a face's features allocates nothing.
package feature

import (
	"fmt"
	"image"
	"math"

	"github.com/edgepose/posed/infer/gllim"
)

// The p-HOG recipe of the paper (§Implementation; docs/method.md §1): a 64×64
// histogram-equalised patch, 8 unsigned orientation bins, blocks of 2×2
// cells moved one cell at a time, and three cell sizes, 32, 16 and 8 pixels:
// 1 + 9 + 49 blocks × 32 values = 1888.
const (
	PatchSize = 64
	Bins      = 8
	Dim       = (1 + 9 + 49) * 4 * Bins // 1888
	version   = 1
	// hysClip is the L2-Hys clipping threshold (Dalal & Triggs).
	hysClip = 0.2
	// hysEps² keeps a flat block's normalisation finite; gradients are in
	// grey levels/255, so a block of 4 cells of 8×8 pixels with unit
	// gradients has norm ≈ 100 and this is negligible beside any texture.
	hysEps2 = 1e-6
)

// cellSizes are the HOG levels, coarse to fine; the descriptor is their
// blocks in this order.
var cellSizes = [3]int{32, 16, 8}

// Recipe describes this extractor for a model file.
func Recipe() gllim.FeatureRecipe {
	return gllim.FeatureRecipe{
		Name: "phog", Version: version, Patch: PatchSize, Cells: cellSizes[:],
		Block: 2, Bins: Bins, Equalize: true, Norm: "L2-Hys",
	}
}

// CheckRecipe returns an error unless r is the recipe this package computes.
func CheckRecipe(r gllim.FeatureRecipe) error {
	want := Recipe()
	same := r.Name == want.Name && r.Version == want.Version && r.Patch == want.Patch &&
		r.Block == want.Block && r.Bins == want.Bins && r.Equalize == want.Equalize && r.Norm == want.Norm &&
		len(r.Cells) == len(want.Cells)
	for i := 0; same && i < len(r.Cells); i++ {
		same = r.Cells[i] == want.Cells[i]
	}
	if !same {
		return fmt.Errorf("feature: model was trained on features %+v, this build computes %+v", r, want)
	}
	return nil
}

// Extractor computes p-HOG descriptors. It owns its scratch buffers: use
// one per goroutine.
type Extractor struct {
	patch [PatchSize * PatchSize]uint8
	cells [8 * 8 * Bins]float32 // histograms of the 8-pixel cells
	c16   [4 * 4 * Bins]float32
	c32   [2 * 2 * Bins]float32
}

// Patch returns the last patch cropped by Extract (equalised).
func (e *Extractor) Patch() []uint8 { return e.patch[:] }

// Extract crops box from img to 64×64, equalises it and writes its p-HOG
// descriptor into dst (len Dim).
func (e *Extractor) Extract(dst []float32, img *image.Gray, box Box) {
	Crop(e.patch[:], PatchSize, img, box)
	Equalize(e.patch[:])
	e.Describe(dst, e.patch[:])
}

// Describe writes the p-HOG descriptor of the 64×64 patch p into dst.
//
// Choices, after Dalal & Triggs:
//   - gradients by the centred difference [−1 0 1] on grey levels/255, with
//     the border pixel replicated outside the patch;
//   - unsigned orientation θ = atan2(g_y, g_x) mod π, 8 bins of π/8 centred at
//     (b + ½)π/8; each pixel votes its magnitude into the two nearest bins,
//     linearly by angular distance (wrapping at π);
//   - hard assignment of pixels to cells; the 16- and 32-pixel cells are
//     sums of 8-pixel cells, as all levels share the 64×64 gradient image;
//   - per block of 2×2 cells (32 values), L2-Hys: v/√(‖v‖²+ε²), clip at 0.2,
//     renormalise.
func (e *Extractor) Describe(dst []float32, p []uint8) {
	if len(dst) != Dim || len(p) != PatchSize*PatchSize {
		panic(fmt.Sprintf("feature: Describe: %d-value descriptor for a %d-pixel patch, want %d and %d", len(dst), len(p), Dim, PatchSize*PatchSize))
	}
	const n = PatchSize
	h := e.cells[:]
	for i := range h {
		h[i] = 0
	}
	const scale = 1.0 / 255
	var gxs, gys [n]float32
	for y := 0; y < n; y++ {
		up, down := max(y-1, 0)*n, min(y+1, n-1)*n
		row := p[y*n : y*n+n]
		cellRow := (y / 8) * 8 * Bins
		// The row's differences first, the border's apart: a clamped
		// index per pixel cost more than the difference.
		gxs[0] = float32(int(row[1])-int(row[0])) * scale
		for x := 1; x < n-1; x++ {
			gxs[x] = float32(int(row[x+1])-int(row[x-1])) * scale
		}
		gxs[n-1] = float32(int(row[n-1])-int(row[n-2])) * scale
		u, d := p[up:up+n], p[down:down+n]
		for x := range gys {
			gys[x] = float32(int(d[x])-int(u[x])) * scale
		}
		for x := 0; x < n; x++ {
			gx, gy := gxs[x], gys[x]
			if gx == 0 && gy == 0 {
				continue
			}
			m := float32(math.Sqrt(float64(gx*gx + gy*gy)))
			// Unsigned orientation in bin units: f ∈ [0, 8).
			f := orientation(gx, gy) - 0.5
			if f < 0 {
				f += Bins
			}
			b0 := int(f)
			w1 := f - float32(b0)
			b1 := b0 + 1
			if b1 == Bins {
				b1 = 0
			}
			c := cellRow + (x/8)*Bins
			h[c+b0] += m * (1 - w1)
			h[c+b1] += m * w1
		}
	}
	// Coarser cells as sums of finer ones.
	for i := range e.c16 {
		e.c16[i] = 0
	}
	for i := range e.c32 {
		e.c32[i] = 0
	}
	for cy := 0; cy < 8; cy++ {
		for cx := 0; cx < 8; cx++ {
			src := h[(cy*8+cx)*Bins : (cy*8+cx+1)*Bins]
			d16 := e.c16[((cy/2)*4+cx/2)*Bins:]
			d32 := e.c32[((cy/4)*2+cx/4)*Bins:]
			for b, v := range src {
				d16[b] += v
				d32[b] += v
			}
		}
	}
	off := 0
	off = blocks(dst, off, e.c32[:], 2)
	off = blocks(dst, off, e.c16[:], 4)
	blocks(dst, off, h, 8)
}

// blocks writes the L2-Hys-normalised 2×2-cell blocks of a c×c grid of cell
// histograms into dst from off, row by row, and returns the next offset.
func blocks(dst []float32, off int, cells []float32, c int) int {
	for by := 0; by < c-1; by++ {
		for bx := 0; bx < c-1; bx++ {
			v := dst[off : off+4*Bins]
			copy(v[0:], cells[(by*c+bx)*Bins:(by*c+bx+1)*Bins])
			copy(v[Bins:], cells[(by*c+bx+1)*Bins:(by*c+bx+2)*Bins])
			copy(v[2*Bins:], cells[((by+1)*c+bx)*Bins:((by+1)*c+bx+1)*Bins])
			copy(v[3*Bins:], cells[((by+1)*c+bx+1)*Bins:((by+1)*c+bx+2)*Bins])
			l2hys(v)
			off += 4 * Bins
		}
	}
	return off
}

// l2hys normalises v in place: v/√(‖v‖²+ε²), clip at 0.2, renormalise.
func l2hys(v []float32) {
	s := float32(0)
	for _, x := range v {
		s += x * x
	}
	k := float32(1 / math.Sqrt(float64(s)+hysEps2))
	s = 0
	for i, x := range v {
		x *= k
		if x > hysClip {
			x = hysClip
		}
		v[i] = x
		s += x * x
	}
	k = float32(1 / math.Sqrt(float64(s)+hysEps2))
	for i := range v {
		v[i] *= k
	}
}

// orientation returns the unsigned gradient orientation atan2(gy, gx) mod π
// in bin units (π/8), in [0, 8), without calling math.Atan2: the vector is
// folded into the half-plane gy ≥ 0, then into the first octant, and
// atan(z) for z ∈ [0, 1] is a degree-11 odd minimax polynomial (error about
// 2e-6 rad as measured by the tests, far under the bin width of 0.39 rad).
func orientation(gx, gy float32) float32 {
	if gy < 0 || (gy == 0 && gx < 0) {
		gx, gy = -gx, -gy
	}
	// Now θ ∈ [0, π).
	ax := gx
	if ax < 0 {
		ax = -ax
	}
	var t float32
	if gy <= ax {
		t = atanUnit(gy / ax) // θ' = atan(gy/|gx|) ∈ [0, π/4]
	} else {
		t = math.Pi/2 - atanUnit(ax/gy)
	}
	if gx < 0 {
		t = math.Pi - t
	}
	f := t * (Bins / math.Pi)
	if f >= Bins {
		f -= Bins
	}
	return f
}

// atanUnit approximates atan(z) for z ∈ [0, 1].
func atanUnit(z float32) float32 {
	z2 := z * z
	return z * (0.99997726 + z2*(-0.33262347+z2*(0.19354346+z2*(-0.11643287+z2*(0.05265332+z2*(-0.01172120))))))
}
