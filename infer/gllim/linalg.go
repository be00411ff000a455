package gllim

import "math"

// Small dense float64 linear algebra on L×L matrices (L ≤ a dozen), used
// once per component when a forward model is derived. Row-major, in place.

// cholesky overwrites the lower triangle of the n×n symmetric matrix a with
// its Cholesky factor G (a = G Gᵀ) and zeroes the strict upper triangle.
// It reports false when a is not positive definite.
func cholesky(a []float64, n int) bool {
	for j := 0; j < n; j++ {
		s := a[j*n+j]
		for k := 0; k < j; k++ {
			s -= a[j*n+k] * a[j*n+k]
		}
		if !(s > 0) || math.IsInf(s, 0) {
			return false
		}
		d := math.Sqrt(s)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := 0; k < j; k++ {
				s -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = s / d
		}
		for i := 0; i < j; i++ {
			a[i*n+j] = 0
		}
	}
	return true
}

// cholLogDet is log|a| from the Cholesky factor G of a: 2 Σ_i log G_ii.
func cholLogDet(g []float64, n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += math.Log(g[i*n+i])
	}
	return 2 * s
}

// cholInverse writes a⁻¹ into dst from the Cholesky factor g of a:
// a⁻¹ = G⁻ᵀ G⁻¹, column by column by forward and back substitution.
func cholInverse(dst, g []float64, n int) {
	col := make([]float64, n)
	for c := 0; c < n; c++ {
		for i := range col {
			col[i] = 0
		}
		col[c] = 1
		cholSolve(col, g, n)
		for i := 0; i < n; i++ {
			dst[i*n+c] = col[i]
		}
	}
}

// cholSolve solves a z = v in place (v becomes z) from the Cholesky factor g
// of a: G u = v, then Gᵀ z = u.
func cholSolve(v, g []float64, n int) {
	for i := 0; i < n; i++ {
		s := v[i]
		for k := 0; k < i; k++ {
			s -= g[i*n+k] * v[k]
		}
		v[i] = s / g[i*n+i]
	}
	for i := n - 1; i >= 0; i-- {
		s := v[i]
		for k := i + 1; k < n; k++ {
			s -= g[k*n+i] * v[k]
		}
		v[i] = s / g[i*n+i]
	}
}
