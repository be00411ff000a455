package detect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Cascade is a pico cascade (Markuš et al., arXiv:1305.4537) in the file
// format pigo reads: T binary trees of depth D whose nodes compare two
// pixels, their leaves summed into a score that must stay above each
// tree's threshold for the window to survive.
//
// Node n (heap order, 1 … 2^D−1) of tree t holds four signed bytes
// (r1, c1, r2, c2): two pixel positions relative to the window's centre in
// units of s/256 for a window of side s. At a window centred on (r, c),
//
//	p_k = I[r + ⌊r_k·s/256⌋][c + ⌊c_k·s/256⌋]                    (pico eq. 1, pigo's classifyRegion)
//
// (⌊(256·r + r_k·s)/256⌋ = r + ⌊r_k·s/256⌋ since 256·r is a multiple of
// 256, so pigo's shifts and this sum agree exactly), and the walk goes to
// 2n + [p_1 ≤ p_2] until a leaf; the leaf's value is added to the score,
// and the window is rejected once the score is at or below the tree's
// threshold. A surviving window's score is the sum less the last
// threshold.
type Cascade struct {
	Depth      int
	Box        [4]int8   // the training box bytes of the file (pigo ignores them)
	Codes      []int8    // per tree, (2^D − 1) nodes × (r1, c1, r2, c2)
	Leaves     []float32 // per tree, 2^D leaf values
	Thresholds []float32 // per tree
}

const (
	cascadeVersion  = 3
	cascadeHeader   = 16
	maxCascadeDepth = 10      // 8 KiB of codes per tree
	maxCascadeTrees = 1 << 16 // facefinder has 468
)

// ErrCascade is wrapped by every error ParseCascade returns.
var ErrCascade = errors.New("detect: bad cascade")

// ParseCascade reads a cascade in pigo's format, checking every size
// against the bytes present before it allocates (pigo's own Unpack indexes
// the packet unchecked and panics on a short one).
func ParseCascade(b []byte) (*Cascade, error) {
	if len(b) < cascadeHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCascade, len(b), cascadeHeader)
	}
	if v := binary.LittleEndian.Uint32(b); v != cascadeVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCascade, v, cascadeVersion)
	}
	depth := binary.LittleEndian.Uint32(b[8:])
	trees := binary.LittleEndian.Uint32(b[12:])
	if depth < 1 || depth > maxCascadeDepth {
		return nil, fmt.Errorf("%w: tree depth %d not in 1…%d", ErrCascade, depth, maxCascadeDepth)
	}
	if trees < 1 || trees > maxCascadeTrees {
		return nil, fmt.Errorf("%w: %d trees, want 1…%d", ErrCascade, trees, maxCascadeTrees)
	}
	leaves := 1 << depth
	per := 4*(leaves-1) + 4*leaves + 4
	if want := cascadeHeader + int(trees)*per; len(b) != want {
		return nil, fmt.Errorf("%w: %d bytes, %d trees of depth %d need %d", ErrCascade, len(b), trees, depth, want)
	}
	c := &Cascade{
		Depth:      int(depth),
		Codes:      make([]int8, 0, int(trees)*4*(leaves-1)),
		Leaves:     make([]float32, 0, int(trees)*leaves),
		Thresholds: make([]float32, 0, trees),
	}
	for i := range c.Box {
		c.Box[i] = int8(b[4+i])
	}
	p := b[cascadeHeader:]
	f32 := func() float32 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(p))
		p = p[4:]
		return v
	}
	for t := 0; t < int(trees); t++ {
		for _, v := range p[:4*(leaves-1)] {
			c.Codes = append(c.Codes, int8(v))
		}
		p = p[4*(leaves-1):]
		for range leaves {
			c.Leaves = append(c.Leaves, f32())
		}
		c.Thresholds = append(c.Thresholds, f32())
	}
	for t, th := range c.Thresholds {
		if math.IsNaN(float64(th)) {
			return nil, fmt.Errorf("%w: tree %d: threshold is NaN", ErrCascade, t)
		}
	}
	for i, v := range c.Leaves {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%w: tree %d: leaf %d is %g", ErrCascade, i/leaves, i%leaves, v)
		}
	}
	return c, nil
}

// Trees returns the number of trees.
func (c *Cascade) Trees() int { return len(c.Thresholds) }

// nodes returns the number of internal nodes of a tree.
func (c *Cascade) nodes() int { return 1<<c.Depth - 1 }

// MarshalBinary writes the cascade in pigo's format.
func (c *Cascade) MarshalBinary() ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	leaves := 1 << c.Depth
	out := make([]byte, cascadeHeader, cascadeHeader+c.Trees()*(4*(leaves-1)+4*leaves+4))
	binary.LittleEndian.PutUint32(out, cascadeVersion)
	for i, v := range c.Box {
		out[4+i] = byte(v)
	}
	binary.LittleEndian.PutUint32(out[8:], uint32(c.Depth))
	binary.LittleEndian.PutUint32(out[12:], uint32(c.Trees()))
	for t := range c.Trees() {
		for _, v := range c.Codes[t*4*(leaves-1) : (t+1)*4*(leaves-1)] {
			out = append(out, byte(v))
		}
		for _, v := range c.Leaves[t*leaves : (t+1)*leaves] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(c.Thresholds[t]))
	}
	return out, nil
}

// check panics-free consistency of the slices' lengths.
func (c *Cascade) check() error {
	if c.Depth < 1 || c.Depth > maxCascadeDepth {
		return fmt.Errorf("%w: tree depth %d not in 1…%d", ErrCascade, c.Depth, maxCascadeDepth)
	}
	t := c.Trees()
	if t < 1 || t > maxCascadeTrees || len(c.Codes) != t*4*c.nodes() || len(c.Leaves) != t<<c.Depth {
		return fmt.Errorf("%w: %d trees, %d codes, %d leaves at depth %d", ErrCascade, t, len(c.Codes), len(c.Leaves), c.Depth)
	}
	return nil
}

// Mirrored returns the cascade seen in a mirror: every column offset
// negated, so that a cascade trained on faces turned to one side finds
// faces turned to the other (pigo's puploc mirrors its eye cascades so).
// An offset of −128 becomes +127, the largest the format holds; the
// pixel stays inside the window (|offset|·s/256 ≤ s/2).
func (c *Cascade) Mirrored() *Cascade {
	m := &Cascade{Depth: c.Depth, Box: c.Box, Codes: slices.Clone(c.Codes),
		Leaves: slices.Clone(c.Leaves), Thresholds: slices.Clone(c.Thresholds)}
	m.Box[0], m.Box[1] = -c.Box[1], -c.Box[0]
	for i := 1; i < len(m.Codes); i += 2 { // c1 and c2: odd positions
		m.Codes[i] = int8(max(-127, -int(m.Codes[i])))
	}
	return m
}

// Cut returns the cascade's first n trees (1 ≤ n ≤ Trees()): cut after a
// stage's last tree, the cascade of the stages before (a window that the
// whole cascade passes, the cut one passes too). It shares no memory with c.
func (c *Cascade) Cut(n int) (*Cascade, error) {
	if n < 1 || n > c.Trees() {
		return nil, fmt.Errorf("%w: cut after %d trees of %d", ErrCascade, n, c.Trees())
	}
	nodes, leaves := c.nodes(), 1<<c.Depth
	return &Cascade{Depth: c.Depth, Box: c.Box, Codes: slices.Clone(c.Codes[:n*4*nodes]),
		Leaves: slices.Clone(c.Leaves[:n*leaves]), Thresholds: slices.Clone(c.Thresholds[:n])}, nil
}

// classify returns the score of the window of side s centred on (r, c) of
// the grey pixels pix (row stride stride), or −1 if a tree rejects it:
// pigo's classifyRegion, one window at a time. The window must lie inside
// the image: s/2 + 1 ≤ r ≤ rows − s/2 − 1, and alike for c.
func (c *Cascade) classify(pix []byte, stride, r, col, s int) float32 {
	q, ok := c.ClassifyUpTo(pix, stride, r, col, s, c.Trees())
	if !ok {
		return -1
	}
	return q - c.Thresholds[c.Trees()-1]
}

// ClassifyUpTo runs the first n trees and returns their summed leaves and
// whether the window survived all n thresholds. A trainer scores its
// samples with it.
func (c *Cascade) ClassifyUpTo(pix []byte, stride, r, col, s, n int) (float32, bool) {
	return c.run(pix, stride, r*stride+col, s, 0, n, 0)
}

// run adds trees from … to−1 to out (see Cascade for the pixel rule).
func (c *Cascade) run(pix []byte, stride, base, s, from, to int, out float32) (float32, bool) {
	nodes, leaves := c.nodes(), 1<<c.Depth
	for t := from; t < to; t++ {
		codes := c.Codes[t*4*nodes:]
		idx := 1
		for range c.Depth {
			k := 4 * (idx - 1)
			p1 := pix[base+(int(codes[k])*s>>8)*stride+int(codes[k+1])*s>>8]
			p2 := pix[base+(int(codes[k+2])*s>>8)*stride+int(codes[k+3])*s>>8]
			idx = 2*idx + b2i(p1 <= p2)
		}
		out += c.Leaves[t*leaves+idx-leaves]
		if out <= c.Thresholds[t] {
			return out, false
		}
	}
	return out, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
