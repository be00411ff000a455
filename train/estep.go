package train

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

var log2Pi = math.Log(2 * math.Pi)

// eStep computes the responsibilities r_nk (into e.r), the posterior means
// μ^w_nk and covariances S^w_k of the latent w (E-W, E-Z of docs/method.md §3) and
// returns the log-likelihood of the standardised data,
// Σ_n log Σ_k π_k N(t_n; c^t_k, Γ^t_k) N(y_n; A^t_k t_n + b_k, Σ_k + A^w_k A^wᵀ_k).
//
// With s = Σ_k⁻¹ (diagonal), d_nk = y_n − A^t_k t_n − b_k and the
// (L+1)×(L+1) Gram matrix G_k = [A_k b_k]ᵀ Σ_k⁻¹ [A_k b_k]:
//
//	d ᵀΣ⁻¹d = y ᵀΣ⁻¹y − 2 (y ᵀΣ⁻¹A^t t + y ᵀΣ⁻¹b) + tᵀG_tt t + 2 tᵀG_tb + G_bb
//	u      = A^wᵀ Σ⁻¹ d = y ᵀΣ⁻¹A^w − G_wt t − G_wb
//	M^w    = I + G_ww,   S^w = (M^w)⁻¹,   μ^w = S^w u                (E-W)
//	dᵀ(Σ + A^wA^wᵀ)⁻¹d = dᵀΣ⁻¹d − uᵀ S^w u                           (Woodbury)
//	log|Σ + A^wA^wᵀ|   = Σ_d log σ_d + log|M^w|                      (determinant lemma)
//
// The products of y with Σ_k⁻¹[A_k b_k] and of y∘y with Σ_k⁻¹ are two matrix
// products over all components at once; the rest is O(N·L²) per component.
func (e *em) eStep() float64 {
	N, D, K, Lt, Lw, L := e.N, e.D, e.K, e.Lt, e.Lw, e.L
	p := e.p
	W := e.w.RawMatrix()
	S := e.s.RawMatrix()
	parallelFor(K, func(k int) {
		A, b, sig := p.Ak(k), p.Bk(k), p.SigmaK(k)
		for d := 0; d < D; d++ {
			inv := 1 / sig[d]
			row := W.Data[d*W.Stride+k*(L+1) : d*W.Stride+(k+1)*(L+1)]
			for l := 0; l < L; l++ {
				row[l] = inv * A[d*L+l]
			}
			row[L] = inv * b[d]
			S.Data[d*S.Stride+k] = inv
		}
	})
	mul(e.yw, e.y, e.w)
	mul(e.ys, e.y2, e.s)
	YW := e.yw.RawMatrix()
	YS := e.ys.RawMatrix()
	parallelFor(K, func(k int) {
		A, b, sig := p.Ak(k), p.Bk(k), p.SigmaK(k)
		// G = [A b]ᵀ Σ⁻¹ [A b], (L+1)×(L+1), index L is b.
		L1 := L + 1
		G := make([]float64, L1*L1)
		ab := make([]float64, L1)
		logSig := 0.0
		for d := 0; d < D; d++ {
			inv := 1 / sig[d]
			logSig += math.Log(sig[d])
			copy(ab, A[d*L:(d+1)*L])
			ab[L] = b[d]
			for i := 0; i < L1; i++ {
				ai := ab[i] * inv
				for j := 0; j <= i; j++ {
					G[i*L1+j] += ai * ab[j]
				}
			}
		}
		for i := 0; i < L1; i++ {
			for j := 0; j < i; j++ {
				G[j*L1+i] = G[i*L1+j]
			}
		}
		// M^w = I + G_ww; S^w = (M^w)⁻¹; log|M^w|.
		sw := e.sw[k*Lw*Lw : (k+1)*Lw*Lw]
		logDetM := 0.0
		if Lw > 0 {
			m := make([]float64, Lw*Lw)
			for i := 0; i < Lw; i++ {
				for j := 0; j < Lw; j++ {
					m[i*Lw+j] = G[(Lt+i)*L1+Lt+j]
				}
				m[i*Lw+i]++
			}
			chol := mustCholesky(m, Lw)
			logDetM = chol.LogDet()
			var inv mat.SymDense
			if err := chol.InverseTo(&inv); err != nil {
				panic("train: inverse of I + AᵀΣ⁻¹A: " + err.Error())
			}
			for i := 0; i < Lw; i++ {
				for j := 0; j < Lw; j++ {
					sw[i*Lw+j] = inv.At(i, j)
				}
			}
		}
		gchol := mustCholesky(p.GammaK(k), Lt)
		var ginv mat.SymDense
		if err := gchol.InverseTo(&ginv); err != nil {
			panic("train: inverse of Γ: " + err.Error())
		}
		gi := make([]float64, Lt*Lt)
		for i := 0; i < Lt; i++ {
			for j := 0; j < Lt; j++ {
				gi[i*Lt+j] = ginv.At(i, j)
			}
		}
		ck := p.Ck(k)
		base := math.Log(p.Pi[k]) - 0.5*(float64(D)*log2Pi+logSig+logDetM) - 0.5*(float64(Lt)*log2Pi+gchol.LogDet())
		u := make([]float64, Lw)
		dt := make([]float64, Lt)
		r := e.r[k*N : (k+1)*N]
		muW := e.muW[k*N*Lw : (k+1)*N*Lw]
		Gbb := G[L*L1+L]
		for n := 0; n < N; n++ {
			tn := e.t[n*Lt : (n+1)*Lt]
			g := YW.Data[n*YW.Stride+k*L1 : n*YW.Stride+(k+1)*L1]
			// dᵀΣ⁻¹d
			q := YS.Data[n*YS.Stride+k] - 2*g[L] + Gbb
			for i := 0; i < Lt; i++ {
				ti := tn[i]
				q -= 2 * g[i] * ti
				q += 2 * ti * G[i*L1+L]
				s := 0.0
				for j := 0; j < Lt; j++ {
					s += G[i*L1+j] * tn[j]
				}
				q += ti * s
			}
			// u = A^wᵀΣ⁻¹d, μ^w = S^w u, maha = dᵀΣ⁻¹d − uᵀμ^w
			for i := 0; i < Lw; i++ {
				v := g[Lt+i] - G[(Lt+i)*L1+L]
				for j := 0; j < Lt; j++ {
					v -= G[(Lt+i)*L1+j] * tn[j]
				}
				u[i] = v
			}
			mu := muW[n*Lw : (n+1)*Lw]
			for i := 0; i < Lw; i++ {
				v := 0.0
				for j := 0; j < Lw; j++ {
					v += sw[i*Lw+j] * u[j]
				}
				mu[i] = v
				q -= u[i] * v
			}
			// (t − c)ᵀΓ⁻¹(t − c)
			for i := range dt {
				dt[i] = tn[i] - ck[i]
			}
			mt := 0.0
			for i := 0; i < Lt; i++ {
				s := 0.0
				for j := 0; j < Lt; j++ {
					s += gi[i*Lt+j] * dt[j]
				}
				mt += dt[i] * s
			}
			r[n] = base - 0.5*(q+mt)
		}
	})
	// Normalise over k with logsumexp; sum log-likelihoods chunk by chunk.
	partial := make([]float64, chunks(N))
	parallelFor(len(partial), func(c int) {
		lo, hi := chunkRange(c, N)
		s := 0.0
		for n := lo; n < hi; n++ {
			m := math.Inf(-1)
			for k := 0; k < K; k++ {
				m = math.Max(m, e.r[k*N+n])
			}
			z := 0.0
			for k := 0; k < K; k++ {
				z += math.Exp(e.r[k*N+n] - m)
			}
			lse := m + math.Log(z)
			for k := 0; k < K; k++ {
				e.r[k*N+n] = math.Exp(e.r[k*N+n] - lse)
			}
			s += lse
		}
		partial[c] = s
	})
	logL := 0.0
	for _, s := range partial {
		logL += s
	}
	for k := 0; k < K; k++ {
		s := 0.0
		for _, v := range e.r[k*N : (k+1)*N] {
			s += v
		}
		e.nk[k] = s
	}
	return logL
}

// mustCholesky factors the n×n symmetric matrix a (row-major). Its callers
// pass matrices that are positive definite by construction (I + PSD, or a
// Γ^t floored by GammaFloor); a failure is a bug.
func mustCholesky(a []float64, n int) *mat.Cholesky {
	var c mat.Cholesky
	if !c.Factorize(mat.NewSymDense(n, append([]float64(nil), a...))) {
		panic("train: matrix is not positive definite")
	}
	return &c
}
