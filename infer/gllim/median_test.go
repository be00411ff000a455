package gllim_test

import (
	"math"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
)

// medianRef is the median of Σ W_j N(Mu_j, Sd_j²) by plain bisection on its
// distribution function, written with math.Erf (not Erfc) and no Newton
// step: slow, and independent of MixtureMedian's iteration.
func medianRef(c []gllim.Component) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range c {
		lo, hi = math.Min(lo, g.Mu-40*g.Sd), math.Max(hi, g.Mu+40*g.Sd)
	}
	for range 200 {
		mid := (lo + hi) / 2
		if cdfRef(c, mid) < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// cdfRef is the mixture's distribution function at x, its weights
// normalised.
func cdfRef(c []gllim.Component, x float64) float64 {
	s, total := 0.0, 0.0
	for _, g := range c {
		total += g.W
		s += g.W * (1 + math.Erf((x-g.Mu)/(g.Sd*math.Sqrt2))) / 2
	}
	return s / total
}

// Mixtures whose medians are known in closed form.
func TestMixtureMedianKnown(t *testing.T) {
	cases := []struct {
		name string
		c    []gllim.Component
		want float64
	}{
		{"one Gaussian", []gllim.Component{{W: 3, Mu: -7.5, Sd: 2}}, -7.5},
		{"two equal, far apart", []gllim.Component{{W: 1, Mu: 0, Sd: 1}, {W: 1, Mu: 10, Sd: 1}}, 5},
		// 0.75 N(0,1) + 0.25 N(100,1): Φ(m) = 2/3 at the median, m = 0.430727...
		{"three to one, far apart", []gllim.Component{{W: 0.75, Mu: 0, Sd: 1}, {W: 0.25, Mu: 100, Sd: 1}}, 0.4307272992954576},
		{"weights that do not sum to 1, one ignored", []gllim.Component{{W: 6, Mu: 0, Sd: 1}, {W: 2, Mu: 100, Sd: 1}, {W: 0, Mu: -1e6, Sd: 1}}, 0.4307272992954576},
		{"a point mass", []gllim.Component{{W: 1, Mu: 4, Sd: 0}}, 4},
	}
	for _, c := range cases {
		if got := gllim.MixtureMedian(c.c); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: median %.12g, want %.12g", c.name, got, c.want)
		}
	}
	if got := gllim.MixtureMedian(nil); !math.IsNaN(got) {
		t.Errorf("empty mixture: median %g, want NaN", got)
	}
}

// The median of a prediction's marginal, from the float32 forward model,
// matches the median of the float64 reference's mixture (its weights,
// component means A*_k y + b*_k and Σ*_k) found by bisection, within the
// forward model's mean tolerance. At T = 1e4 the weights are near the
// priors, a broad mixture: most medians there must differ from the mean,
// or the case would not tell the two apart.
func TestMarginalMedianMatchesFloat64Reference(t *testing.T) {
	m, ref, ys := overlapped(t, 8, 300, 5, 0.5)
	y32 := make([]float32, 300)
	y64 := make([]float64, 300)
	for _, temp := range []float64{1, 1e4} {
		m.Temperature = temp
		ref.Temperature = temp
		f, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		pr, got := f.NewPredictor(), f.NewPrediction()
		var comps []gllim.Component
		worst, apart := 0.0, 0
		for n := 0; n < 100; n++ {
			for j, v := range ys.RawRowView(n) {
				y32[j] = float32(v)
				y64[j] = float64(y32[j])
			}
			pr.Predict(&got, y32)
			_, nu := ref.Predict(y64)
			for i, o := range m.Outputs {
				var want []gllim.Component
				for k := range nu {
					xk, sd := ref.ComponentMean(k, y64), ref.SstarDiag(k)
					want = append(want, gllim.Component{W: nu[k], Mu: o.Mean + o.Scale*xk[i], Sd: o.Scale * math.Sqrt(sd[i])})
				}
				wm := medianRef(want)
				comps = got.Marginal(comps[:0], i, 1)
				gm := gllim.MixtureMedian(comps)
				worst = math.Max(worst, math.Abs(gm-wm)/o.Scale)
				if math.Abs(gm-got.Mean[i]) > 10*meanTol*o.Scale {
					apart++
				}
			}
		}
		t.Logf("T=%g: worst median error %.2g (standardised); %d of 300 medians 10 tolerances from the mean", temp, worst, apart)
		if worst > meanTol {
			t.Errorf("T=%g: median float32 vs float64 reference: %.2g standardised, want ≤ %g", temp, worst, meanTol)
		}
		if temp == 1e4 && apart == 0 {
			t.Errorf("T=%g: every median equals its mean: the mixtures tested do not tell the two apart", temp)
		}
	}
}

// An ensemble's marginal is its members' equal mixture: its weights sum to
// the scale asked for, and its median is a median of the reference's
// mixture of the members. Members that disagree leave a plateau of F at ½
// between them, on which any point is a median, so the check is F there.
func TestEnsembleMarginal(t *testing.T) {
	m, rng := ensemble(t, 2, 5, 200, 2, 2, 11)
	m2 := m.Members[0]
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]*train.Forward64, 2)
	for i, p := range []*gllim.Params{m.Params, m2} {
		if refs[i], err = train.NewForward64(round32(p)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, ys, _ := train.Sample(m.Params, 20, rng)
	y32 := make([]float32, 200)
	y64 := make([]float64, 200)
	pr, got := f.NewPredictor(), f.NewPrediction()
	for n := 0; n < 20; n++ {
		for j, v := range ys.RawRowView(n) {
			y32[j] = float32(v)
			y64[j] = float64(y32[j])
		}
		pr.Predict(&got, y32)
		for i, o := range m.Outputs {
			c := got.Marginal(nil, i, 2)
			sum := 0.0
			for _, g := range c {
				sum += g.W
			}
			if math.Abs(sum-2) > 1e-9 {
				t.Fatalf("output %d: weights sum to %g, want 2 (scaled by w = 2)", i, sum)
			}
			var want []gllim.Component
			for _, r := range refs {
				_, nu := r.Predict(y64)
				for k := range nu {
					xk, sd := r.ComponentMean(k, y64), r.SstarDiag(k)
					want = append(want, gllim.Component{W: nu[k] / 2, Mu: o.Mean + o.Scale*xk[i], Sd: o.Scale * math.Sqrt(sd[i])})
				}
			}
			if F := cdfRef(want, gllim.MixtureMedian(c)); math.Abs(F-0.5) > 1e-3 {
				t.Errorf("face %d output %d: the reference's F at the ensemble's median is %.4f, want 0.5", n, i, F)
			}
		}
	}
}
