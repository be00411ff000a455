package detect

import (
	"bytes"
	"image"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomLevels fills the three levels of a LandmarkSide crop's run.
func randomLevels(rng *rand.Rand) [3][]float32 {
	var lvl [3][]float32
	for l, side := range lookSides {
		lvl[l] = make([]float32, side*side*lookChannels)
		for i := range lvl[l] {
			lvl[l][i] = float32(rng.ExpFloat64()) // ReLU outputs: non-negative
		}
	}
	return lvl
}

// The pooled features against a float64 reference written from the
// definition: the mean of each block's cells over the box's part of the
// crop (cells whose centre lies in the middle 1/confirmContext of it),
// then the log-odds of the score.
func TestPoolLookAgainstFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		lvl := randomLevels(rng)
		score := rng.Float64()
		if trial == 0 {
			score = 0 // clamped
		}
		z := make([]float32, LookFeatures)
		poolLook(z, lvl, score)
		var want []float64
		// Level 8's 2×2 quadrants of the box's cells, then 16 and 32 whole.
		block := func(l int, inRow, inCol func(c, side int) bool) {
			side := lookSides[l]
			acc, n := make([]float64, lookChannels), 0
			for r := range side {
				for c := range side {
					if !inRow(r, side) || !inCol(c, side) {
						continue
					}
					n++
					for k := range acc {
						acc[k] += float64(lvl[l][(r*side+c)*lookChannels+k])
					}
				}
			}
			for k := range acc {
				want = append(want, acc[k]/float64(n))
			}
		}
		// A cell's centre in the box: the box spans (1 − 1/1.5)/2 to
		// (1 + 1/1.5)/2 of the side, rounded to the cells of lookCells.
		in := func(lo, hi float64) func(c, side int) bool {
			return func(c, side int) bool {
				x := (float64(c) + 0.5) / float64(side)
				return x > lo && x < hi
			}
		}
		a, m, b := 1.0/6, 0.5, 5.0/6
		block(0, in(a, m), in(a, m))
		block(0, in(a, m), in(m, b))
		block(0, in(m, b), in(a, m))
		block(0, in(m, b), in(m, b))
		block(1, in(a, b), in(a, b))
		block(2, in(a, b), in(a, b))
		s := math.Min(math.Max(score, 1e-4), 1-1e-4)
		want = append(want, math.Log(s/(1-s)))
		for i, w := range want {
			if math.Abs(float64(z[i])-w) > 1e-5*math.Max(1, math.Abs(w)) {
				t.Fatalf("trial %d: feature %d is %v, want %v", trial, i, z[i], w)
			}
		}
	}
}

func TestLookHeadDecisionAgainstFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h LookHead
	for i := range h.W {
		h.W[i] = float32(rng.NormFloat64())
	}
	h.B, h.Threshold = 0.7, -0.2
	z := make([]float32, LookFeatures)
	for range 50 {
		for i := range z {
			z[i] = float32(rng.ExpFloat64())
		}
		want := float64(h.B) - float64(h.Threshold)
		norm := 0.0
		for i, v := range z {
			want += float64(h.W[i]) * float64(v)
			norm += math.Abs(float64(h.W[i]) * float64(v))
		}
		if got := h.Decision(z); math.Abs(got-want) > 1e-6*norm {
			t.Fatalf("decision %v, the float64 reference %v", got, want)
		}
	}
}

func TestLookHeadFile(t *testing.T) {
	var h LookHead
	for i := range h.W {
		h.W[i] = float32(i) / 100
	}
	h.B, h.Threshold = -1.5, 0.25
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLookHead(b)
	if err != nil || *back != h {
		t.Fatalf("round trip: %v, equal %v", err, err == nil && *back == h)
	}
	damaged := bytes.Clone(b)
	damaged[100] ^= 1
	nan := h
	nan.W[3] = float32(math.NaN())
	if _, err := nan.MarshalBinary(); err == nil || !strings.Contains(err.Error(), "weight 3") {
		t.Errorf("a NaN weight marshals: %v", err)
	}
	wrongN := bytes.Clone(b)
	wrongN[5] = 7
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a look head"},
		{"another file", []byte("GLLM\x01rest of a model"), "not a look head"},
		{"version 2", append([]byte("PLKH\x02"), b[5:]...), "version 2"},
		{"another size", wrongN, "weights, want"},
		{"truncated", b[:len(b)-9], "truncated"},
		{"padded", append(bytes.Clone(b), 0), "truncated or padded"},
		{"damaged", damaged, "checksum"},
	} {
		if _, err := ParseLookHead(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// The shipped head is a trained one: it parses, and it weighs the
// features (a zero head would see a face everywhere or nowhere).
func TestDefaultLookHead(t *testing.T) {
	h := DefaultLookHead()
	nonzero := 0
	for _, w := range h.W {
		if w != 0 {
			nonzero++
		}
	}
	if nonzero < LookFeatures/2 {
		t.Errorf("the shipped head weighs %d of %d features", nonzero, LookFeatures)
	}
}

// Tile gives the scan's tiles, grown by their overlap and cut to the
// frame, and nothing for a count the scan does not take.
func TestTile(t *testing.T) {
	r := image.Rect(0, 0, 640, 480)
	for _, c := range []struct {
		i, n int
		want image.Rectangle
	}{
		{0, 4, image.Rect(0, 0, 320+tileOverlap, 240+tileOverlap)},
		{3, 4, image.Rect(320-tileOverlap, 240-tileOverlap, 640, 480)},
		{1, 2, image.Rect(320-tileOverlap, 0, 640, 480)},
		{4, 4, image.Rectangle{}},
		{0, 5, image.Rectangle{}},
		{0, 0, image.Rectangle{}},
	} {
		if got := Tile(r, c.i, c.n); got != c.want {
			t.Errorf("tile %d of %d: %v, want %v", c.i, c.n, got, c.want)
		}
	}
}
