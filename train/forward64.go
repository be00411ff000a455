package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/gllim"
)

// Forward64 is the forward model θ* (paper eqs. direct1–direct6) in float64
// with gonum: the reference the float32 model of package gllim is checked
// against, and the trainer's own predictor. It forms A*_k (L×D) explicitly.
type Forward64 struct {
	p        *gllim.Params
	astar    []*mat.Dense    // L×D: A*_k = Σ*_k A_kᵀ Σ_k⁻¹          (direct4)
	bstar    []*mat.VecDense // L:   b*_k = Σ*_k (Γ_k⁻¹c_k − A_kᵀΣ_k⁻¹b_k) (direct5)
	sstar    []*mat.SymDense // L×L: Σ*_k = (Γ_k⁻¹ + A_kᵀΣ_k⁻¹A_k)⁻¹     (direct6)
	cstar    []*mat.VecDense // D:   c*_k = A_k c_k + b_k              (direct1)
	bmat     []*mat.Dense    // L×D: A_kᵀ Σ_k⁻¹
	logDetGs []float64       // log|Γ*_k|, by the determinant lemma on direct2
	// Temperature of the weights in Predict (0 or 1: untempered).
	Temperature float64
}

// NewForward64 derives θ* from p.
func NewForward64(p *gllim.Params) (*Forward64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	K, D, Lt, L := p.K, p.D, p.Lt, p.L()
	f := &Forward64{p: p}
	for k := 0; k < K; k++ {
		A := mat.NewDense(D, L, append([]float64(nil), p.Ak(k)...))
		sig := p.SigmaK(k)
		gam := mat.NewSymDense(L, nil)
		for i := 0; i < L; i++ {
			for j := 0; j < L; j++ {
				if i < Lt && j < Lt {
					gam.SetSym(i, j, p.GammaK(k)[i*Lt+j])
				} else if i == j {
					gam.SetSym(i, j, 1)
				}
			}
		}
		c := mat.NewVecDense(L, nil)
		for i := 0; i < Lt; i++ {
			c.SetVec(i, p.Ck(k)[i])
		}
		var gchol mat.Cholesky
		if !gchol.Factorize(gam) {
			return nil, fmt.Errorf("train: component %d: Γ not positive definite", k)
		}
		var ginv mat.SymDense
		if err := gchol.InverseTo(&ginv); err != nil {
			return nil, err
		}
		bm := mat.NewDense(L, D, nil) // AᵀΣ⁻¹
		for d := 0; d < D; d++ {
			for l := 0; l < L; l++ {
				bm.Set(l, d, A.At(d, l)/sig[d])
			}
		}
		var prec mat.Dense
		prec.Mul(bm, A)
		prec.Add(&prec, &ginv)
		ps := mat.NewSymDense(L, nil)
		for i := 0; i < L; i++ {
			for j := 0; j < L; j++ {
				ps.SetSym(i, j, 0.5*(prec.At(i, j)+prec.At(j, i)))
			}
		}
		var pchol mat.Cholesky
		if !pchol.Factorize(ps) {
			return nil, fmt.Errorf("train: component %d: Γ⁻¹ + AᵀΣ⁻¹A not positive definite", k)
		}
		ss := mat.NewSymDense(L, nil)
		if err := pchol.InverseTo(ss); err != nil {
			return nil, err
		}
		var as mat.Dense
		as.Mul(ss, bm)
		cs := mat.NewVecDense(D, nil)
		cs.MulVec(A, c)
		cs.AddVec(cs, mat.NewVecDense(D, append([]float64(nil), p.Bk(k)...)))
		rhs := mat.NewVecDense(L, nil)
		rhs.MulVec(&ginv, c)
		var ab mat.VecDense
		ab.MulVec(bm, mat.NewVecDense(D, append([]float64(nil), p.Bk(k)...)))
		rhs.SubVec(rhs, &ab)
		bs := mat.NewVecDense(L, nil)
		bs.MulVec(ss, rhs)
		logSig := 0.0
		for _, s := range sig {
			logSig += math.Log(s)
		}
		f.astar = append(f.astar, &as)
		f.bstar = append(f.bstar, bs)
		f.sstar = append(f.sstar, ss)
		f.cstar = append(f.cstar, cs)
		f.bmat = append(f.bmat, bm)
		f.logDetGs = append(f.logDetGs, logSig+gchol.LogDet()+pchol.LogDet())
	}
	return f, nil
}

// LogDensities returns log π_k + log N(y; c*_k, Γ*_k) for every k, with
// Γ*_k = Σ_k + A_k Γ_k A_kᵀ handled by Woodbury:
// Γ*⁻¹ = Σ⁻¹ − Σ⁻¹A Σ* AᵀΣ⁻¹.
func (f *Forward64) LogDensities(y []float64) []float64 {
	p := f.p
	D := p.D
	out := make([]float64, p.K)
	diff := make([]float64, D)
	for k := range out {
		sig := p.SigmaK(k)
		floats.SubTo(diff, y, f.cstar[k].RawVector().Data)
		q := 0.0
		for d, v := range diff {
			q += v * v / sig[d]
		}
		var u, su mat.VecDense
		u.MulVec(f.bmat[k], mat.NewVecDense(D, diff))
		su.MulVec(f.sstar[k], &u)
		maha := q - mat.Dot(&u, &su)
		out[k] = math.Log(p.Pi[k]) - 0.5*(float64(D)*log2Pi+f.logDetGs[k]+maha)
	}
	return out
}

// Predict returns E[x | y] = Σ_k ν_k (A*_k y + b*_k) (all L dimensions,
// standardised units of t) and the weights ν_k, tempered by f.Temperature
// when it is set: ν_k ∝ π_k p(y | k)^(1/T).
func (f *Forward64) Predict(y []float64) (x []float64, nu []float64) {
	lp := f.LogDensities(y)
	if t := f.Temperature; t != 0 && t != 1 {
		for k := range lp {
			lpi := math.Log(f.p.Pi[k])
			lp[k] = lpi + (lp[k]-lpi)/t
		}
	}
	m := floats.Max(lp)
	z := 0.0
	for _, v := range lp {
		z += math.Exp(v - m)
	}
	L := f.p.L()
	x = make([]float64, L)
	yv := mat.NewVecDense(len(y), y)
	var xk mat.VecDense
	for k, v := range lp {
		lp[k] = math.Exp(v-m) / z
		xk.MulVec(f.astar[k], yv)
		xk.AddVec(&xk, f.bstar[k])
		floats.AddScaled(x, lp[k], xk.RawVector().Data)
	}
	return x, lp
}

// ComponentMean returns A*_k y + b*_k, component k's prediction.
func (f *Forward64) ComponentMean(k int, y []float64) []float64 {
	var xk mat.VecDense
	xk.MulVec(f.astar[k], mat.NewVecDense(len(y), y))
	xk.AddVec(&xk, f.bstar[k])
	return xk.RawVector().Data
}

// SstarDiag returns the diagonal of Σ*_k, component k's predictive covariance.
func (f *Forward64) SstarDiag(k int) []float64 {
	L := f.p.L()
	d := make([]float64, L)
	for i := range d {
		d[i] = f.sstar[k].At(i, i)
	}
	return d
}
