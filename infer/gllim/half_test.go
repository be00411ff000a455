package gllim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refHalf is the float64 value of a binary16 bit pattern, computed from
// its definition.
func refHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	f := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * f * math.Pow(2, -24)
	case 0x1f:
		if f != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + f/1024) * math.Pow(2, float64(e-15))
}

// Every one of the 65536 halves decodes to its defined value and encodes
// back to itself (NaNs to a NaN).
func TestHalfAllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		want := refHalf(h)
		got := halfFloat(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) || !math.IsNaN(float64(halfFloat(halfBits(got)))) {
				t.Fatalf("%#04x: NaN decodes to %g", h, got)
			}
			continue
		}
		if float64(got) != want {
			t.Fatalf("%#04x decodes to %g, want %g", h, got, want)
		}
		if back := halfBits(got); back != h {
			t.Fatalf("%#04x → %g → %#04x", h, got, back)
		}
	}
}

// halfBits rounds to the nearest half, ties to even, over the normal and
// subnormal ranges and beyond (checked against a float64 search of the
// neighbouring halves).
func TestHalfRoundsToNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200000; n++ {
		f := float32(math.Exp(rng.Float64()*30-20) * float64(2*rng.IntN(2)-1))
		if n%7 == 0 {
			// Exactly half-way between two halves.
			h := uint16(rng.IntN(0x7bff))
			lo, hi := refHalf(h), refHalf(h+1)
			f = float32((lo + hi) / 2)
		}
		h := halfBits(f)
		got := float64(halfFloat(h))
		err := math.Abs(got - float64(f))
		if math.Abs(float64(f)) >= 65520 { // beyond max + half a step: Inf
			if !math.IsInf(got, 0) {
				t.Fatalf("%g → %g, want ±Inf", f, got)
			}
			continue
		}
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 {
				continue
			}
			alt := math.Abs(refHalf(nb) - float64(f))
			if alt < err || (alt == err && nb&1 == 0) {
				t.Fatalf("%g → %#04x (%g), but %#04x (%g) is nearer or the even tie", f, h, got, nb, refHalf(nb))
			}
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e9, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {2e-8, 0}, {6.103515625e-05, 0x0400}} {
		if got := halfBits(c.f); got != c.want {
			t.Errorf("halfBits(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}
