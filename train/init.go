package train

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// initialise sets e.p for one start (docs/method.md §3, Initialisation):
//  1. k-means (k-means++ seeding) on the standardised t, with InitPCs
//     principal components of y appended, gives hard responsibilities;
//  2. one M-step with Lw = 0 fits π_k, c^t_k, Γ^t_k, A^t_k, b_k and Σ_k;
//  3. A^w_k are the top Lw principal directions of component k's residuals
//     y_n − A^t_k t_n − b_k, scaled as in probabilistic PCA, and Σ_k gives
//     up the variance they now explain.
func (e *em) initialise(seed uint64) {
	N, K := e.N, e.K
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	feat, dim := e.initFeatures(rng)
	labels := kmeans(feat, N, dim, K, rng)
	for i := range e.r {
		e.r[i] = 0
	}
	for k := range e.nk {
		e.nk[k] = 0
	}
	for n, k := range labels {
		e.r[k*N+n] = 1
		e.nk[k]++
	}
	for i := range e.muW {
		e.muW[i] = 0
	}
	for i := range e.sw {
		e.sw[i] = 0
	}
	e.mStep(0)
	if e.Lw > 0 {
		e.initLatent(labels, seed)
	}
}

// initFeatures returns the N×dim points clustered at initialisation: the
// standardised t and, if InitPCs > 0, that many principal-component scores of
// y, each scaled to unit variance like t.
func (e *em) initFeatures(rng *rand.Rand) ([]float64, int) {
	N, Lt, P := e.N, e.Lt, e.cfg.InitPCs
	dim := Lt + P
	feat := make([]float64, N*dim)
	for n := 0; n < N; n++ {
		copy(feat[n*dim:], e.t[n*Lt:(n+1)*Lt])
	}
	if P == 0 {
		return feat, dim
	}
	v := topDirections(e.y, P, 8, rng)
	var z mat.Dense
	z.Mul(e.y, v) // N×P scores (y is centred)
	for j := 0; j < P; j++ {
		sq := 0.0
		for n := 0; n < N; n++ {
			sq += z.At(n, j) * z.At(n, j)
		}
		sd := math.Sqrt(sq / float64(N))
		if sd == 0 {
			sd = 1
		}
		for n := 0; n < N; n++ {
			feat[n*dim+Lt+j] = z.At(n, j) / sd
		}
	}
	return feat, dim
}

// topDirections returns a D×p matrix whose orthonormal columns span the top
// p right singular directions of x (rows are samples), by subspace iteration
// with a few extra vectors.
func topDirections(x mat.Matrix, p, iters int, rng *rand.Rand) *mat.Dense {
	_, d := x.Dims()
	q := min(p+4, d)
	v := mat.NewDense(d, q, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < q; j++ {
			v.Set(i, j, rng.NormFloat64())
		}
	}
	orthonormalise(v)
	var z mat.Dense
	for it := 0; it < iters; it++ {
		z.Reset()
		z.Mul(x, v)
		v.Mul(x.T(), &z)
		orthonormalise(v)
	}
	// Rotate into singular directions, largest first.
	z.Reset()
	z.Mul(x, v)
	var g mat.SymDense
	g.SymOuterK(1, z.T())
	var eig mat.EigenSym
	if !eig.Factorize(&g, true) {
		return mat.DenseCopyOf(v.Slice(0, d, 0, p))
	}
	var u mat.Dense
	eig.VectorsTo(&u) // ascending eigenvalues
	rot := mat.NewDense(q, p, nil)
	for j := 0; j < p; j++ {
		for i := 0; i < q; i++ {
			rot.Set(i, j, u.At(i, q-1-j))
		}
	}
	var out mat.Dense
	out.Mul(v, rot)
	return &out
}

// orthonormalise replaces the columns of v by an orthonormal basis of their
// span (modified Gram–Schmidt; a column that vanishes is left at zero).
func orthonormalise(v *mat.Dense) {
	r, c := v.Dims()
	for j := 0; j < c; j++ {
		for i := 0; i < j; i++ {
			s := 0.0
			for d := 0; d < r; d++ {
				s += v.At(d, i) * v.At(d, j)
			}
			for d := 0; d < r; d++ {
				v.Set(d, j, v.At(d, j)-s*v.At(d, i))
			}
		}
		n := 0.0
		for d := 0; d < r; d++ {
			n += v.At(d, j) * v.At(d, j)
		}
		if n = math.Sqrt(n); n > 0 {
			for d := 0; d < r; d++ {
				v.Set(d, j, v.At(d, j)/n)
			}
		}
	}
}

// initLatent sets A^w_k from the principal directions of each component's
// residuals and lowers Σ_k by the variance they explain (probabilistic PCA:
// A^w = V (Λ − σ̄ I)^½ with σ̄ the mean variance left in the other directions).
func (e *em) initLatent(labels []int, seed uint64) {
	D, K, Lt, Lw, L := e.D, e.K, e.Lt, e.Lw, e.L
	members := make([][]int, K)
	for n, k := range labels {
		members[k] = append(members[k], n)
	}
	p := e.p
	yr := e.y.RawMatrix()
	parallelFor(K, func(k int) {
		rng := rand.New(rand.NewPCG(seed, uint64(k)+1))
		A, b, sig, res := p.Ak(k), p.Bk(k), p.SigmaK(k), e.res[k*D:(k+1)*D]
		copy(res, sig)
		idx := members[k]
		if len(idx) <= Lw {
			return
		}
		E := mat.NewDense(len(idx), D, nil)
		for i, n := range idx {
			row := E.RawRowView(i)
			tn := e.t[n*Lt : (n+1)*Lt]
			y := yr.Data[n*yr.Stride : n*yr.Stride+D]
			for d := 0; d < D; d++ {
				v := y[d] - b[d]
				for l := 0; l < Lt; l++ {
					v -= A[d*L+l] * tn[l]
				}
				row[d] = v
			}
		}
		v := topDirections(E, Lw, 6, rng)
		var z mat.Dense
		z.Mul(E, v)
		m := float64(len(idx))
		total := 0.0
		for _, s := range sig {
			total += s
		}
		lambda := make([]float64, Lw)
		explained := 0.0
		for j := 0; j < Lw; j++ {
			s := 0.0
			for i := 0; i < len(idx); i++ {
				s += z.At(i, j) * z.At(i, j)
			}
			lambda[j] = s / m
			explained += lambda[j]
		}
		sbar := 0.0
		if D > Lw {
			sbar = math.Max(total-explained, 0) / float64(D-Lw)
		}
		for j := 0; j < Lw; j++ {
			scale := math.Sqrt(math.Max(lambda[j]-sbar, 1e-6*lambda[j]))
			for d := 0; d < D; d++ {
				a := v.At(d, j) * scale
				A[d*L+Lt+j] = a
				res[d] -= a * a
			}
		}
	})
	e.constrainSigma()
}

// kmeans clusters the n points of dimension dim (row-major) into k groups
// with k-means++ seeding and Lloyd iterations, and returns each point's
// group. Every group is non-empty when n ≥ k.
func kmeans(x []float64, n, dim, k int, rng *rand.Rand) []int {
	centres := make([]float64, k*dim)
	dist := make([]float64, n)
	sqd := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			v := a[i] - b[i]
			s += v * v
		}
		return s
	}
	first := rng.IntN(n)
	copy(centres, x[first*dim:(first+1)*dim])
	for i := range dist {
		dist[i] = sqd(x[i*dim:(i+1)*dim], centres[:dim])
	}
	for c := 1; c < k; c++ {
		total := 0.0
		for _, d := range dist {
			total += d
		}
		pick := n - 1
		if total > 0 {
			u := rng.Float64() * total
			for i, d := range dist {
				if u -= d; u < 0 {
					pick = i
					break
				}
			}
		} else {
			pick = rng.IntN(n)
		}
		copy(centres[c*dim:], x[pick*dim:(pick+1)*dim])
		for i := range dist {
			dist[i] = math.Min(dist[i], sqd(x[i*dim:(i+1)*dim], centres[c*dim:(c+1)*dim]))
		}
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = -1
	}
	count := make([]int, k)
	for iter := 0; iter < 100; iter++ {
		changed := false
		for i := 0; i < n; i++ {
			best, bd := 0, math.Inf(1)
			for c := 0; c < k; c++ {
				if d := sqd(x[i*dim:(i+1)*dim], centres[c*dim:(c+1)*dim]); d < bd {
					best, bd = c, d
				}
			}
			dist[i] = bd
			if labels[i] != best {
				labels[i] = best
				changed = true
			}
		}
		// Refill empty groups with the point farthest from its centre.
		for c := range count {
			count[c] = 0
		}
		for _, l := range labels {
			count[l]++
		}
		for c := 0; c < k; c++ {
			if count[c] > 0 {
				continue
			}
			far := -1
			for i := 0; i < n; i++ {
				if count[labels[i]] > 1 && (far < 0 || dist[i] > dist[far]) {
					far = i
				}
			}
			if far < 0 {
				break
			}
			count[labels[far]]--
			labels[far] = c
			count[c] = 1
			dist[far] = 0
			changed = true
		}
		if !changed && iter > 0 {
			break
		}
		for i := range centres {
			centres[i] = 0
		}
		for i, l := range labels {
			for j := 0; j < dim; j++ {
				centres[l*dim+j] += x[i*dim+j]
			}
		}
		for c := 0; c < k; c++ {
			if count[c] > 0 {
				for j := 0; j < dim; j++ {
					centres[c*dim+j] /= float64(count[c])
				}
			}
		}
	}
	return labels
}
