// Package gllim holds the parameters of a hybrid Gaussian locally-linear
// mapping (hybrid GLLiM, Deleforge et al. 2015; Drouard et al. 2017), the
// float32 forward model that turns a feature vector y ∈ R^D into a
// low-dimensional prediction, and the *.gllim model file.
//
// It is what the daemon links: it depends on the standard library only.
// Training (EM, in float64) lives in package train.
//
// Notation follows docs/method.md: x = [t ; w] ∈ R^L with observed
// t ∈ R^Lt and latent w ∈ R^Lw, y = A_k x + b_k + e_k given component k,
// e_k ~ N(0, Σ_k) with Σ_k diagonal, t | k ~ N(c^t_k, Γ^t_k), w | k ~ N(0, I).
package gllim

import (
	"fmt"
	"math"
)

// Covariance says how Σ_k is constrained.
type Covariance string

const (
	// Diagonal: D free variances per component (the default).
	Diagonal Covariance = "diagonal"
	// Isotropic: Σ_k = σ_k² I, one variance per component.
	Isotropic Covariance = "isotropic"
)

// Params are the inverse-regression parameters θ = {π_k, c^t_k, Γ^t_k, A_k,
// b_k, Σ_k}. The observed outputs t are in standardised units (see
// Model.Outputs); y is in the units the features are computed in.
// All matrices are row-major and stored flat, component after component.
type Params struct {
	K, D, Lt, Lw int

	Cov    Covariance // constraint on Σ_k
	Shared bool       // Σ_k is the same for every k

	Pi    []float64 // K: π_k
	C     []float64 // K×Lt: c^t_k
	Gamma []float64 // K×Lt×Lt: Γ^t_k
	A     []float64 // K×D×L: A_k = [A^t_k A^w_k], D rows of L
	B     []float64 // K×D: b_k
	Sigma []float64 // K×D: diagonal of Σ_k (expanded even when isotropic or shared)
}

// L is the dimension of x = [t ; w].
func (p *Params) L() int { return p.Lt + p.Lw }

// NewParams allocates zeroed parameters of the given size.
func NewParams(k, d, lt, lw int) *Params {
	l := lt + lw
	return &Params{
		K: k, D: d, Lt: lt, Lw: lw, Cov: Diagonal,
		Pi:    make([]float64, k),
		C:     make([]float64, k*lt),
		Gamma: make([]float64, k*lt*lt),
		A:     make([]float64, k*d*l),
		B:     make([]float64, k*d),
		Sigma: make([]float64, k*d),
	}
}

// Clone returns a deep copy (no slice is shared with p).
func (p *Params) Clone() *Params {
	q := *p
	q.Pi = append([]float64(nil), p.Pi...)
	q.C = append([]float64(nil), p.C...)
	q.Gamma = append([]float64(nil), p.Gamma...)
	q.A = append([]float64(nil), p.A...)
	q.B = append([]float64(nil), p.B...)
	q.Sigma = append([]float64(nil), p.Sigma...)
	return &q
}

// Ak returns the D×L matrix A_k (row-major), sharing p's storage.
func (p *Params) Ak(k int) []float64 {
	n := p.D * p.L()
	return p.A[k*n : (k+1)*n]
}

// Bk returns b_k, sharing p's storage.
func (p *Params) Bk(k int) []float64 { return p.B[k*p.D : (k+1)*p.D] }

// SigmaK returns the diagonal of Σ_k, sharing p's storage.
func (p *Params) SigmaK(k int) []float64 { return p.Sigma[k*p.D : (k+1)*p.D] }

// Ck returns c^t_k, sharing p's storage.
func (p *Params) Ck(k int) []float64 { return p.C[k*p.Lt : (k+1)*p.Lt] }

// GammaK returns Γ^t_k (Lt×Lt, row-major), sharing p's storage.
func (p *Params) GammaK(k int) []float64 {
	n := p.Lt * p.Lt
	return p.Gamma[k*n : (k+1)*n]
}

// NumFree is the number of free parameters, the n_par of the BIC
// (docs/method.md §3):
//
//	n_par = (K−1) + K·(D·L + D + Lt + Lt(Lt+1)/2) + n_Σ
//
// where n_Σ is K·D for diagonal Σ_k, K for isotropic, and D or 1 when Σ is
// shared across components. c^w = 0 and Γ^w = I are fixed and not counted.
func (p *Params) NumFree() int {
	k, d, lt, l := p.K, p.D, p.Lt, p.L()
	n := (k - 1) + k*(d*l+d+lt+lt*(lt+1)/2)
	sig := d
	if p.Cov == Isotropic {
		sig = 1
	}
	if !p.Shared {
		sig *= k
	}
	return n + sig
}

// Bounds that keep every derived quantity finite in float64 (AᵀΣ⁻¹A is at
// most D·maxMagnitude²/minSigma ≈ 1e56) and far outside any trained model.
const (
	maxMagnitude = 1e15
	minSigma     = 1e-20
)

// Validate checks sizes and that every parameter is usable: finite values,
// π on the simplex, Σ_k > 0 and Γ^t_k symmetric positive definite. It returns
// an error naming the first problem found.
func (p *Params) Validate() error {
	if p.K < 1 || p.D < 1 || p.Lt < 1 || p.Lw < 0 {
		return fmt.Errorf("gllim: dimensions K=%d D=%d Lt=%d Lw=%d: need K, D, Lt ≥ 1 and Lw ≥ 0", p.K, p.D, p.Lt, p.Lw)
	}
	switch p.Cov {
	case Diagonal, Isotropic:
	default:
		return fmt.Errorf("gllim: covariance %q is not %q or %q", p.Cov, Diagonal, Isotropic)
	}
	l := p.L()
	sizes := []struct {
		name      string
		got, want int
	}{
		{"pi", len(p.Pi), p.K},
		{"c", len(p.C), p.K * p.Lt},
		{"gamma", len(p.Gamma), p.K * p.Lt * p.Lt},
		{"A", len(p.A), p.K * p.D * l},
		{"b", len(p.B), p.K * p.D},
		{"sigma", len(p.Sigma), p.K * p.D},
	}
	for _, s := range sizes {
		if s.got != s.want {
			return fmt.Errorf("gllim: %s has %d values, want %d for K=%d D=%d Lt=%d Lw=%d", s.name, s.got, s.want, p.K, p.D, p.Lt, p.Lw)
		}
	}
	for _, s := range []struct {
		name string
		v    []float64
	}{{"pi", p.Pi}, {"c", p.C}, {"gamma", p.Gamma}, {"A", p.A}, {"b", p.B}, {"sigma", p.Sigma}} {
		for i, x := range s.v {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > maxMagnitude {
				return fmt.Errorf("gllim: %s[%d] = %v is not a finite value of magnitude at most %g", s.name, i, x, maxMagnitude)
			}
		}
	}
	sum := 0.0
	for k, pk := range p.Pi {
		if pk <= 0 {
			return fmt.Errorf("gllim: pi[%d] = %g is not positive", k, pk)
		}
		sum += pk
	}
	if math.Abs(sum-1) > 1e-4 {
		return fmt.Errorf("gllim: pi sums to %g, not 1", sum)
	}
	for i, s := range p.Sigma {
		if !(s >= minSigma) {
			return fmt.Errorf("gllim: sigma[%d] (component %d, dimension %d) = %g is below %g", i, i/p.D, i%p.D, s, minSigma)
		}
	}
	g := make([]float64, p.Lt*p.Lt)
	for k := 0; k < p.K; k++ {
		gk := p.GammaK(k)
		for i := 0; i < p.Lt; i++ {
			for j := 0; j < i; j++ {
				a, b := gk[i*p.Lt+j], gk[j*p.Lt+i]
				if math.Abs(a-b) > 1e-6*(math.Abs(a)+math.Abs(b))+1e-12 {
					return fmt.Errorf("gllim: gamma of component %d is not symmetric", k)
				}
			}
		}
		copy(g, gk)
		if !cholesky(g, p.Lt) {
			return fmt.Errorf("gllim: gamma of component %d is not positive definite", k)
		}
	}
	return nil
}
