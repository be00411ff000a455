package gllim_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
)

// projected returns testModel (D = p) reading vectors of in values
// through a projection with orthonormal rows and a mean, and the same
// projection rounded to float32 (what the forward model holds).
func projected(t testing.TB, members, k, p, in, lt, lw int, seed uint64) (*gllim.Model, *gllim.Projection, *rand.Rand) {
	t.Helper()
	m, rng := ensemble(t, members, k, p, lt, lw, seed)
	pr := &gllim.Projection{Mean: make([]float64, in), Basis: make([]float64, p*in)}
	for d := range pr.Mean {
		pr.Mean[d] = 3 * rng.NormFloat64()
	}
	// Gram–Schmidt on Gaussian rows: W Wᵀ = I.
	for j := range p {
		w := pr.Basis[j*in : (j+1)*in]
		for d := range w {
			w[d] = rng.NormFloat64()
		}
		for i := range j {
			u := pr.Basis[i*in : (i+1)*in]
			dot := 0.0
			for d := range w {
				dot += w[d] * u[d]
			}
			for d := range w {
				w[d] -= dot * u[d]
			}
		}
		n := 0.0
		for _, v := range w {
			n += v * v
		}
		for d := range w {
			w[d] /= math.Sqrt(n)
		}
	}
	m.Input = pr
	r := &gllim.Projection{Mean: make([]float64, in), Basis: make([]float64, p*in)}
	for i, v := range pr.Mean {
		r.Mean[i] = float64(float32(v))
	}
	for i, v := range pr.Basis {
		r.Basis[i] = float64(float32(v))
	}
	return m, r, rng
}

// lift returns μ + Wᵀ z plus noise across W's rows: a feature vector
// whose projection is z.
func lift(pr *gllim.Projection, z []float64, rng *rand.Rand) []float64 {
	in := pr.In()
	y := make([]float64, in)
	copy(y, pr.Mean)
	for j, zj := range z {
		for d, w := range pr.Basis[j*in : (j+1)*in] {
			y[d] += w * zj
		}
	}
	for d := range y {
		y[d] += 0.5 * rng.NormFloat64()
	}
	return y
}

// A model with an input projection predicts, for a feature vector y, what
// the float64 reference of its mixture predicts for W (y − μ) computed in
// float64 (Projection.Apply), single and ensemble, weights mixed or not.
func TestProjectedInputMatchesFloat64Reference(t *testing.T) {
	for _, c := range []struct {
		members, k, p, in int
		spread            float64
	}{{1, 5, 40, 300, 1}, {2, 6, 64, 1888, 1}, {1, 6, 30, 500, 0.02}} {
		m, r32, rng := projected(t, c.members, c.k, c.p, c.in, 3, 2, uint64(c.in))
		for _, q := range m.Ensemble() {
			overlap(q, c.spread)
		}
		f, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		if f.In != c.in || f.D != c.p || m.InputDim() != c.in {
			t.Fatalf("forward reads %d values into D=%d, model InputDim %d; want %d into %d", f.In, f.D, m.InputDim(), c.in, c.p)
		}
		refs := make([]*train.Forward64, 0, c.members)
		for _, q := range m.Ensemble() {
			ref, err := train.NewForward64(round32(q))
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
		_, _, zs, _ := train.Sample(m.Params, 100, rng)
		pr, got := f.NewPredictor(), f.NewPrediction()
		y32 := make([]float32, c.in)
		worst := 0.0
		for i := range 100 {
			y := lift(m.Input, zs.RawRowView(i), rng)
			for d, v := range y {
				y32[d] = float32(v)
				y[d] = float64(y32[d])
			}
			z := r32.Apply(y)
			pr.Predict(&got, y32)
			for a, o := range m.Outputs {
				want := 0.0
				for _, ref := range refs {
					x, _ := ref.Predict(z)
					want += x[a] / float64(len(refs))
				}
				worst = math.Max(worst, math.Abs((got.Mean[a]-o.Mean)/o.Scale-want))
			}
		}
		t.Logf("%d member(s), K=%d, %d values onto %d: worst mean error %.2g (std units)", c.members, c.k, c.in, c.p, worst)
		if worst > meanTol {
			t.Errorf("%d values onto %d: float32 vs float64 mean error %.2g, tolerance %g", c.in, c.p, worst, meanTol)
		}
		// No allocation, and a vector of the mixture's D is refused.
		if a := testing.AllocsPerRun(50, func() { pr.Predict(&got, y32) }); a != 0 {
			t.Errorf("Predict through a projection allocates %.1f times per call", a)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic for a vector of the mixture's %d values where the model reads %d", c.p, c.in)
				}
			}()
			pr.Predict(&got, make([]float32, c.p))
		}()
	}
}

// A projection whose sizes or values do not fit is refused by name.
func TestProjectionValidate(t *testing.T) {
	m, _, _ := projected(t, 1, 3, 8, 20, 2, 1, 5)
	good := m.Input
	for _, c := range []struct {
		name string
		in   *gllim.Projection
		want string
	}{
		{"basis short by a row", &gllim.Projection{Mean: good.Mean, Basis: good.Basis[:7*20]}, "D×In"},
		{"no mean", &gllim.Projection{Basis: good.Basis}, "In ≥ 1"},
		{"NaN weight", &gllim.Projection{Mean: good.Mean, Basis: append(append([]float64(nil), good.Basis[:5]...), append([]float64{math.NaN()}, good.Basis[6:]...)...)}, "not finite"},
		{"infinite mean", &gllim.Projection{Mean: append([]float64{math.Inf(1)}, good.Mean[1:]...), Basis: good.Basis}, "not finite"},
	} {
		m.Input = c.in
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	m.Input = good
	if err := m.Validate(); err != nil {
		t.Errorf("the good projection: %v", err)
	}
}

// A model with a projection is written as version 4 and read back exactly
// (float32 values predict the same); it cannot be written as an older
// version; every damage to such a file is an error of its kind.
func TestProjectedModelFile(t *testing.T) {
	for _, enc := range []gllim.Encoding{gllim.Float32, gllim.Q8} {
		m, r32, rng := projected(t, 2, 3, 12, 50, 2, 1, 9)
		m.Encoding = enc
		data, err := gllim.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := gllim.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if back.FileVersion() != 4 || back.Input == nil || back.InputDim() != 50 || back.Input.P() != 12 {
			t.Fatalf("%s: read back version %d, input %v", enc, back.FileVersion(), back.Input != nil)
		}
		for i, v := range back.Input.Basis {
			if v != r32.Basis[i] {
				t.Fatalf("%s: weight %d read back as %g, written %g", enc, i, v, r32.Basis[i])
			}
		}
		again, err := gllim.Marshal(back)
		if err != nil || !bytes.Equal(again, data) {
			t.Errorf("%s: a loaded model writes other bytes (%v)", enc, err)
		}
		// The model in memory and the one read back predict alike.
		f1, _ := gllim.NewForward(m)
		f2, _ := gllim.NewForward(back)
		p1, p2 := f1.NewPredictor(), f2.NewPredictor()
		a, b := f1.NewPrediction(), f2.NewPrediction()
		_, _, zs, _ := train.Sample(m.Params, 20, rng)
		y32 := make([]float32, 50)
		for i := range 20 {
			for d, v := range lift(m.Input, zs.RawRowView(i), rng) {
				y32[d] = float32(v)
			}
			p1.Predict(&a, y32)
			p2.Predict(&b, y32)
			tol := 0.0
			if enc == gllim.Q8 {
				tol = 0.05 // the members' own rounding, not the projection's
			}
			for k := range a.Mean {
				if math.Abs(a.Mean[k]-b.Mean[k]) > tol*math.Abs(m.Outputs[k].Scale) {
					t.Fatalf("%s: output %d: %g in memory, %g read back", enc, k, a.Mean[k], b.Mean[k])
				}
			}
		}
		if _, err := gllim.MarshalWith(m, gllim.MarshalOptions{Version: 3, Encoding: enc}); err == nil || !strings.Contains(err.Error(), "version 4") {
			t.Errorf("%s: written as version 3: %v", enc, err)
		}
		if enc != gllim.Float32 {
			continue
		}
		hlen := int(binary.LittleEndian.Uint32(data[20:]))
		edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), data...)) }
		for _, c := range []struct {
			name string
			data []byte
			want error
		}{
			{"truncated projection", data[:len(data)-40], gllim.ErrTruncated},
			{"read as version 3", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 3); return reseal(b) }), gllim.ErrCorrupt},
			{"input of 51 values", edit(func(b []byte) []byte {
				copy(b[24:], bytes.Replace(b[24:24+hlen], []byte(`"in":50`), []byte(`"in":51`), 1))
				return reseal(b)
			}), gllim.ErrDimension},
			{"input of 0 values", edit(func(b []byte) []byte {
				copy(b[24:], bytes.Replace(b[24:24+hlen], []byte(`"in":50`), []byte(`"in":0 `), 1))
				return reseal(b)
			}), gllim.ErrDimension},
			{"NaN weight", edit(func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[len(b)-8:], 0x7fc00000)
				return reseal(b)
			}), gllim.ErrInvalid},
		} {
			if _, err := gllim.Parse(c.data); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			} else {
				t.Logf("%s: %v", c.name, err)
			}
		}
	}
}
