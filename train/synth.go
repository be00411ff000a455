package train

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/gllim"
)

// RandomParams draws a hybrid GLLiM with well-separated components, for
// tests and benchmarks: c^t_k spread over a few units, Γ^t_k random SPD of
// scale 0.3, A_k and b_k standard normal, σ_kd uniform in [0.05, 0.25].
func RandomParams(k, d, lt, lw int, rng *rand.Rand) *gllim.Params {
	p := gllim.NewParams(k, d, lt, lw)
	sum := 0.0
	for i := range p.Pi {
		p.Pi[i] = 0.5 + rng.Float64()
		sum += p.Pi[i]
	}
	for i := range p.Pi {
		p.Pi[i] /= sum
	}
	for i := range p.C {
		p.C[i] = 3 * rng.NormFloat64()
	}
	for j := 0; j < k; j++ {
		g := p.GammaK(j)
		m := make([]float64, lt*lt)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		for a := 0; a < lt; a++ {
			for b := 0; b < lt; b++ {
				s := 0.0
				for c := 0; c < lt; c++ {
					s += m[a*lt+c] * m[b*lt+c]
				}
				g[a*lt+b] = 0.3 * (s/float64(lt) + 0.2*b2f(a == b))
			}
		}
	}
	for i := range p.A {
		p.A[i] = rng.NormFloat64()
	}
	for i := range p.B {
		p.B[i] = rng.NormFloat64()
	}
	for i := range p.Sigma {
		p.Sigma[i] = 0.05 + 0.2*rng.Float64()
	}
	return p
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Sample draws n samples from p: t (n×Lt), w (n×Lw, nil if Lw = 0),
// y (n×D) and the components they came from.
func Sample(p *gllim.Params, n int, rng *rand.Rand) (t, w, y *mat.Dense, z []int) {
	K, D, Lt, Lw, L := p.K, p.D, p.Lt, p.Lw, p.L()
	t = mat.NewDense(n, Lt, nil)
	if Lw > 0 {
		w = mat.NewDense(n, Lw, nil)
	}
	y = mat.NewDense(n, D, nil)
	z = make([]int, n)
	chols := make([]*mat.Cholesky, K)
	for k := 0; k < K; k++ {
		chols[k] = mustCholesky(p.GammaK(k), Lt)
	}
	x := make([]float64, L)
	eps := make([]float64, Lt)
	for i := 0; i < n; i++ {
		u, k := rng.Float64(), 0
		for k < K-1 && u >= p.Pi[k] {
			u -= p.Pi[k]
			k++
		}
		z[i] = k
		var lo mat.TriDense
		chols[k].LTo(&lo)
		for j := range eps {
			eps[j] = rng.NormFloat64()
		}
		for a := 0; a < Lt; a++ {
			s := p.Ck(k)[a]
			for b := 0; b <= a; b++ {
				s += lo.At(a, b) * eps[b]
			}
			x[a] = s
			t.Set(i, a, s)
		}
		for a := 0; a < Lw; a++ {
			x[Lt+a] = rng.NormFloat64()
			w.Set(i, a, x[Lt+a])
		}
		A, b, sig := p.Ak(k), p.Bk(k), p.SigmaK(k)
		for d := 0; d < D; d++ {
			s := b[d] + math.Sqrt(sig[d])*rng.NormFloat64()
			for l := 0; l < L; l++ {
				s += A[d*L+l] * x[l]
			}
			y.Set(i, d, s)
		}
	}
	return t, w, y, z
}
