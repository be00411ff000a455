package gllim

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Forward is the precomputed float32 forward model θ* of a hybrid GLLiM
// (paper eqs. direct1–direct6, docs/method.md §4), or of an ensemble of them. It
// is immutable and safe for concurrent use; each goroutine predicts through
// its own Predictor.
type Forward struct {
	K, D, Lt, L int
	outputs     []Output
	members     []member
	invT        float64 // 1/temperature of the mixture weights
	// The input projection (Model.Input), float32; nil without one.
	// In is the length of the feature vectors read: D without one.
	In           int
	pmean, pbase []float32 // In; D × In
}

// member is one model's θ*.
type member struct {
	rows []float32 // K·L × D: B_k = A_kᵀ Σ_k⁻¹, component after component (nil with half)
	// half, where A is exactly binary16 × a power-of-two scale per
	// component and the CPU widens halves (halfWeights): K·L × D, A_kᵀ as
	// binary16, and ascale[k] its scale; B_k r = ascale_k · half · (r ⊙ s).
	half   []uint16
	ascale []float32
	cstar  []float32 // K × D: c*_k
	s      []float32 // K × D: 1/σ_kd

	sstar []float64 // K × L × L: Σ*_k
	m     []float64 // K × L: m_k = c_k = [c^t_k ; 0] = A*_k c*_k + b*_k
	cst   []float64 // K: log π_k − ½(D log 2π + log|Γ*_k|)
	logPi []float64 // K: log π_k
}

// NewForward derives the forward model of m. The parameters are first
// rounded to float32, as a model file stores them, so a model derived from a
// trainer's float64 parameters and one loaded from the file it wrote predict
// identically. The derivation itself is in float64.
func NewForward(m *Model) (*Forward, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	p := m.Params
	f := &Forward{
		K: p.K, D: p.D, Lt: p.Lt, L: p.L(),
		outputs: append([]Output(nil), m.Outputs...),
		invT:    1,
	}
	if t := m.Temperature; t != 0 {
		if !(t >= 1 && t <= MaxTemperature) {
			return nil, fmt.Errorf("gllim: temperature %g not in [1, %g]", t, float64(MaxTemperature))
		}
		f.invT = 1 / t
	}
	f.In = p.D
	if in := m.Input; in != nil {
		f.In = in.In()
		f.pmean, f.pbase = make([]float32, len(in.Mean)), make([]float32, len(in.Basis))
		for i, v := range in.Mean {
			f.pmean[i] = float32(v)
		}
		for i, v := range in.Basis {
			f.pbase[i] = float32(v)
		}
	}
	for i, q := range m.Ensemble() {
		mb, err := newMember(q)
		if err != nil {
			if len(m.Members) > 0 {
				err = fmt.Errorf("gllim: ensemble member %d: %w", i+1, err)
			}
			return nil, err
		}
		f.members = append(f.members, mb)
	}
	return f, nil
}

// Members is the number of models in the ensemble (1: a single model).
func (f *Forward) Members() int { return len(f.members) }

// MaxTemperature bounds Model.Temperature (and the configuration's
// model.temperature): beyond it the weights are all but uniform, whatever
// the features.
const MaxTemperature = 1e4

// WithTemperature returns a copy of f whose mixture weights are tempered by
// t ≥ 1 (see Model.Temperature); it shares f's weights.
func (f *Forward) WithTemperature(t float64) (*Forward, error) {
	if !(t >= 1 && t <= MaxTemperature) {
		return nil, fmt.Errorf("gllim: temperature %g not in [1, %g]", t, float64(MaxTemperature))
	}
	g := *f
	g.invT = 1 / t
	return &g, nil
}

// newMember derives one model's θ*.
func newMember(p *Params) (member, error) {
	K, D, Lt, Lw := p.K, p.D, p.Lt, p.Lw
	L := Lt + Lw
	f := member{
		cstar: make([]float32, K*D),
		s:     make([]float32, K*D),
		sstar: make([]float64, K*L*L),
		m:     make([]float64, K*L),
		cst:   make([]float64, K),
		logPi: make([]float64, K),
	}
	r32 := func(x float64) float64 { return float64(float32(x)) }
	if halfWeights && L >= 4 {
		f.half, f.ascale = halfRows(p)
	}
	if f.half == nil {
		f.rows = make([]float32, K*L*D)
	}

	sigma := make([]float64, D)
	gam := make([]float64, Lt*Lt)
	ginv := make([]float64, L*L) // Γ_k⁻¹ = blockdiag(Γ^t_k⁻¹, I)
	prec := make([]float64, L*L) // Γ_k⁻¹ + A_kᵀ Σ_k⁻¹ A_k, then its factor
	ck := make([]float64, L)     // c_k = [c^t_k ; 0]
	for k := 0; k < K; k++ {
		A := p.Ak(k)
		b := p.Bk(k)
		for i := range ck {
			ck[i] = 0
		}
		for i, v := range p.Ck(k) {
			ck[i] = r32(v)
		}
		for d := 0; d < D; d++ { // c*_k = A_k c_k + b_k  (direct1)
			sigma[d] = r32(p.SigmaK(k)[d])
			v := r32(b[d])
			for l := 0; l < L; l++ {
				v += r32(A[d*L+l]) * ck[l]
			}
			f.cstar[k*D+d] = float32(v)
		}
		// Γ^t_k⁻¹ and log|Γ^t_k|.
		for i, v := range p.GammaK(k) {
			gam[i] = r32(v)
		}
		if !cholesky(gam, Lt) {
			return member{}, fmt.Errorf("gllim: component %d: gamma is not positive definite", k)
		}
		logDetGamma := cholLogDet(gam, Lt)
		for i := range ginv {
			ginv[i] = 0
		}
		gi := make([]float64, Lt*Lt)
		cholInverse(gi, gam, Lt)
		for i := 0; i < L; i++ {
			for j := 0; j < L; j++ {
				switch {
				case i < Lt && j < Lt:
					ginv[i*L+j] = gi[i*Lt+j]
				case i == j:
					ginv[i*L+j] = 1
				}
			}
		}
		// prec = Γ⁻¹ + Aᵀ Σ⁻¹ A;  B_k = Aᵀ Σ⁻¹ (rows).
		copy(prec, ginv)
		logSigma := 0.0
		for d := 0; d < D; d++ {
			inv := 1 / sigma[d]
			logSigma += math.Log(sigma[d])
			f.s[k*D+d] = float32(inv)
			row := A[d*L : (d+1)*L]
			for i := 0; i < L; i++ {
				ai := r32(row[i]) * inv
				if f.rows != nil {
					f.rows[(k*L+i)*D+d] = float32(ai)
				}
				for j := 0; j <= i; j++ {
					prec[i*L+j] += ai * r32(row[j])
				}
			}
		}
		for i := 0; i < L; i++ {
			for j := 0; j < i; j++ {
				prec[j*L+i] = prec[i*L+j]
			}
		}
		if !cholesky(prec, L) {
			return member{}, fmt.Errorf("gllim: component %d: Γ⁻¹ + AᵀΣ⁻¹A is not positive definite", k)
		}
		logDetPrec := cholLogDet(prec, L)
		ss := f.sstar[k*L*L : (k+1)*L*L]
		cholInverse(ss, prec, L) // Σ*_k (direct6)
		// A*_k y + b*_k (direct4, direct5) at y = c*_k is
		// Σ*_k (AᵀΣ⁻¹(A c_k + b_k) + Γ⁻¹c_k − AᵀΣ⁻¹b_k) = Σ*_k Σ*_k⁻¹ c_k = c_k,
		// so x̂_k = A*_k y + b*_k = c_k + Σ*_k B_k (y − c*_k): m_k = c_k.
		copy(f.m[k*L:(k+1)*L], ck)
		// log|Γ*_k| = log|Σ_k| + log|Γ_k| − log|Σ*_k|  (matrix determinant lemma on direct2)
		logDetGammaStar := logSigma + logDetGamma + logDetPrec
		f.logPi[k] = math.Log(r32(p.Pi[k]))
		f.cst[k] = f.logPi[k] - 0.5*(float64(D)*math.Log(2*math.Pi)+logDetGammaStar)
	}
	return f, nil
}

// Outputs describes the predicted outputs, in order.
func (f *Forward) Outputs() []Output { return f.outputs }

// Prediction is the forward model's answer for one feature vector, in the
// outputs' natural units.
type Prediction struct {
	Mean []float64 // Lt: E[t | y]
	Cov  []float64 // Lt×Lt: Cov[t | y], the mixture's predictive covariance
	// LogDensity is log p(y) under the model: low for inputs unlike the
	// training features.
	LogDensity float64

	// The mixture behind Mean and Cov (Marginal): the forward model, each
	// member's weights ν_k (M × K) and means x̂_k on the t block (M × K × Lt),
	// in standardised units.
	f  *Forward
	nu []float64
	xk []float64
}

// Std returns the predictive standard deviation of output i.
func (p *Prediction) Std(i int) float64 {
	n := len(p.Mean)
	return math.Sqrt(math.Max(p.Cov[i*n+i], 0))
}

// NewPrediction allocates a Prediction sized for f.
func (f *Forward) NewPrediction() Prediction {
	M := len(f.members)
	return Prediction{Mean: make([]float64, f.Lt), Cov: make([]float64, f.Lt*f.Lt),
		f: f, nu: make([]float64, M*f.K), xk: make([]float64, M*f.K*f.Lt)}
}

// Predictor holds the scratch space of one goroutine's predictions.
type Predictor struct {
	f    *Forward
	r    []float32 // D: y − c*_k; with half weights u = (y − c*_k) ⊙ s_k, which the half kernels need instead
	v    []float32 // L: B_k (y − c*_k)
	z    []float64 // L
	logv []float64 // K
	// Ensembles only: one member's answer, and the members' log p(y).
	mean, cov []float64
	logp      []float64
	// With an input projection: y − μ (In) and the projected vector (D).
	yc, zp []float32
}

// NewPredictor returns a Predictor for f. It is not safe for concurrent use.
func (f *Forward) NewPredictor() *Predictor {
	p := &Predictor{
		f:    f,
		r:    make([]float32, f.D),
		v:    make([]float32, f.L),
		z:    make([]float64, f.L),
		logv: make([]float64, f.K),
	}
	if len(f.members) > 1 {
		p.mean, p.cov = make([]float64, f.Lt), make([]float64, f.Lt*f.Lt)
		p.logp = make([]float64, len(f.members))
	}
	if f.pbase != nil {
		p.yc, p.zp = make([]float32, f.In), make([]float32, f.D)
	}
	return p
}

// project returns W (y − μ) for a model with an input projection (the
// Predictor's buffer, valid until its next prediction), y itself without
// one: D dot products of length In (matVec's kernels).
func (p *Predictor) project(y []float32) []float32 {
	f := p.f
	if f.pbase == nil {
		return y
	}
	for d, v := range y {
		p.yc[d] = v - f.pmean[d]
	}
	matVec(p.zp, f.pbase, p.yc, f.In)
	return p.zp
}

// Predict computes E[t | y] and Cov[t | y] into dst (docs/method.md §4). For each
// member of the model:
//
//	r_k    = y − c*_k
//	q_k    = Σ_d r_kd² / σ_kd
//	v_k    = B_k r_k,  z_k = Σ*_k v_k          K·L dot products of length D
//	maha_k = q_k − v_kᵀ z_k                   (Woodbury on Γ*_k, direct2)
//	log ν_k = log π_k + (const_k − log π_k − ½ maha_k) / T,  normalised by logsumexp
//	x̂_k    = A*_k y + b*_k = c_k + z_k        (direct4, direct5)
//	x̂      = Σ_k ν_k x̂_k,  Cov = Σ_k ν_k (Σ*_k + (x̂_k − x̂)(x̂_k − x̂)ᵀ)
//
// on the t block, where T is the model's temperature (1: the mixture's own
// posterior weights; see Model.Temperature). An ensemble of M members is the equal mixture of them:
// x̂ = mean of the members' x̂_m, Cov = mean of (Cov_m + (x̂_m − x̂)(x̂_m − x̂)ᵀ),
// p(y) = mean of p_m(y). The result is mapped to natural units. Taking
// y − c*_k before any product keeps float32 from cancelling large terms (B_k y
// and B_k c*_k are each far larger than their difference). In steady state
// it allocates nothing; nil slices in dst are allocated. With an input
// projection (Model.Input) y is first mapped to W (y − μ). It panics if
// len(y) != In (D without a projection).
func (p *Predictor) Predict(dst *Prediction, y []float32) { p.PredictIn(dst, y, nil) }

// Components is a set of a model's components (member i's component k at
// i·K + k), the ones that carried a prediction's weight (Prediction.Heavy):
// PredictIn reads only them. The zero value, and a set of a model of more
// than 64·maxComponentWords components, hold every component.
type Components struct {
	bits [maxComponentWords]uint64
	some bool // false: every component
}

// maxComponentWords bounds the components a set can name (M·K ≤ 512).
const maxComponentWords = 8

// Has reports whether member i's component k is in c (K per member).
func (c *Components) Has(i, k, K int) bool {
	if c == nil || !c.some {
		return true
	}
	j := i*K + k
	return c.bits[j/64]&(1<<(j%64)) != 0
}

// Len is the number of components in c, of a model of n (M·K).
func (c *Components) Len(n int) int {
	if c == nil || !c.some {
		return n
	}
	m := 0
	for _, w := range c.bits {
		m += bits.OnesCount64(w)
	}
	return m
}

// Heavy returns the components whose weight ν_k in p is at least rel
// times their member's largest: the components that make its answer, all
// but a share of at most K·rel of each member's weight.
func (p *Prediction) Heavy(rel float64) Components {
	var c Components
	K := p.f.K
	if len(p.nu) > 64*maxComponentWords {
		return c
	}
	for i := 0; i*K < len(p.nu); i++ {
		nu := p.nu[i*K : (i+1)*K]
		top := slices.Max(nu)
		for k, v := range nu {
			if v >= rel*top {
				j := i*K + k
				c.bits[j/64] |= 1 << (j % 64)
			}
		}
	}
	c.some = true
	return c
}

// PredictIn is Predict on the components of in alone (nil: every one):
// the others' weights are taken as 0, and each member's weights are
// normalised over its components in the set. Where in holds the
// components that carried a nearby face's weight (Heavy), it reads that
// face's answer at a fraction of the cost (docs/method.md §4).
func (p *Predictor) PredictIn(dst *Prediction, y []float32, in *Components) {
	f := p.f
	if len(y) != f.In {
		panic(fmt.Sprintf("gllim: Predict: feature vector has %d values, model reads %d", len(y), f.In))
	}
	y = p.project(y)
	if len(dst.Mean) != f.Lt {
		dst.Mean = make([]float64, f.Lt)
	}
	if len(dst.Cov) != f.Lt*f.Lt {
		dst.Cov = make([]float64, f.Lt*f.Lt)
	}
	if M := len(f.members); len(dst.nu) != M*f.K || len(dst.xk) != M*f.K*f.Lt {
		dst.nu, dst.xk = make([]float64, M*f.K), make([]float64, M*f.K*f.Lt)
	}
	dst.f = f
	mean, cov, Lt := dst.Mean, dst.Cov, f.Lt
	if len(f.members) == 1 {
		dst.LogDensity = p.member(&f.members[0], 0, in, y, mean, cov, dst.nu, dst.xk)
	} else {
		// Accumulate the members' means and second moments, then centre.
		clear(mean)
		clear(cov)
		maxLog := math.Inf(-1)
		K := f.K
		for i := range f.members {
			lp := p.member(&f.members[i], i, in, y, p.mean, p.cov, dst.nu[i*K:(i+1)*K], dst.xk[i*K*Lt:(i+1)*K*Lt])
			p.logp[i] = lp
			maxLog = math.Max(maxLog, lp)
			for a := 0; a < Lt; a++ {
				mean[a] += p.mean[a]
				for b := 0; b < Lt; b++ {
					cov[a*Lt+b] += p.cov[a*Lt+b] + p.mean[a]*p.mean[b]
				}
			}
		}
		inv := 1 / float64(len(f.members))
		for a := range mean {
			mean[a] *= inv
		}
		for a := 0; a < Lt; a++ {
			for b := 0; b < Lt; b++ {
				cov[a*Lt+b] = cov[a*Lt+b]*inv - mean[a]*mean[b]
			}
		}
		sum := 0.0
		for _, lp := range p.logp {
			sum += math.Exp(lp - maxLog)
		}
		dst.LogDensity = maxLog + math.Log(sum*inv)
	}
	for i, o := range f.outputs {
		mean[i] = o.Mean + o.Scale*mean[i]
		for j, oj := range f.outputs {
			cov[i*Lt+j] *= o.Scale * oj.Scale
		}
	}
}

// member computes one member's E[t | y] and Cov[t | y] in standardised
// units into mean and cov, its weights ν_k into nu and its components'
// means x̂_k (t block) into xk, and returns its log p(y).
func (p *Predictor) member(mb *member, i int, in *Components, y []float32, mean, cov, nu, xk []float64) float64 {
	f := p.f
	D, L, Lt := f.D, f.L, f.Lt
	maxLog := math.Inf(-1)
	for k := 0; k < f.K; k++ {
		if !in.Has(i, k, f.K) {
			p.logv[k] = math.Inf(-1)
			clear(xk[k*Lt : (k+1)*Lt])
			continue
		}
		var q float64
		if mb.half != nil {
			// Half weights: u = r ⊙ s, the first four rows in the same
			// pass, the others from u in cache; then the scale.
			h := mb.half[k*L*D : (k+1)*L*D]
			q32, v4 := distDot4Half(p.r, y, mb.cstar[k*D:(k+1)*D], mb.s[k*D:(k+1)*D], h[:D], h[D:2*D], h[2*D:3*D], h[3*D:4*D])
			q = float64(q32)
			copy(p.v[:4], v4[:])
			matVecHalf(p.v[4:], h[4*D:], p.r, D)
			sc := mb.ascale[k]
			for i := range p.v {
				p.v[i] *= sc
			}
		} else {
			q = float64(diffSqDist(p.r, y, mb.cstar[k*D:(k+1)*D], mb.s[k*D:(k+1)*D]))
			matVec(p.v, mb.rows[k*L*D:(k+1)*L*D], p.r, D)
		}
		ss := mb.sstar[k*L*L : (k+1)*L*L]
		vz := 0.0
		for i := 0; i < L; i++ {
			zi := 0.0
			for j := 0; j < L; j++ {
				zi += ss[i*L+j] * float64(p.v[j])
			}
			p.z[i] = zi
			vz += float64(p.v[i]) * zi
		}
		for i := 0; i < Lt; i++ {
			xk[k*Lt+i] = mb.m[k*L+i] + p.z[i]
		}
		lv := mb.cst[k] - 0.5*(q-vz)
		p.logv[k] = lv
		if lv > maxLog {
			maxLog = lv
		}
	}
	// log p(y) = logsumexp_k log ν_k, untempered.
	sum := 0.0
	for _, lv := range p.logv {
		sum += math.Exp(lv - maxLog)
	}
	logp := maxLog + math.Log(sum)
	if f.invT != 1 {
		// Tempered weights: log π_k + (log ν_k − log π_k)/T.
		maxLog = math.Inf(-1)
		for k, lv := range p.logv {
			lv = mb.logPi[k] + (lv-mb.logPi[k])*f.invT
			p.logv[k] = lv
			maxLog = math.Max(maxLog, lv)
		}
	}
	sum = 0
	for k, lv := range p.logv {
		w := math.Exp(lv - maxLog)
		p.logv[k] = w
		sum += w
	}
	clear(mean)
	clear(cov)
	for k := 0; k < f.K; k++ {
		nk := p.logv[k] / sum
		nu[k] = nk
		for i := 0; i < Lt; i++ {
			mean[i] += nk * xk[k*Lt+i]
		}
	}
	for k := 0; k < f.K; k++ {
		nk := nu[k]
		if nk == 0 {
			continue
		}
		ss := mb.sstar[k*L*L : (k+1)*L*L]
		x := xk[k*Lt : (k+1)*Lt]
		for i := 0; i < Lt; i++ {
			di := x[i] - mean[i]
			for j := 0; j < Lt; j++ {
				cov[i*Lt+j] += nk * (ss[i*L+j] + di*(x[j]-mean[j]))
			}
		}
	}
	return logp
}

// keepsHalves reports whether f keeps its weights as binary16 in memory
// (a half-encoded model on a CPU whose kernels widen halves: halfWeights).
func (f *Forward) keepsHalves() bool { return f.members[0].half != nil }

// halfRows returns A_kᵀ as binary16 (K·L × D) with a power-of-two scale per
// component, if every A_k is exactly such halves (as a file written with
// the half encoding gives them), else nil.
func halfRows(p *Params) ([]uint16, []float32) {
	K, D, L := p.K, p.D, p.Lt+p.Lw
	half := make([]uint16, K*L*D)
	scales := make([]float32, K)
	for k := 0; k < K; k++ {
		A := p.Ak(k)
		big := 0.0
		for _, a := range A {
			big = math.Max(big, math.Abs(float64(float32(a))))
		}
		sc := halfScale(big)
		if float64(float32(sc)) != sc {
			return nil, nil
		}
		scales[k] = float32(sc)
		for d := 0; d < D; d++ {
			for l := 0; l < L; l++ {
				a := float64(float32(A[d*L+l]))
				h := halfBits(float32(a / sc))
				if float64(halfFloat(h))*sc != a {
					return nil, nil
				}
				half[(k*L+l)*D+d] = h
			}
		}
	}
	return half, scales
}
