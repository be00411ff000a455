package gllim

import "math"

// Component is one Gaussian of a one-dimensional mixture: weight W, mean
// Mu, standard deviation Sd.
type Component struct{ W, Mu, Sd float64 }

// Marginal appends to dst the predictive marginal of output i behind p (a
// Prediction filled by Predict), in the output's natural units, with its
// weights scaled by w:
//
//	p(t_i | y) = Σ_m (1/M) Σ_k ν_mk N(t_i; x̂_mki, Σ*_mk,ii)
//
// the mixture whose mean is p.Mean[i] (docs/method.md §4, paper eq. direct4–direct6;
// an ensemble of M members is their equal mixture). Components of weight 0
// are left out.
func (p *Prediction) Marginal(dst []Component, i int, w float64) []Component {
	f := p.f
	o := f.outputs[i]
	K, L, Lt := f.K, f.L, f.Lt
	w /= float64(len(f.members))
	for m := range f.members {
		ss := f.members[m].sstar
		for k := 0; k < K; k++ {
			nu := p.nu[m*K+k]
			if nu == 0 {
				continue
			}
			dst = append(dst, Component{
				W:  w * nu,
				Mu: o.Mean + o.Scale*p.xk[(m*K+k)*Lt+i],
				Sd: math.Abs(o.Scale) * math.Sqrt(ss[k*L*L+i*L+i]),
			})
		}
	}
	return dst
}

// MixtureMedian returns the median of the mixture Σ_j W_j N(Mu_j, Sd_j²)
// (the weights need not sum to 1; those ≤ 0 are ignored): the x where its
// distribution function F(x) = Σ_j W_j Φ((x − Mu_j)/Sd_j) reaches half the
// total weight. Under absolute error it is the best single answer of the
// mixture, as the mean is under squared error. It is found by Newton's
// method on F, kept inside a bracket that shrinks at every step (a step that
// would leave it bisects instead). NaN if no weight is positive.
func MixtureMedian(c []Component) float64 {
	total, mean := 0.0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range c {
		if !(g.W > 0) {
			continue
		}
		total += g.W
		mean += g.W * g.Mu
		lo = math.Min(lo, g.Mu-10*g.Sd)
		hi = math.Max(hi, g.Mu+10*g.Sd)
	}
	if total == 0 {
		return math.NaN()
	}
	half := 0.5 * total
	x := mean / total
	const invSqrt2, invSqrt2Pi = 1 / math.Sqrt2, 0.3989422804014327
	for it := 0; it < 100; it++ {
		F, dens := 0.0, 0.0
		for _, g := range c {
			if !(g.W > 0) {
				continue
			}
			if g.Sd <= 0 { // a point mass
				if x >= g.Mu {
					F += g.W
				}
				continue
			}
			z := (x - g.Mu) / g.Sd
			F += g.W * 0.5 * math.Erfc(-z*invSqrt2)
			dens += g.W * invSqrt2Pi / g.Sd * math.Exp(-0.5*z*z)
		}
		if F < half {
			lo = x
		} else {
			hi = x
		}
		if math.Abs(F-half) <= 1e-12*total || hi-lo <= 1e-12*(1+math.Abs(x)) {
			return x
		}
		next := x - (F-half)/dens
		if !(next > lo && next < hi) {
			next = 0.5 * (lo + hi)
		}
		x = next
	}
	return x
}
