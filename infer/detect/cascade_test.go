package detect

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	pigo "github.com/esimov/pigo/core"
)

func mustFacefinder(t testing.TB) *Cascade {
	t.Helper()
	c, err := ParseCascade(facefinder)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// facefinder parses (468 trees of depth 6 in 24 stages) and writes back to
// the same bytes.
func TestCascadeRoundTrip(t *testing.T) {
	c := mustFacefinder(t)
	if c.Depth != 6 || c.Trees() != 468 {
		t.Fatalf("facefinder: depth %d, %d trees", c.Depth, c.Trees())
	}
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, facefinder) {
		t.Fatal("facefinder does not write back to its own bytes")
	}
	m := c.Mirrored().Mirrored()
	if !slices.Equal(m.Codes, c.Codes) && !hasMinus128(c.Codes) {
		t.Error("mirroring twice changed the codes")
	}
}

func hasMinus128(codes []int8) bool { return slices.Contains(codes, -128) }

// Truncated, padded and hostile files are refused with ErrCascade, never a
// panic (pigo's Unpack panics on a short file).
func TestParseCascadeRefuses(t *testing.T) {
	bad := map[string][]byte{
		"empty":     nil,
		"header":    facefinder[:15],
		"truncated": facefinder[:len(facefinder)-1],
		"padded":    append(slices.Clone(facefinder), 0),
	}
	set := func(off int, v byte) []byte { b := slices.Clone(facefinder); b[off] = v; return b }
	bad["version"] = set(0, 2)
	bad["depth 0"] = set(8, 0)
	bad["depth 200"] = set(8, 200)
	huge := slices.Clone(facefinder)
	huge[12], huge[13], huge[14], huge[15] = 0xff, 0xff, 0xff, 0x7f
	bad["2^31 trees"] = huge
	nan := slices.Clone(facefinder)
	copy(nan[16+4*63:], []byte{0, 0, 0xc0, 0x7f}) // first leaf of the first tree
	bad["NaN leaf"] = nan
	for name, b := range bad {
		if _, err := ParseCascade(b); !errors.Is(err, ErrCascade) {
			t.Errorf("%s: error %v, want ErrCascade", name, err)
		}
	}
}

func FuzzParseCascade(f *testing.F) {
	f.Add(facefinder[:16+8*64+4])
	f.Add([]byte{3, 0, 0, 0, 0x81, 0x7f, 0x81, 0x7f, 1, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCascade(b)
		if err != nil {
			return
		}
		out, err := c.MarshalBinary()
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("a parsed cascade writes back differently: %v", err)
		}
	})
}

// testFrames are real photographs (Pointing'04, AFLW2000) and seeded noise
// of odd sizes, so that every window position and border case is met.
func testFrames(t *testing.T) []*image.Gray {
	frames := realFrames(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for _, sz := range [][2]int{{97, 61}, {320, 240}, {641, 479}} {
		g := image.NewGray(image.Rect(0, 0, sz[0], sz[1]))
		for i := range g.Pix {
			g.Pix[i] = uint8(rng.IntN(256))
		}
		frames = append(frames, g)
	}
	return frames
}

// The scanner keeps exactly pigo's windows, in pigo's order and with
// pigo's float32 scores, for facefinder and for its mirror (run by pigo
// from the mirrored file), over several scan settings and on a region
// that starts inside the frame.
func TestScanMatchesPigo(t *testing.T) {
	ff := mustFacefinder(t)
	var sc scanner
	windows := 0
	for _, c := range []*Cascade{ff, ff.Mirrored()} {
		b, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		ref, err := pigo.NewPigo().Unpack(b)
		if err != nil {
			t.Fatal(err)
		}
		frames := testFrames(t)
		for i, g := range frames {
			params := []scanParams{{20, 400, 0.1, 1.1}, {60, 400, 0.1, 1.1}}
			if i >= len(frames)-3 { // the noise frames: every small window and step
				params = append(params, scanParams{9, 1000, 0.05, 1.05})
			}
			for _, p := range params {
				for _, off := range []image.Point{{}, {13, 7}} {
					rows, cols := g.Rect.Dy()-off.Y, g.Rect.Dx()-off.X
					pix := g.Pix[off.Y*g.Stride+off.X:]
					want := ref.RunCascade(pigo.CascadeParams{MinSize: p.MinSize, MaxSize: p.MaxSize, ShiftFactor: p.Shift, ScaleFactor: p.Scale,
						ImageParams: pigo.ImageParams{Pixels: pix, Rows: rows, Cols: cols, Dim: g.Stride}}, 0)
					got := sc.scan(nil, c, pix, g.Stride, rows, cols, p)
					if len(got) != len(want) {
						t.Fatalf("frame %d %+v at %v: %d windows, pigo %d", i, p, off, len(got), len(want))
					}
					for k := range got {
						w := want[k]
						if got[k] != (Window{Row: w.Row, Col: w.Col, Scale: w.Scale, Q: w.Q}) {
							t.Fatalf("frame %d %+v at %v: window %d is %+v, pigo %+v", i, p, off, k, got[k], w)
						}
					}
					windows += len(got)
				}
			}
		}
	}
	if windows < 1000 {
		t.Fatalf("only %d windows compared", windows)
	}
}

// classify, one window at a time, agrees with the scanner on every window
// of a frame: the windows it scores positive are the scanner's, with the
// same scores; and the scanner counts the windows and the trees evaluated
// (every tree up to the first that rejects) as a window-by-window walk does.
func TestClassifyMatchesScan(t *testing.T) {
	ff := mustFacefinder(t)
	g := realFrames(t)[3]
	var sc Scanner
	p := scanParams{30, 200, 0.1, 1.2}
	rows, cols := g.Rect.Dy(), g.Rect.Dx()
	want := sc.Scan(nil, ff, g.Pix, g.Stride, rows, cols, p)
	var got []Window
	var windows, evals int64
	for s := p.MinSize; s <= p.MaxSize; s = nextScale(s, p.Scale) {
		step, half := max(int(0.1*float64(s)), 1), s/2+1
		for r := half; r <= rows-half; r += step {
			for c := half; c <= cols-half; c += step {
				windows++
				var q float32
				for tr := range ff.Trees() {
					evals++
					var ok bool
					if q, ok = ff.run(g.Pix, g.Stride, r*g.Stride+c, s, tr, tr+1, q); !ok {
						break
					}
				}
				if q := ff.classify(g.Pix, g.Stride, r, c, s); q > 0 {
					got = append(got, Window{r, c, s, q})
				}
			}
		}
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("classify kept %d windows, the scanner %d", len(got), len(want))
	}
	if sc.Windows() != windows || sc.TreeEvals() != evals {
		t.Errorf("the scanner counts %d windows and %d trees, the walk %d and %d", sc.Windows(), sc.TreeEvals(), windows, evals)
	}
	t.Logf("facefinder: %.2f trees per window", float64(evals)/float64(windows))
}

// The vector tree walk and the interleaved Go walk (walkFour) reach the
// same leaf as the Go walk for every window, random trees and pixels
// included, windows at the very start of the pixels (walked in Go: the
// vector walk reads 3 bytes before a pixel) and counts that are not
// multiples of 8.
func TestWalkVectorMatchesGo(t *testing.T) {
	for _, vec := range []bool{true, false} {
		prev := useVectorWalk(vec)
		t.Run(fmt.Sprintf("vector-%v", vectorWalk), testWalkMatchesGo)
		useVectorWalk(prev)
	}
}

// testWalkMatchesGo compares the scanner's walk, as switched (the vector
// walk, or walkFour), with walkGo.
func testWalkMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const w, h = 97, 83
	pix := make([]byte, w*h)
	for i := range pix {
		pix[i] = uint8(rng.IntN(256))
	}
	var sc scanner
	for trial := range 200 {
		codes := make([]int8, 4*63)
		for i := range codes {
			codes[i] = int8(rng.IntN(255) - 127)
		}
		s := 8 + rng.IntN(60)
		sc.setSide(s, w)
		o1, o2, low := sc.offsets(codes, 6)
		half := s/2 + 1
		var cand []int32
		for r := half; r <= h-half; r += 1 + rng.IntN(3) {
			for c := half; c <= w-half; c += 1 + rng.IntN(3) {
				cand = append(cand, int32(r*w+c))
			}
		}
		cand = cand[:rng.IntN(len(cand)+1)]
		got := slices.Clone(sc.walk(cand, o1, o2, low, pix, 6))
		want := make([]int32, len(cand))
		walkGo(want, cand, o1, o2, pix, 6)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (side %d, %d windows, vector %v): leaves differ", trial, s, len(cand), vectorWalk)
		}
	}
}

// The vector walk writes the leaves of the windows it is given and nothing
// past them, whatever their count (each multiple of 8 up to 96: its last
// turn has one, two or three chains' worth of windows left).
func TestWalkVectorStaysInItsWindows(t *testing.T) {
	if !vectorWalk {
		t.Skip("no vector walk on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	const w, h = 64, 64
	pix := make([]byte, w*h)
	for i := range pix {
		pix[i] = uint8(rng.IntN(256))
	}
	codes := make([]int8, 4*63)
	for i := range codes {
		codes[i] = int8(rng.IntN(255) - 127)
	}
	var sc scanner
	sc.setSide(20, w)
	o1, o2, _ := sc.offsets(codes, 6)
	for n := 8; n <= 96; n += 8 {
		cand := make([]int32, n, n+24)
		for i := range cand {
			cand[i] = int32((12+i/40)*w + 12 + i%40)
		}
		out := make([]int32, n+24)
		for i := range out {
			out[i] = -1
		}
		walkVector(out[:n], cand, o1[:cap(o1)], o2[:cap(o2)], pix)
		want := make([]int32, n)
		walkGo(want, cand, o1, o2, pix, 6)
		if !slices.Equal(out[:n], want) {
			t.Errorf("%d windows: leaves differ from walkGo's", n)
		}
		for i, v := range out[n:] {
			if v != -1 {
				t.Fatalf("%d windows: wrote %d past them, at %d", n, v, n+i)
			}
		}
	}
}

// A node's pixel offsets from the scanner's tables are pico's, computed
// here in float64: ⌊r·s/256⌋·stride + ⌊c·s/256⌋ for every code r, c in
// int8's range (−128 included) at sides from 1 to 1000 and odd strides;
// low is the smallest.
func TestOffsetsAreFloorOfScaledCodes(t *testing.T) {
	var sc scanner
	codes := make([]int8, 4*63)
	for side := 1; side <= 1000; side += 37 {
		stride := 641 + 2*side
		sc.setSide(side, stride)
		for start := -128; start < 128; start += 63 {
			for i := range codes {
				codes[i] = int8((start + i*7) % 256)
			}
			o1, o2, low := sc.offsets(codes, 6)
			wantLow := math.Inf(1)
			for n := range 63 {
				k := 4 * n
				f := func(r, c int8) float64 {
					return math.Floor(float64(r)*float64(side)/256)*float64(stride) + math.Floor(float64(c)*float64(side)/256)
				}
				a, b := f(codes[k], codes[k+1]), f(codes[k+2], codes[k+3])
				if float64(o1[n]) != a || float64(o2[n]) != b {
					t.Fatalf("side %d, node %d, codes %v: offsets %d, %d, want %g, %g", side, n+1, codes[k:k+4], o1[n], o2[n], a, b)
				}
				wantLow = math.Min(wantLow, math.Min(a, b))
			}
			if float64(low) != wantLow {
				t.Fatalf("side %d: low %d, want %g", side, low, wantLow)
			}
		}
	}
}

// The vector survivors' step keeps the same windows with the same sums,
// in the same order, as keepGo: random leaves and scores, thresholds
// equal to some sums (kept only above), NaN sums (dropped), every
// survivor count from none to all, counts that are not multiples of 8.
func TestKeepVectorMatchesGo(t *testing.T) {
	if !vectorWalk {
		t.Skip("no vector walk on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 500 {
		n := rng.IntN(200)
		leaf := make([]float32, 64)
		for i := range leaf {
			leaf[i] = float32(rng.NormFloat64())
		}
		if trial%7 == 0 {
			leaf[rng.IntN(64)] = float32(math.NaN())
		}
		cand := make([]int32, n)
		score := make([]float32, n)
		idx := make([]int32, n)
		for i := range n {
			cand[i] = int32(rng.IntN(1 << 20))
			score[i] = float32(rng.NormFloat64() * float64(trial%4))
			idx[i] = int32(64 + rng.IntN(64))
		}
		thr := float32(rng.NormFloat64())
		if n > 0 && trial%3 == 0 {
			thr = score[0] + leaf[idx[0]-64] // a sum exactly at the threshold
		}
		wantC, wantS := slices.Clone(cand), slices.Clone(score)
		wantK := keepGo(wantC, wantS, idx, leaf, thr, 0, 0)
		gotC, gotS := slices.Clone(cand), slices.Clone(score)
		from, kept := keepVector(gotC, gotS, idx, leaf, thr)
		if from != n&^7 {
			t.Fatalf("trial %d: the vector step looked at %d of %d windows", trial, from, n)
		}
		gotK := keepGo(gotC, gotS, idx, leaf, thr, from, kept)
		if gotK != wantK || !slices.Equal(gotC[:gotK], wantC[:wantK]) ||
			!slices.EqualFunc(gotS[:gotK], wantS[:wantK], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("trial %d (%d windows): kept %d, want %d, or the windows or sums differ", trial, n, gotK, wantK)
		}
	}
}
