package gllim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
	"gonum.org/v1/gonum/mat"
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
			x, v, logP, nu := refMoments(ref, y64, c.lt)
			if slices.Max(nu) < 0.99 {
				mixed++
			}
			compare(&worst, m.Outputs, &got, x, v, logP)
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

// refMoments computes with the float64 reference the mixture's mean and
// predictive variance of each of the lt outputs (standardised units),
// log p(y) and the weights ν_k.
func refMoments(ref *train.Forward64, y []float64, lt int) (mean, variance []float64, logP float64, nu []float64) {
	x, nu := ref.Predict(y)
	lp := ref.LogDensities(y)
	mx := slices.Max(lp)
	s := 0.0
	for _, v := range lp {
		s += math.Exp(v - mx)
	}
	variance = make([]float64, lt)
	for k := range nu {
		xk := ref.ComponentMean(k, y)
		ss := ref.SstarDiag(k)
		for a := range variance {
			variance[a] += nu[k] * (ss[a] + (xk[a]-x[a])*(xk[a]-x[a]))
		}
	}
	return x[:lt], variance, mx + math.Log(s), nu
}

// compare records in worst the float32 prediction's largest errors against
// the reference: mean (standardised units), std (relative), log p (relative).
func compare(worst *[3]float64, outs []gllim.Output, got *gllim.Prediction, mean, variance []float64, logP float64) {
	worst[2] = math.Max(worst[2], math.Abs(got.LogDensity-logP)/math.Abs(logP))
	for a, o := range outs {
		worst[0] = math.Max(worst[0], math.Abs((got.Mean[a]-o.Mean)/o.Scale-mean[a]))
		sd := math.Sqrt(variance[a])
		worst[1] = math.Max(worst[1], math.Abs(got.Std(a)/o.Scale-sd)/sd)
	}
}

// An ensemble predicts the equal mixture of its members: the mean of their
// means, the mean of their variances plus the spread of their means, and
// the mean of their densities, each from the float64 reference. The members
// here disagree widely (independent random models), so the spread term
// dominates and is checked.
func TestEnsembleMatchesFloat64Reference(t *testing.T) {
	const M, K, D, Lt, Lw = 3, 5, 200, 3, 2
	m, rng := ensemble(t, M, K, D, Lt, Lw, 21)
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	if f.Members() != M {
		t.Fatalf("forward model has %d members, want %d", f.Members(), M)
	}
	var refs []*train.Forward64
	for _, p := range m.Ensemble() {
		r, err := train.NewForward64(round32(p))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	_, _, ys, _ := train.Sample(m.Params, 100, rng)
	pr, got := f.NewPredictor(), f.NewPrediction()
	y32, y64 := make([]float32, D), make([]float64, D)
	var worst [3]float64
	spread := 0.0 // largest share of the variance due to the members' disagreement
	for i := 0; i < 100; i++ {
		for j, v := range ys.RawRowView(i) {
			y32[j] = float32(v)
			y64[j] = float64(y32[j])
		}
		pr.Predict(&got, y32)
		mean, second := make([]float64, Lt), make([]float64, Lt)
		lps := make([]float64, M)
		for mi, r := range refs {
			x, v, lp, _ := refMoments(r, y64, Lt)
			lps[mi] = lp
			for a := range mean {
				mean[a] += x[a] / M
				second[a] += (v[a] + x[a]*x[a]) / M
			}
		}
		variance := make([]float64, Lt)
		for a := range variance {
			variance[a] = second[a] - mean[a]*mean[a]
			within := 0.0
			for _, r := range refs {
				_, v, _, _ := refMoments(r, y64, Lt)
				within += v[a] / M
			}
			spread = math.Max(spread, 1-within/variance[a])
		}
		mx := slices.Max(lps)
		s := 0.0
		for _, lp := range lps {
			s += math.Exp(lp - mx)
		}
		compare(&worst, m.Outputs, &got, mean, variance, mx+math.Log(s/M))
	}
	t.Logf("M=%d: worst mean error %.2g, std rel %.2g, log p rel %.2g; members' spread up to %.0f %% of the variance",
		M, worst[0], worst[1], worst[2], 100*spread)
	if spread < 0.5 {
		t.Errorf("the members agree too well (spread ≤ %.0f %% of the variance): the case does not test the combination", 100*spread)
	}
	if worst[0] > meanTol || worst[1] > stdRelTol || worst[2] > logPRelTol {
		t.Errorf("ensemble float32 vs float64: mean %.2g (tol %g), std %.2g (tol %g), log p rel %.2g (tol %g)",
			worst[0], meanTol, worst[1], stdRelTol, worst[2], logPRelTol)
	}
}

// A prediction in steady state allocates nothing.
func TestPredictDoesNotAllocate(t *testing.T) {
	for _, members := range []int{1, 3} {
		m, rng := ensemble(t, members, 6, 300, 3, 2, 1)
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
			t.Errorf("%d members: Predict allocates %.1f times per call", members, a)
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

// overlapped returns a model of k components in d dimensions (3 outputs,
// 2 latent) pulled together by spread (overlap), its float64 reference, and
// 100 feature vectors drawn from it.
func overlapped(t *testing.T, k, d int, seed uint64, spread float64) (*gllim.Model, *train.Forward64, *mat.Dense) {
	t.Helper()
	m, rng := testModel(t, k, d, 3, 2, seed)
	overlap(m.Params, spread)
	ref, err := train.NewForward64(round32(m.Params))
	if err != nil {
		t.Fatal(err)
	}
	_, _, ys, _ := train.Sample(m.Params, 100, rng)
	return m, ref, ys
}

// Tempered weights, ν_k ∝ π_k p(y | k)^(1/T), agree with the float64
// reference on components that overlap; the density is not tempered; and
// a very high temperature leaves the prior weights π_k.
func TestTemperatureMatchesFloat64Reference(t *testing.T) {
	m, ref, ys := overlapped(t, 6, 300, 77, 0.05)
	y32 := make([]float32, 300)
	y64 := make([]float64, 300)
	for _, temp := range []float64{1, 3, 30} {
		m.Temperature = temp
		f, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		ref.Temperature = temp
		pr, got := f.NewPredictor(), f.NewPrediction()
		worst := [3]float64{}
		spread := 0.0 // how far the tempered weights are from one-hot
		for i := 0; i < 100; i++ {
			for j, v := range ys.RawRowView(i) {
				y32[j] = float32(v)
				y64[j] = float64(y32[j])
			}
			pr.Predict(&got, y32)
			x, v, logP, nu := refMoments(ref, y64, 3)
			spread += 1 - slices.Max(nu)
			compare(&worst, m.Outputs, &got, x, v, logP)
		}
		t.Logf("T=%g: mean weight outside the largest %.3f; worst mean error %.2g, std rel %.2g, log p rel %.2g", temp, spread/100, worst[0], worst[1], worst[2])
		if worst[0] > meanTol || worst[1] > stdRelTol || worst[2] > logPRelTol {
			t.Errorf("T=%g: float32 vs float64: mean %.2g, std %.2g, log p rel %.2g", temp, worst[0], worst[1], worst[2])
		}
	}
	m.Temperature = 1e4
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	ref.Temperature = 1e4
	for j, v := range ys.RawRowView(0) {
		y64[j] = float64(float32(v))
	}
	_, w := ref.Predict(y64)
	for k, p := range m.Params.Pi {
		if math.Abs(w[k]-p) > 0.05 {
			t.Errorf("T=1e4: weight %d is %.3f, prior %.3f", k, w[k], p)
		}
	}
	if _, err := f.WithTemperature(0.5); err == nil {
		t.Error("temperature 0.5 accepted")
	}
	m.Temperature = -1
	if err := m.Validate(); err == nil {
		t.Error("negative temperature validated")
	}
}

// A model written with the half or q8 encoding (A read back exactly
// binary16 per component) may keep its weights as halves in memory where the CPU
// widens them (gllim.VectorKernels says which kernels run): its forward
// pass still matches the float64 reference of the same (read-back)
// parameters within the float32 tolerances, and the vector and Go kernels
// agree on it.
func TestHalfWeightsMatchFloat64Reference(t *testing.T) {
	for _, enc := range []gllim.Encoding{gllim.Half, gllim.Q8} {
		halfWeightsMatch(t, enc)
	}
}

// halfWeightsMatch is TestHalfWeightsMatchFloat64Reference for a file
// written in encoding enc (half, or q8, whose A is read back as halves).
func halfWeightsMatch(t *testing.T, enc gllim.Encoding) {
	for _, c := range []struct {
		k, d, lt, lw int
		spread       float64
	}{{5, 200, 3, 2, 1}, {10, 1888, 5, 4, 0.002}, {4, 67, 2, 2, 1}} {
		m, rng := testModel(t, c.k, c.d, c.lt, c.lw, uint64(c.d)+7)
		overlap(m.Params, c.spread)
		b, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: enc})
		if err != nil {
			t.Fatal(err)
		}
		back, err := gllim.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		f, err := gllim.NewForward(back)
		if err != nil {
			t.Fatal(err)
		}
		if f.HalfWeights() != (gllim.HalfWeightsSupported() && c.lt+c.lw >= 4) {
			t.Errorf("%s, K=%d D=%d: half weights %v where this CPU supports them: %v", enc, c.k, c.d, f.HalfWeights(), gllim.HalfWeightsSupported())
		}
		ref, err := train.NewForward64(round32(back.Params))
		if err != nil {
			t.Fatal(err)
		}
		_, _, ys, _ := train.Sample(back.Params, 100, rng)
		pr, got, plain := f.NewPredictor(), f.NewPrediction(), f.NewPrediction()
		y32 := make([]float32, c.d)
		y64 := make([]float64, c.d)
		worst, kernels := [3]float64{}, 0.0
		for i := 0; i < 100; i++ {
			for j, v := range ys.RawRowView(i) {
				y32[j] = float32(v)
				y64[j] = float64(y32[j])
			}
			pr.Predict(&got, y32)
			x, v, logP, _ := refMoments(ref, y64, c.lt)
			compare(&worst, back.Outputs, &got, x, v, logP)
			prev := gllim.UseVectorKernels(false)
			pr.Predict(&plain, y32)
			gllim.UseVectorKernels(prev)
			for a := range got.Mean {
				kernels = math.Max(kernels, math.Abs(got.Mean[a]-plain.Mean[a])/back.Outputs[a].Scale)
			}
		}
		t.Logf("%s file, K=%d D=%d half weights (%s): mean %.2g, std rel %.2g, log p rel %.2g; vector vs Go kernels %.2g",
			enc, c.k, c.d, gllim.VectorKernels(), worst[0], worst[1], worst[2], kernels)
		if worst[0] > meanTol || worst[1] > stdRelTol || worst[2] > logPRelTol || kernels > meanTol {
			t.Errorf("%s file, K=%d D=%d: half weights vs float64: mean %.2g, std %.2g, log p %.2g, kernels %.2g", enc, c.k, c.d, worst[0], worst[1], worst[2], kernels)
		}
	}
}
