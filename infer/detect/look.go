package detect

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// A close look's evidence (docs/method.md §9): the network's own
// features where it looked, pooled over the face's part of the crop. On
// a crop of confirmContext box sides resampled to LandmarkSide pixels the
// box spans the middle 1/confirmContext of the crop; the neck's outputs
// of its three levels (64 channels at strides 8, 16 and 32: 16×16, 8×8
// and 4×4 cells) are averaged over the cells the box covers, the finest
// level on a 2×2 grid of quadrants (the eyes' and the mouth's halves
// apart), and the look's confidence joins them as a log-odds.
const (
	lookChannels = 64
	// LookFeatures is the length of a close look's feature vector: four
	// quadrants of level 8, level 16 and level 32, then the log-odds.
	LookFeatures = 6*lookChannels + 1
)

// lookSides are the levels' grid sides on a LandmarkSide crop.
var lookSides = [3]int{LandmarkSide / 8, LandmarkSide / 16, LandmarkSide / 32}

// lookCells are the cell ranges pooled per block: level, then [r0, r1)
// and [c0, c1) of that level's grid, the cells whose centre lies in the
// box, which spans the middle 1/confirmContext of the crop; level 8's
// cut into quadrants at the crop's middle.
var lookCells = func() (b [6][5]int) {
	in := func(side int) (int, int) {
		lo := (1 - 1/confirmContext) / 2 * float64(side) // a cell's centre c + ½ past lo
		return int(math.Floor(lo + 0.5)), side - int(math.Floor(lo+0.5))
	}
	c0, c1 := in(lookSides[0])
	m := lookSides[0] / 2
	b[0], b[1], b[2], b[3] = [5]int{0, c0, m, c0, m}, [5]int{0, c0, m, m, c1}, [5]int{0, m, c1, c0, m}, [5]int{0, m, c1, m, c1}
	for l := 1; l < 3; l++ {
		lo, hi := in(lookSides[l])
		b[3+l] = [5]int{l, lo, hi, lo, hi}
	}
	return b
}()

// poolLook fills z (LookFeatures values) from the levels of a run on a
// LandmarkSide crop and the look's confidence score: each block the mean
// of its cells, channel by channel, then log(s/(1−s)) with s clamped to
// [10⁻⁴, 1−10⁻⁴].
func poolLook(z []float32, lvl [3][]float32, score float64) {
	for i, c := range lookCells {
		l, side := c[0], lookSides[c[0]]
		acc := z[i*lookChannels : (i+1)*lookChannels]
		clear(acc)
		for r := c[1]; r < c[2]; r++ {
			for col := c[3]; col < c[4]; col++ {
				cell := lvl[l][(r*side+col)*lookChannels:][:lookChannels]
				for k, v := range cell {
					acc[k] += v
				}
			}
		}
		inv := 1 / float32((c[2]-c[1])*(c[4]-c[3]))
		for k := range acc {
			acc[k] *= inv
		}
	}
	s := min(max(score, 1e-4), 1-1e-4)
	z[LookFeatures-1] = float32(math.Log(s / (1 - s)))
}

// LookHead tells a face from a thing the network takes for one at a
// close look: a linear classifier on the look's features (logistic
// regression, docs/method.md §9), d = w·z + b, trained by `posectl
// look-train` on the faces of persons and on what the network finds in
// face-free scenes. A look whose d is below Threshold sees no face.
type LookHead struct {
	W         [LookFeatures]float32
	B         float32
	Threshold float32
}

// Decision returns w·z + b − Threshold for the features z (LookFeatures
// values, float32 as the weights): at least 0 where the head sees a face.
func (h *LookHead) Decision(z []float32) float64 {
	t := h.B - h.Threshold
	for i, v := range z[:LookFeatures] {
		t += h.W[i] * v
	}
	return float64(t)
}

// The look head's file: "PLKH", a version byte (1), the number of
// weights (uint32, LookFeatures), the threshold, the bias and the
// weights (float32), all little-endian, then the CRC-32 (IEEE) of what
// precedes it.
const (
	lookMagic   = "PLKH"
	lookVersion = 1
	lookSize    = len(lookMagic) + 1 + 4 + 4*(2+LookFeatures) + 4
)

// MarshalBinary writes the head's file.
func (h *LookHead) MarshalBinary() ([]byte, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, lookSize)
	b = append(b, lookMagic...)
	b = append(b, lookVersion)
	b = binary.LittleEndian.AppendUint32(b, LookFeatures)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.Threshold))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.B))
	for _, w := range h.W {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(w))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// ParseLookHead reads a head's file; it names what is wrong with a file
// that is not one (truncated, damaged, another version or size).
func ParseLookHead(data []byte) (*LookHead, error) {
	switch {
	case len(data) < len(lookMagic)+5 || string(data[:len(lookMagic)]) != lookMagic:
		return nil, errors.New("not a look head (no PLKH header)")
	case data[len(lookMagic)] != lookVersion:
		return nil, fmt.Errorf("look head version %d, want %d", data[len(lookMagic)], lookVersion)
	}
	if n := binary.LittleEndian.Uint32(data[len(lookMagic)+1:]); n != LookFeatures {
		return nil, fmt.Errorf("look head of %d weights, want %d", n, LookFeatures)
	}
	if len(data) != lookSize {
		return nil, fmt.Errorf("look head of %d bytes, want %d (truncated or padded)", len(data), lookSize)
	}
	body := data[:lookSize-4]
	if got, want := crc32.ChecksumIEEE(body), binary.LittleEndian.Uint32(data[lookSize-4:]); got != want {
		return nil, fmt.Errorf("look head damaged: checksum %08x, the file says %08x", got, want)
	}
	at := len(lookMagic) + 5
	f := func() float32 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(data[at:]))
		at += 4
		return v
	}
	h := &LookHead{}
	h.Threshold, h.B = f(), f()
	for i := range h.W {
		h.W[i] = f()
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	return h, nil
}

// check refuses a head with a value that is not finite: its decisions
// would be NaN, which sees no face anywhere, or ±Inf.
func (h *LookHead) check() error {
	ok := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	if !ok(h.Threshold) || !ok(h.B) {
		return fmt.Errorf("look head: threshold %v, bias %v: not finite", h.Threshold, h.B)
	}
	for i, w := range h.W {
		if !ok(w) {
			return fmt.Errorf("look head: weight %d is %v", i, w)
		}
	}
	return nil
}

//go:embed weights/look.bin
var lookEmbedded []byte

// DefaultLookHead returns the head shipped with posed (weights/look.bin,
// written by `posectl look-train`: docs/measured.md, "The close look's
// head"), parsed once and shared: a head is read-only.
func DefaultLookHead() *LookHead { return defaultLook() }

var defaultLook = sync.OnceValue(func() *LookHead {
	h, err := ParseLookHead(lookEmbedded)
	if err != nil {
		panic("detect: the embedded look head: " + err.Error()) // its tests read the same file
	}
	return h
})
