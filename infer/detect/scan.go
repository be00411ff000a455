package detect

import (
	"math"
)

// Window is one window a cascade kept: centre row and column, side, and
// the score above the cascade's last threshold (pigo's Detection).
type Window struct {
	Row, Col, Scale int
	Q               float32
}

// scanner evaluates cascades over every window of a frame, breadth first:
// all windows of one scale go through tree 1, the survivors through tree
// 2, and so on. The windows of a tree are independent, so the processor
// overlaps their pixel loads (a window's walk down a tree is a chain of
// dependent loads, which depth first leaves the processor waiting on), and
// each tree's pixel offsets are computed once per scale instead of once
// per window and node. The windows and scores are the same as pigo's
// RunCascade, in the same order: the same integer pixel positions, the
// same float32 sums in the same order.
type scanner struct {
	windows int64 // windows looked at, all calls together
	evals   int64 // trees evaluated on a window, all calls together

	cand  []int32   // surviving windows: the pixel index of the centre
	score []float32 // their running sums
	offs  []int32   // one tree's pixel offsets from the centre: o1 then o2 (see offsets)
	idx   []int32   // each window's leaf (heap index) in the current tree

	// At the current side s, the offset from a window's centre of a
	// node's row code r and column code c (int8, indexed by r + 128):
	// rowOff = ⌊r·s/256⌋·stride, colOff = ⌊c·s/256⌋ (see setSide).
	rowOff, colOff [256]int32
}

// setSide fills the scanner's offset tables for windows of side s in a
// picture of row stride stride: a node's pixel offset is then two table
// loads and an add instead of three multiplies and two shifts, in every
// tree of every cascade at that side.
func (sc *scanner) setSide(s, stride int) {
	for i := range 256 {
		v := i - 128
		sc.rowOff[i] = int32((v * s >> 8) * stride)
		sc.colOff[i] = int32(v * s >> 8)
	}
}

// offsets computes, for a tree of depth d whose node n (heap order,
// 1 … 2^d − 1) compares pixels (r1, c1) and (r2, c2) (codes), the offset
// of each pixel from the window's centre at side s (see Cascade):
// o1[n − 1] = ⌊r1·s/256⌋·stride + ⌊c1·s/256⌋, o2 alike. Each table is
// padded by 8 entries, so that the vector walk may load 8 at any node.
// low is the lowest offset of both tables. The side and stride are those
// of the last setSide.
func (sc *scanner) offsets(codes []int8, d int) (o1, o2 []int32, low int32) {
	nodes := 1<<d - 1
	pad := nodes + 8
	if cap(sc.offs) < 2*pad {
		sc.offs = make([]int32, 2*pad)
	}
	o1, o2 = sc.offs[:pad], sc.offs[pad:2*pad]
	codes = codes[:4*nodes]
	low = math.MaxInt32
	ro, co := &sc.rowOff, &sc.colOff
	for n := range nodes {
		k := 4 * n
		a := ro[uint8(codes[k])^0x80] + co[uint8(codes[k+1])^0x80]
		b := ro[uint8(codes[k+2])^0x80] + co[uint8(codes[k+3])^0x80]
		o1[n], o2[n] = a, b
		low = min(low, a, b)
	}
	return o1[:nodes], o2[:nodes], low
}

// walk returns the heap index of the leaf each window reaches in the tree
// whose pixel offsets are o1, o2: with the vector walk where the CPU has
// one (depth 6, in groups of 8 windows), else walkFour. low is the lowest
// of the offsets.
func (sc *scanner) walk(cand, o1, o2 []int32, low int32, pix []byte, depth int) []int32 {
	if cap(sc.idx) < len(cand) {
		sc.idx = make([]int32, len(cand))
	}
	idx := sc.idx[:len(cand)]
	if !vectorWalk || depth != 6 || len(cand) < 8 {
		walkFour(idx, cand, o1, o2, pix, depth)
		return idx
	}
	// The vector walk reads 3 bytes before each pixel: the windows whose
	// lowest pixel is among the first 3 (the top row's first, if any; the
	// windows are in increasing order) walk in Go.
	i0 := 0
	for i0 < len(cand) && int(cand[i0])+int(low) < 3 {
		i0++
	}
	n8 := (len(cand) - i0) &^ 7
	walkGo(idx[:i0], cand[:i0], o1, o2, pix, depth)
	if n8 > 0 {
		walkVector(idx[i0:i0+n8], cand[i0:i0+n8], o1[:cap(o1)], o2[:cap(o2)], pix)
	}
	walkFour(idx[i0+n8:], cand[i0+n8:], o1, o2, pix, depth)
	return idx
}

// walkGo is the tree walk in Go, the vector walk's reference: for each
// window (the pixel index of its centre), from the root, go to
// 2n + [p1 ≤ p2] with node n's two pixels at the centre plus o1[n − 1]
// and o2[n − 1], depth times.
func walkGo(out, cand, o1, o2 []int32, pix []byte, depth int) {
	for i, base := range cand {
		n := int32(1)
		for range depth {
			n = 2*n + int32(b2i(pix[int(base+o1[n-1])] <= pix[int(base+o2[n-1])]))
		}
		out[i] = n
	}
}

// walkFour is walkGo four windows at a time, their walks interleaved
// level by level: each walk is a chain of dependent loads, and a processor
// that runs few instructions ahead (the in-order or narrow cores of
// Raspberry Pi class boards) would otherwise wait on every one.
func walkFour(out, cand, o1, o2 []int32, pix []byte, depth int) {
	i := 0
	for ; i+4 <= len(cand); i += 4 {
		b0, b1, b2, b3 := cand[i], cand[i+1], cand[i+2], cand[i+3]
		n0, n1, n2, n3 := int32(1), int32(1), int32(1), int32(1)
		for range depth {
			n0 = 2*n0 + int32(b2i(pix[int(b0+o1[n0-1])] <= pix[int(b0+o2[n0-1])]))
			n1 = 2*n1 + int32(b2i(pix[int(b1+o1[n1-1])] <= pix[int(b1+o2[n1-1])]))
			n2 = 2*n2 + int32(b2i(pix[int(b2+o1[n2-1])] <= pix[int(b2+o2[n2-1])]))
			n3 = 2*n3 + int32(b2i(pix[int(b3+o1[n3-1])] <= pix[int(b3+o2[n3-1])]))
		}
		out[i], out[i+1], out[i+2], out[i+3] = n0, n1, n2, n3
	}
	walkGo(out[i:], cand[i:], o1, o2, pix, depth)
}

// keepGo keeps, from window from on, the windows whose sum of leaves stays
// above the tree's threshold thr (pico eq. 2): score[i] += the leaf of
// idx[i] (its heap index, in [leaves, 2·leaves)), and the windows kept are
// packed in order from index kept on. It returns the new kept. Each window
// is written whether or not it survives and counted only if it does: no
// branch to mispredict.
func keepGo(cand []int32, score []float32, idx []int32, leaf []float32, thr float32, from, kept int) int {
	idx, score = idx[:len(cand)], score[:len(cand)]
	mask := int32(len(leaf) - 1)
	for i := from; i < len(cand); i++ {
		v := score[i] + leaf[idx[i]&mask]
		cand[kept], score[kept] = cand[i], v
		kept += b2i(v > thr)
	}
	return kept
}

// scanParams are pigo's CascadeParams without the pixels.
type scanParams struct {
	MinSize, MaxSize int
	Shift, Scale     float64
}

// scan appends to dst the windows of pix (rows × cols, row stride stride)
// that cascade c keeps, scale by scale, row by row, as pigo's RunCascade
// with the same parameters.
func (sc *scanner) scan(dst []Window, c *Cascade, pix []byte, stride, rows, cols int, p scanParams) []Window {
	for s := p.MinSize; s <= p.MaxSize; s = nextScale(s, p.Scale) {
		dst = sc.scanScale(dst, c, pix, stride, rows, cols, s, p.Shift)
	}
	return dst
}

// nextScale is pigo's step from one window side to the next: at least 2
// pixels, so that small sides do not repeat after the cast.
func nextScale(s int, factor float64) int {
	return int(float64(s) + math.Max(2, float64(s)*factor-float64(s)))
}

// scanScale appends the windows of side s that c keeps.
func (sc *scanner) scanScale(dst []Window, c *Cascade, pix []byte, stride, rows, cols, s int, shift float64) []Window {
	step := int(math.Max(shift*float64(s), 1))
	half := s/2 + 1
	sc.cand = sc.cand[:0]
	for r := half; r <= rows-half; r += step {
		for col := half; col <= cols-half; col += step {
			sc.cand = append(sc.cand, int32(r*stride+col))
		}
	}
	sc.windows += int64(len(sc.cand))
	if len(sc.cand) == 0 || c.Trees() == 0 {
		return dst
	}
	if cap(sc.score) < len(sc.cand) {
		sc.score = make([]float32, len(sc.cand))
	}
	score := sc.score[:len(sc.cand)]
	clear(score)
	nodes, leaves := c.nodes(), 1<<c.Depth
	sc.setSide(s, stride)
	cand := sc.cand
	for t := 0; t < c.Trees(); {
		if len(cand)*c.Depth <= nodes {
			// The few windows that reach the deep trees (faces, at a
			// few scales), trees a block at a time.
			cand, score = sc.keepFew(cand, score, c, t, pix)
			t = min(t+few, c.Trees())
		} else {
			// Many windows: each node's pixel offsets once for all.
			sc.evals += int64(len(cand))
			leaf := c.Leaves[t*leaves : (t+1)*leaves]
			thr := c.Thresholds[t]
			codes := c.Codes[t*4*nodes : (t+1)*4*nodes]
			o1, o2, low := sc.offsets(codes, c.Depth)
			idx := sc.walk(cand, o1, o2, low, pix, c.Depth)
			from, k := keepVector(cand, score, idx, leaf, thr)
			kept := keepGo(cand, score, idx, leaf, thr, from, k)
			cand, score = cand[:kept], score[:kept]
			t++
		}
		if len(cand) == 0 {
			return dst
		}
	}
	last := c.Thresholds[c.Trees()-1]
	for i, base := range cand {
		dst = append(dst, Window{Row: int(base) / stride, Col: int(base) % stride, Scale: s, Q: score[i] - last})
	}
	return dst
}

// few is how many trees keepFew walks at once.
const few = 4

// keepFew keeps the windows cand (running sums score) that stay above the
// thresholds of trees t … t+few−1 of c (fewer at the cascade's end), as
// the many-window path does tree by tree, and returns them packed in
// order. Each window walks the block's trees in lockstep (walkFew): a
// tree's walk is a chain of dependent loads, and the next tree's chain
// would otherwise wait for this one's verdict, which with one or two
// windows left is all the processor has to do. The sums are added and
// tested in tree order, so the survivors and their sums are the same; a
// window rejected by a block's first tree costs the block's other walks,
// which deep in a cascade (only faces left) is rare.
func (sc *scanner) keepFew(cand []int32, score []float32, c *Cascade, t int, pix []byte) ([]int32, []float32) {
	nodes, leaves := c.nodes(), 1<<c.Depth
	end := min(t+few, c.Trees())
	kept := 0
	for i, base := range cand {
		v := score[i]
		alive := true
		if end-t == few {
			n := sc.walkFew(c.Codes[t*4*nodes:end*4*nodes], nodes, c.Depth, base, pix)
			for j := range few {
				sc.evals++
				v += c.Leaves[(t+j)*leaves+n[j]-leaves]
				if !(v > c.Thresholds[t+j]) {
					alive = false
					break
				}
			}
		} else {
			for j := t; j < end; j++ {
				sc.evals++
				n := sc.walkOne(c.Codes[j*4*nodes:(j+1)*4*nodes], c.Depth, base, pix)
				v += c.Leaves[j*leaves+n-leaves]
				if !(v > c.Thresholds[j]) {
					alive = false
					break
				}
			}
		}
		cand[kept], score[kept] = base, v
		kept += b2i(alive)
	}
	return cand[:kept], score[:kept]
}

// walkOne returns the heap index of the leaf the window at base reaches in
// the tree of depth d whose node codes are codes (pico eq. 1): from node
// 1, depth times n = 2n + [p1 ≤ p2], the pixels at the offsets of node
// n's codes (setSide's tables).
func (sc *scanner) walkOne(codes []int8, d int, base int32, pix []byte) int {
	ro, co := &sc.rowOff, &sc.colOff
	n := 1
	for range d {
		k := 4 * (n - 1)
		p1 := pix[base+ro[uint8(codes[k])^0x80]+co[uint8(codes[k+1])^0x80]]
		p2 := pix[base+ro[uint8(codes[k+2])^0x80]+co[uint8(codes[k+3])^0x80]]
		n = 2*n + b2i(p1 <= p2)
	}
	return n
}

// walkFew is walkOne over the few consecutive trees whose codes are
// codes (nodes each), level by level, so that their chains of loads
// overlap.
func (sc *scanner) walkFew(codes []int8, nodes, d int, base int32, pix []byte) (n [few]int) {
	ro, co := &sc.rowOff, &sc.colOff
	c0 := codes[0 : 4*nodes]
	c1 := codes[4*nodes : 8*nodes]
	c2 := codes[8*nodes : 12*nodes]
	c3 := codes[12*nodes : 16*nodes]
	n0, n1, n2, n3 := 1, 1, 1, 1
	for range d {
		k0, k1, k2, k3 := 4*(n0-1), 4*(n1-1), 4*(n2-1), 4*(n3-1)
		a0 := pix[base+ro[uint8(c0[k0])^0x80]+co[uint8(c0[k0+1])^0x80]]
		b0 := pix[base+ro[uint8(c0[k0+2])^0x80]+co[uint8(c0[k0+3])^0x80]]
		a1 := pix[base+ro[uint8(c1[k1])^0x80]+co[uint8(c1[k1+1])^0x80]]
		b1 := pix[base+ro[uint8(c1[k1+2])^0x80]+co[uint8(c1[k1+3])^0x80]]
		a2 := pix[base+ro[uint8(c2[k2])^0x80]+co[uint8(c2[k2+1])^0x80]]
		b2 := pix[base+ro[uint8(c2[k2+2])^0x80]+co[uint8(c2[k2+3])^0x80]]
		a3 := pix[base+ro[uint8(c3[k3])^0x80]+co[uint8(c3[k3+1])^0x80]]
		b3 := pix[base+ro[uint8(c3[k3+2])^0x80]+co[uint8(c3[k3+3])^0x80]]
		n0, n1, n2, n3 = 2*n0+b2i(a0 <= b0), 2*n1+b2i(a1 <= b1), 2*n2+b2i(a2 <= b2), 2*n3+b2i(a3 <= b3)
	}
	return [few]int{n0, n1, n2, n3}
}

// Scanner runs a cascade over every window of a picture, as pigo's
// RunCascade does but faster (see scanner); a trainer mines negatives with
// it. Its buffers are reused between calls: one Scanner per goroutine.
type Scanner struct{ sc scanner }

// ScanParams are the window sizes and steps of a scan (pigo's
// CascadeParams without the pixels).
type ScanParams = scanParams

// Scan appends to dst the windows of the rows × cols picture pix (row
// stride stride) that c keeps, and returns it.
func (s *Scanner) Scan(dst []Window, c *Cascade, pix []byte, stride, rows, cols int, p ScanParams) []Window {
	return s.sc.scan(dst, c, pix, stride, rows, cols, p)
}

// Windows returns how many windows the scanner has looked at.
func (s *Scanner) Windows() int64 { return s.sc.windows }

// TreeEvals returns how many trees the scanner has evaluated, on all the
// windows together: divided by Windows, a cascade's cost per window.
func (s *Scanner) TreeEvals() int64 { return s.sc.evals }
