package gllim

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// benchModel is a model of the size the issue measures: K = 50, D = 1888,
// Lt = 5, Lw = 4, with random well-conditioned parameters (the speed does
// not depend on the values).
func benchModel(b *testing.B) (*Forward, []float32) {
	const K, D, Lt, Lw = 50, 1888, 5, 4
	p, outs := randomBenchParams(K, D, Lt, Lw)
	f, err := NewForward(&Model{Params: p, Outputs: outs})
	if err != nil {
		b.Fatal(err)
	}
	benchParams = p
	rng := rand.New(rand.NewPCG(1, 2))
	y := make([]float32, D)
	for i := range y {
		y[i] = float32(rng.Float64())
	}
	return f, y
}

// randomBenchParams are well-conditioned random parameters of the given
// size (the speed does not depend on the values) and their outputs.
func randomBenchParams(K, D, Lt, Lw int) (*Params, []Output) {
	rng := rand.New(rand.NewPCG(1, 1))
	p := NewParams(K, D, Lt, Lw)
	for k := range p.Pi {
		p.Pi[k] = 1.0 / float64(K)
		for i := 0; i < Lt; i++ {
			p.GammaK(k)[i*Lt+i] = 0.2
			p.Ck(k)[i] = rng.NormFloat64()
		}
	}
	for i := range p.A {
		p.A[i] = 0.1 * rng.NormFloat64()
	}
	for i := range p.B {
		p.B[i] = rng.Float64()
		p.Sigma[i] = 0.01 + 0.01*rng.Float64()
	}
	outs := make([]Output, Lt)
	for i := range outs {
		outs[i] = Output{Name: string(rune('a' + i)), Scale: 1}
	}
	return p, outs
}

// benchParams are the parameters of the last benchModel.
var benchParams *Params

// floorNaive is a plain float32 matrix–vector product: one row at a time,
// one accumulator.
func floorNaive(dst, w, x []float32, n int) {
	for r := range dst {
		row := w[r*n : (r+1)*n]
		var s float32
		for d, v := range row {
			s += v * x[d]
		}
		dst[r] = s
	}
}

// BenchmarkForward measures one prediction at K = 50, D = 1888, Lt = 5,
// Lw = 4 beside the floor measured in the same run: a float32 (K·L)×D
// matrix–vector product (the unavoidable part of a forward pass), both in
// its plain form and with the tuned kernel the model uses. x-floor is the
// prediction's time over the tuned product's.
func BenchmarkForward(b *testing.B) {
	f, y := benchModel(b)
	rows := f.K * f.L
	w := f.members[0].rows[:rows*f.D]
	dst := make([]float32, rows)
	var plain, tuned float64 // ns per product, from the sub-benchmarks below
	nsPerOp := func(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }
	b.Run("floor-plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			floorNaive(dst, w, y, f.D)
		}
		plain = nsPerOp(b)
	})
	b.Run("floor-tuned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			matVec(dst, w, y, f.D)
		}
		tuned = nsPerOp(b)
	})
	b.Run("predict", func(b *testing.B) {
		pr := f.NewPredictor()
		out := f.NewPrediction()
		b.ReportAllocs()
		for b.Loop() {
			pr.Predict(&out, y)
		}
		ns := nsPerOp(b)
		if tuned > 0 && plain > 0 { // measured in this run (not filtered out)
			b.ReportMetric(ns/tuned, "x-floor")
			b.ReportMetric(ns/plain, "x-plain")
		}
		b.ReportMetric(float64(f.K*(f.L+1)*f.D)/ns, "madd/ns")
	})
	// predict-half: the same model written with the half encoding and read
	// back, its weights kept as halves where the CPU widens them (F16C).
	b.Run("predict-half", func(b *testing.B) {
		m := &Model{Params: benchParams, Outputs: f.outputs}
		buf, err := MarshalWith(m, MarshalOptions{Encoding: Half})
		if err != nil {
			b.Fatal(err)
		}
		back, err := Parse(buf)
		if err != nil {
			b.Fatal(err)
		}
		fh, err := NewForward(back)
		if err != nil {
			b.Fatal(err)
		}
		pr := fh.NewPredictor()
		out := fh.NewPrediction()
		b.ReportAllocs()
		for b.Loop() {
			pr.Predict(&out, y)
		}
		ns := nsPerOp(b)
		if tuned > 0 {
			b.ReportMetric(ns/tuned, "x-floor")
		}
		if fh.keepsHalves() {
			b.ReportMetric(1, "half")
		}
	})
}

// BenchmarkProjected measures a prediction of a model that reads the
// 1888 values through a projection on 256 directions (Model.Input), beside
// the model of the same K, Lt and Lw on the 1888 values themselves, in
// the same run; both whole and on the components that carried the answer
// (PredictIn, a tracked face's step). x-raw is the projected model's time
// over the raw one's.
func BenchmarkProjected(b *testing.B) {
	const K, D, P, Lt, Lw = 50, 1888, 256, 5, 2
	model := func(d int) (*Params, []Output) { return randomBenchParams(K, d, Lt, Lw) }
	rng := rand.New(rand.NewPCG(2, 2))
	y := make([]float32, D)
	for i := range y {
		y[i] = float32(rng.Float64())
	}
	pr := &Projection{Mean: make([]float64, D), Basis: make([]float64, P*D)}
	for i := range pr.Basis {
		pr.Basis[i] = rng.NormFloat64() / 40
	}
	rp, ro := model(D)
	pp, po := model(P)
	raw, err := NewForward(&Model{Params: rp, Outputs: ro})
	if err != nil {
		b.Fatal(err)
	}
	proj, err := NewForward(&Model{Params: pp, Outputs: po, Input: pr})
	if err != nil {
		b.Fatal(err)
	}
	nsPerOp := func(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }
	times := map[string]float64{}
	for _, whole := range []bool{true, false} {
		for _, c := range []struct {
			name string
			f    *Forward
		}{{"raw", raw}, {"projected", proj}} {
			name := c.name
			if !whole {
				name += "-heavy"
			}
			b.Run(name, func(b *testing.B) {
				p, out := c.f.NewPredictor(), c.f.NewPrediction()
				p.Predict(&out, y)
				var in *Components
				if !whole {
					h := out.Heavy(0.01)
					in = &h
				}
				b.ReportAllocs()
				for b.Loop() {
					p.PredictIn(&out, y, in)
				}
				times[name] = nsPerOp(b)
				if r, ok := times[strings.Replace(name, "projected", "raw", 1)]; ok && c.f == proj {
					b.ReportMetric(times[name]/r, "x-raw")
				}
			})
		}
	}
}
