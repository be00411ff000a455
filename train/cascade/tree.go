// Package cascade learns pico cascades (Markuš et al., "Object Detection
// with Pixel Intensity Comparisons Organized in Decision Trees",
// arXiv:1305.4537) in the format pigo reads (detect.Cascade): boosted
// regression trees of pixel comparisons, grouped into stages that each keep
// a target share of the faces while rejecting a target share of the
// windows without one, negatives mined from the windows the cascade still
// passes. Written from the paper's algorithm; deterministic for a seed
// whatever the number of cores.
package cascade

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/edgepose/posed/infer/detect"
)

// Image is a grey picture held for training (row stride W).
type Image struct {
	Pix  []uint8
	W, H int
}

// Window is a square window of an image: centre row R and column C, side
// S, in pixels. The cascade reads pixels within S/2 of the centre, so
// S/2 + 1 ≤ R ≤ H − S/2 − 1 (and alike for C).
type Window struct {
	Img     int32
	R, C, S int32
}

// fits reports whether w lies inside im as a scanned window does.
func (w Window) fits(im *Image) bool {
	h := int(w.S)/2 + 1
	return w.S >= 1 && int(w.R) >= h && int(w.R) <= im.H-h && int(w.C) >= h && int(w.C) <= im.W-h
}

// sample is a training window with its target, boosting weight and the
// cascade's running score on it.
type sample struct {
	w      Window
	y      float32 // +1 face, −1 not
	weight float64
	out    float32
	calib  bool // a calibration face: sets thresholds, grows no tree
}

// test is one node's comparison: pixel (r1, c1) ≤ pixel (r2, c2), offsets
// from the window's centre in units of S/256.
type test [4]int8

// bin is the comparison on a window (pico eq. 1, as detect.Cascade runs
// it): p_k = I[R + ⌊r_k·S/256⌋][C + ⌊c_k·S/256⌋], 1 when p_1 ≤ p_2.
func (t test) bin(im *Image, w Window) int {
	s := int(w.S)
	p1 := im.Pix[(int(w.R)+int(t[0])*s>>8)*im.W+int(w.C)+int(t[1])*s>>8]
	p2 := im.Pix[(int(w.R)+int(t[2])*s>>8)*im.W+int(w.C)+int(t[3])*s>>8]
	if p1 <= p2 {
		return 1
	}
	return 0
}

// tree is a regression tree of depth d: 2^d − 1 tests in heap order and
// 2^d leaf values.
type tree struct {
	tests  []test
	leaves []float32
}

// stats are a node's weighted sums: Σw, Σw·y, Σw·y².
type stats struct{ w, wy, wyy float64 }

func (a *stats) add(w, y float64) { a.w += w; a.wy += w * y; a.wyy += w * y * y }

// sse is the weighted squared error of predicting the node's weighted
// mean: Σw(y − ȳ)² = Σwy² − (Σwy)²/Σw.
func (a stats) sse() float64 {
	if a.w <= 0 {
		return 0
	}
	return a.wyy - a.wy*a.wy/a.w
}

// growTree fits a regression tree of depth d to the samples' targets with
// their weights (GentleBoost's weighted least squares): at each node, of
// nTests random comparisons the one whose split leaves the least weighted
// squared error is kept; a leaf holds the weighted mean of its targets.
// Random tests are drawn from rng in node order, and the nodes' candidate
// tests are scored on up to workers goroutines, so the tree does not
// depend on the number of cores. Only the samples ss[fit[i]] grow it (nil:
// all of them).
func growTree(imgs []Image, ss []sample, fit []int32, d, nTests int, rng *rand.Rand, workers int) tree {
	nodes := 1<<d - 1
	tr := tree{tests: make([]test, nodes), leaves: make([]float32, 1<<d)}
	idx := slices.Clone(fit)
	if fit == nil {
		idx = make([]int32, len(ss))
		for i := range idx {
			idx[i] = int32(i)
		}
	}
	// Node n (0-based, heap order) holds the samples idx[lo[n]:hi[n]].
	lo, hi := make([]int, 2*nodes+1), make([]int, 2*nodes+1)
	lo[0], hi[0] = 0, len(idx)
	cands := make([]test, nTests)
	errs := make([]float64, nTests)
	for n := range nodes {
		for k := range cands {
			for j := range cands[k] {
				cands[k][j] = int8(rng.IntN(255) - 127)
			}
		}
		part := idx[lo[n]:hi[n]]
		parallelFor(nTests, workers, func(k int) {
			var left, right stats
			for _, i := range part {
				s := &ss[i]
				if cands[k].bin(&imgs[s.w.Img], s.w) == 1 {
					right.add(s.weight, float64(s.y))
				} else {
					left.add(s.weight, float64(s.y))
				}
			}
			errs[k] = left.sse() + right.sse()
		})
		best := 0
		for k := range errs {
			if errs[k] < errs[best] {
				best = k
			}
		}
		t := cands[best]
		tr.tests[n] = t
		// Partition: the samples that go left (bin 0) first.
		j := 0
		for k, i := range part {
			if t.bin(&imgs[ss[i].w.Img], ss[i].w) == 0 {
				part[j], part[k] = part[k], part[j]
				j++
			}
		}
		lo[2*n+1], hi[2*n+1] = lo[n], lo[n]+j
		lo[2*n+2], hi[2*n+2] = lo[n]+j, hi[n]
	}
	for l := range tr.leaves {
		var a stats
		for _, i := range idx[lo[nodes+l]:hi[nodes+l]] {
			a.add(ss[i].weight, float64(ss[i].y))
		}
		if a.w > 0 {
			tr.leaves[l] = float32(a.wy / a.w)
		}
	}
	return tr
}

// eval returns the leaf value the tree gives w.
func (tr *tree) eval(im *Image, w Window) float32 {
	idx := 1
	for idx <= len(tr.tests) {
		idx = 2*idx + tr.tests[idx-1].bin(im, w)
	}
	return tr.leaves[idx-len(tr.leaves)]
}

// appendTo adds the tree to c with the given threshold.
func (tr *tree) appendTo(c *detect.Cascade, threshold float32) {
	for _, t := range tr.tests {
		c.Codes = append(c.Codes, t[:]...)
	}
	c.Leaves = append(c.Leaves, tr.leaves...)
	c.Thresholds = append(c.Thresholds, threshold)
}

// parallelFor calls f(0) … f(n−1) on up to workers goroutines.
func parallelFor(n, workers int, f func(i int)) {
	if workers <= 1 || n < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next int64
	var mu sync.Mutex
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := int(next)
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// defaultWorkers is the number of cores.
func defaultWorkers() int { return runtime.GOMAXPROCS(0) }

// noThreshold is the threshold of a tree inside a stage: never reached
// (pico writes −1337).
const noThreshold = float32(-math.MaxFloat32)
