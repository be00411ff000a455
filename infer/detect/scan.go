package detect

import "math"

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

	cand  []int32   // surviving windows: the pixel index of the centre
	score []float32 // their running sums
	offs  []int32   // one tree's pixel offsets from the centre, two per node
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
	if cap(sc.offs) < 2*nodes {
		sc.offs = make([]int32, 2*nodes)
	}
	offs := sc.offs[:2*nodes]
	cand := sc.cand
	for t := range c.Trees() {
		leaf := c.Leaves[t*leaves : (t+1)*leaves]
		thr := c.Thresholds[t]
		codes := c.Codes[t*4*nodes : (t+1)*4*nodes]
		kept := 0
		if len(cand)*c.Depth > nodes {
			// Many windows: the offset of each node's two pixels from
			// the window's centre, p_k = I[r + ⌊r_k·s/256⌋][c + ⌊c_k·s/256⌋]
			// (see Cascade), once for all of them.
			for n := range nodes {
				k := 4 * n
				offs[2*n] = int32((int(codes[k])*s>>8)*stride + int(codes[k+1])*s>>8)
				offs[2*n+1] = int32((int(codes[k+2])*s>>8)*stride + int(codes[k+3])*s>>8)
			}
			for i, base := range cand {
				idx := 1
				for range c.Depth {
					o := offs[2*idx-2 : 2*idx]
					idx = 2*idx + b2i(pix[int(base+o[0])] <= pix[int(base+o[1])])
				}
				// The window survives while the sum of its leaves stays
				// above the tree's threshold. Written whether or not it
				// survives, counted only if it does: no branch to
				// mispredict.
				v := score[i] + leaf[idx-leaves]
				cand[kept], score[kept] = base, v
				kept += b2i(v > thr)
			}
		} else {
			// The few windows that reach the deep trees (faces, at a
			// few scales): offsets of the visited nodes only.
			for i, base := range cand {
				idx := 1
				for range c.Depth {
					k := 4 * (idx - 1)
					p1 := pix[int(base)+(int(codes[k])*s>>8)*stride+int(codes[k+1])*s>>8]
					p2 := pix[int(base)+(int(codes[k+2])*s>>8)*stride+int(codes[k+3])*s>>8]
					idx = 2*idx + b2i(p1 <= p2)
				}
				v := score[i] + leaf[idx-leaves]
				cand[kept], score[kept] = base, v
				kept += b2i(v > thr)
			}
		}
		cand, score = cand[:kept], score[:kept]
		if kept == 0 {
			return dst
		}
	}
	last := c.Thresholds[c.Trees()-1]
	for i, base := range cand {
		dst = append(dst, Window{Row: int(base) / stride, Col: int(base) % stride, Scale: s, Q: score[i] - last})
	}
	return dst
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
