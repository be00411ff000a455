package gllim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
)

// Tolerances of the float32 forward model against the float64 reference,
// on inputs drawn from the model itself (the inputs it will see):
//   - the mean, in standardised units of t (a tenth of a degree for an angle
//     of spread 50°): the log-weights carry float32 rounding of order
//     √D·ε₃₂·|q_k| ≈ 1e-3 for q_k ≈ 1e3 at D = 200, which moves ν_k by as much,
//     and the mean by ν-weighted gaps between components;
//   - the standard deviations, relative: where components mix, the spread
//     between their means enters the predictive variance through ν_k, so
//     the log-density error below moves it by up to a few per cent;
//   - log p(y), relative: q_k and v_kᵀΣ*_k v_k are each of order D·Lw·|A|²/σ
//     (≈ 5e4 for these draws at D = 1888) and cancel down to ≈ D; B_k = A_kᵀΣ_k⁻¹
//     stored in float32 leaves an error of order ε₃₂·√D of the larger terms,
//     measured at up to 1e-4 of |log p(y)| (0.1 nats at D = 1888). The
//     weights ν_k move by as much, relatively; the mean tolerance covers it.
const (
	meanTol    = 2e-3
	stdRelTol  = 2e-2
	logPRelTol = 3e-4
)

func testModel(t testing.TB, k, d, lt, lw int, seed uint64) (*gllim.Model, *rand.Rand) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	p := train.RandomParams(k, d, lt, lw, rng)
	outs := make([]gllim.Output, lt)
	for i := range outs {
		outs[i] = gllim.Output{Name: string(rune('a' + i)), Unit: "deg", Mean: 10 * float64(i), Scale: 1 + float64(i)}
	}
	return &gllim.Model{Params: p, Outputs: outs, Features: gllim.FeatureRecipe{Name: "synthetic", Version: 1}}, rng
}

// round32 returns a copy of p with every value rounded to float32, as a
// model file stores it: the float64 reference then sees the same model.
func round32(p *gllim.Params) *gllim.Params {
	q := p.Clone()
	for _, a := range [][]float64{q.Pi, q.C, q.Gamma, q.A, q.B, q.Sigma} {
		for i, v := range a {
			a[i] = float64(float32(v))
		}
	}
	return q
}

func TestForwardMatchesFloat64Reference(t *testing.T) {
	cases := []struct {
		k, d, lt, lw int
		spread       float64 // below 1, pulls every component towards the first so they overlap
	}{{1, 20, 1, 0, 1}, {5, 200, 3, 2, 1}, {8, 500, 2, 4, 1}, {6, 300, 3, 2, 0.02}, {10, 1888, 5, 4, 0.002}}
	for _, c := range cases {
		m, rng := testModel(t, c.k, c.d, c.lt, c.lw, uint64(c.d))
		overlap(m.Params, c.spread)
		f, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := train.NewForward64(round32(m.Params))
		if err != nil {
			t.Fatal(err)
		}
		_, _, ys, _ := train.Sample(m.Params, 200, rng)
		pr := f.NewPredictor()
		got := f.NewPrediction()
		y32 := make([]float32, c.d)
		worst := [3]float64{}
		mixed := 0 // samples whose largest weight ν_k is below 0.99
		for i := 0; i < 200; i++ {
			y := ys.RawRowView(i)
			for j, v := range y {
				y32[j] = float32(v)
			}
			// The reference sees the same float32-rounded input.
			y64 := make([]float64, c.d)
			for j, v := range y32 {
				y64[j] = float64(v)
			}
			pr.Predict(&got, y32)
			x, nu := ref.Predict(y64)
			if slices.Max(nu) < 0.99 {
				mixed++
			}
			lp := ref.LogDensities(y64)
			mx := math.Inf(-1)
			for _, v := range lp {
				mx = math.Max(mx, v)
			}
			s := 0.0
			for _, v := range lp {
				s += math.Exp(v - mx)
			}
			logP := mx + math.Log(s)
			if e := math.Abs(got.LogDensity-logP) / math.Abs(logP); e > worst[2] {
				worst[2] = e
			}
			// Predictive covariance of t (standardised), from the mixture.
			for a, o := range m.Outputs {
				e := math.Abs((got.Mean[a]-o.Mean)/o.Scale - x[a])
				worst[0] = math.Max(worst[0], e)
				v := 0.0
				for k := range nu {
					xk := refComponentMean(ref, k, y64)
					ss := refSstar(ref, k)
					v += nu[k] * (ss[a] + (xk[a]-x[a])*(xk[a]-x[a]))
				}
				if e := math.Abs(got.Std(a)/o.Scale-math.Sqrt(v)) / math.Sqrt(v); e > worst[1] {
					worst[1] = e
				}
			}
		}
		t.Logf("K=%d D=%d Lt=%d Lw=%d: %d/200 mixed; worst mean error %.2g (std units), std rel %.2g, log p(y) rel %.2g",
			c.k, c.d, c.lt, c.lw, mixed, worst[0], worst[1], worst[2])
		if c.spread < 1 && mixed < 20 {
			t.Errorf("K=%d D=%d: only %d/200 samples mix components: the case does not test the weights", c.k, c.d, mixed)
		}
		if worst[0] > meanTol || worst[1] > stdRelTol || worst[2] > logPRelTol {
			t.Errorf("K=%d D=%d: float32 vs float64: mean %.2g (tol %g), std %.2g (tol %g), log p rel %.2g (tol %g)",
				c.k, c.d, worst[0], meanTol, worst[1], stdRelTol, worst[2], logPRelTol)
		}
	}
}

func refComponentMean(f *train.Forward64, k int, y []float64) []float64 { return f.ComponentMean(k, y) }
func refSstar(f *train.Forward64, k int) []float64                      { return f.SstarDiag(k) }

// A prediction in steady state allocates nothing.
func TestPredictDoesNotAllocate(t *testing.T) {
	m, rng := testModel(t, 6, 300, 3, 2, 1)
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ys, _ := train.Sample(m.Params, 1, rng)
	y := make([]float32, 300)
	for i, v := range ys.RawRowView(0) {
		y[i] = float32(v)
	}
	pr := f.NewPredictor()
	dst := f.NewPrediction()
	if a := testing.AllocsPerRun(100, func() { pr.Predict(&dst, y) }); a != 0 {
		t.Errorf("Predict allocates %.1f times per call", a)
	}
}

func TestPredictBatchEqualsSingle(t *testing.T) {
	m, rng := testModel(t, 4, 64, 2, 1, 2)
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ys, _ := train.Sample(m.Params, 7, rng)
	batch := make([][]float32, 7)
	for i := range batch {
		batch[i] = make([]float32, 64)
		for j, v := range ys.RawRowView(i) {
			batch[i][j] = float32(v)
		}
	}
	dst := make([]gllim.Prediction, 7)
	pr := f.NewPredictor()
	pr.PredictBatch(dst, batch)
	one := f.NewPrediction()
	for i, y := range batch {
		pr.Predict(&one, y)
		for j := range one.Mean {
			if one.Mean[j] != dst[i].Mean[j] {
				t.Fatalf("face %d output %d: batch %g, single %g", i, j, dst[i].Mean[j], one.Mean[j])
			}
		}
	}
}

func TestPredictPanicsOnWrongDimension(t *testing.T) {
	m, _ := testModel(t, 2, 10, 1, 0, 3)
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for a feature vector of the wrong size")
		}
	}()
	p := f.NewPrediction()
	f.NewPredictor().Predict(&p, make([]float32, 11))
}

// overlap pulls c^t_k, A_k and b_k of every component towards component 0's
// (and Σ_k) by the factor spread, so that the components overlap in y and the weights
// ν_k mix instead of picking one component.
func overlap(p *gllim.Params, spread float64) {
	for k := 1; k < p.K; k++ {
		for _, a := range []func(int) []float64{p.Ck, p.Ak, p.Bk, p.SigmaK} {
			dst, src := a(k), a(0)
			for i := range dst {
				dst[i] = src[i] + spread*(dst[i]-src[i])
			}
		}
	}
}
