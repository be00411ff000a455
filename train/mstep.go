package train

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// mStep maximises the expected complete-data log-likelihood given the
// responsibilities e.r and the latent posteriors e.muW, e.sw (M-GMM and
// M-mapping of docs/method.md §3). lw is the number of latent dimensions in use:
// e.Lw, or 0 for the initial step, which fits A^t_k and leaves A^w_k = 0.
//
// With ρ_nk = r_nk / N_k, x_nk = [t_n ; μ^w_nk], x̄_k = Σ_n ρ_nk x_nk,
// ȳ_k = Σ_n ρ_nk y_n, C^xx_k = Σ_n ρ_nk (x_nk − x̄_k)(x_nk − x̄_k)ᵀ and
// C^yx_k = Σ_n ρ_nk (y_n − ȳ_k)(x_nk − x̄_k)ᵀ (= Y_k X_kᵀ of the paper):
//
//	A_k = C^yx_k (S^x_k + C^xx_k)⁻¹,  S^x_k = blockdiag(0, S^w_k)
//	b_k = ȳ_k − A_k x̄_k
//	σ_kd = [A^w_k S^w_k A^wᵀ_k]_dd + Var_ρ(y_d) − 2 A_kd·C^yx_kd + A_kd C^xx_k A_kdᵀ
//
// where the last three terms are Σ_n ρ_nk (y_nd − A_kd x_nk − b_kd)². The
// products Σ_n ρ_nk y_n x_nkᵀ and Σ_n ρ_nk y_n∘y_n are two matrix products
// over all components.
func (e *em) mStep(lw int) {
	N, D, K, Lt, L := e.N, e.D, e.K, e.Lt, e.L
	Lw := e.Lw
	lx := Lt + lw // active dimensions of x
	p := e.p
	Q := e.q.RawMatrix()
	R := e.rt.RawMatrix()
	parallelFor(K, func(k int) {
		r := e.r[k*N : (k+1)*N]
		inv := 1 / e.nk[k]
		rho := Q.Data[k*(L+1)*Q.Stride : k*(L+1)*Q.Stride+N]
		rrow := R.Data[k*R.Stride : k*R.Stride+N]
		for n, v := range r {
			rho[n] = v * inv
			rrow[n] = v * inv
		}
		muW := e.muW[k*N*Lw : (k+1)*N*Lw]
		for l := 0; l < L; l++ {
			row := Q.Data[(k*(L+1)+1+l)*Q.Stride : (k*(L+1)+1+l)*Q.Stride+N]
			switch {
			case l < Lt:
				for n := range row {
					row[n] = rho[n] * e.t[n*Lt+l]
				}
			case l < lx:
				for n := range row {
					row[n] = rho[n] * muW[n*Lw+l-Lt]
				}
			default:
				for n := range row {
					row[n] = 0
				}
			}
		}
	})
	mul(e.pq, e.q, e.y)
	mul(e.p2, e.rt, e.y2)
	PQ := e.pq.RawMatrix()
	P2 := e.p2.RawMatrix()
	parallelFor(K, func(k int) {
		rho := Q.Data[k*(L+1)*Q.Stride : k*(L+1)*Q.Stride+N]
		muW := e.muW[k*N*Lw : (k+1)*N*Lw]
		sw := e.sw[k*Lw*Lw : (k+1)*Lw*Lw]
		x := make([]float64, lx)
		xbar := make([]float64, lx)
		cxx := make([]float64, lx*lx)
		for n, w := range rho {
			if w == 0 {
				continue
			}
			copy(x, e.t[n*Lt:(n+1)*Lt])
			copy(x[Lt:], muW[n*Lw:n*Lw+lw])
			for i := 0; i < lx; i++ {
				xbar[i] += w * x[i]
				wi := w * x[i]
				for j := 0; j <= i; j++ {
					cxx[i*lx+j] += wi * x[j]
				}
			}
		}
		for i := 0; i < lx; i++ {
			for j := 0; j <= i; j++ {
				v := cxx[i*lx+j] - xbar[i]*xbar[j]
				cxx[i*lx+j], cxx[j*lx+i] = v, v
			}
		}
		// M-GMM: π_k, c^t_k, Γ^t_k (eigenvalues floored).
		p.Pi[k] = e.nk[k] / float64(N)
		copy(p.Ck(k), xbar[:Lt])
		g := p.GammaK(k)
		for i := 0; i < Lt; i++ {
			for j := 0; j < Lt; j++ {
				g[i*Lt+j] = cxx[i*lx+j]
			}
		}
		floorEigen(g, Lt, e.cfg.GammaFloor)
		// M-mapping: A_k from the lx×lx system M = S^x + C^xx (+ ridge on t).
		m := make([]float64, lx*lx)
		copy(m, cxx)
		for i := 0; i < Lt; i++ {
			m[i*lx+i] += e.cfg.Ridge
		}
		for i := 0; i < lw; i++ {
			for j := 0; j < lw; j++ {
				m[(Lt+i)*lx+Lt+j] += sw[i*Lw+j]
			}
		}
		chol := mustCholesky(m, lx)
		A, b, res := p.Ak(k), p.Bk(k), e.res[k*D:(k+1)*D]
		cyx := mat.NewVecDense(lx, nil)
		ad := mat.NewVecDense(lx, nil)
		base := k * (L + 1) * PQ.Stride
		for d := 0; d < D; d++ {
			ybar := PQ.Data[base+d]
			for l := 0; l < lx; l++ {
				cyx.SetVec(l, PQ.Data[base+(1+l)*PQ.Stride+d]-ybar*xbar[l])
			}
			if err := chol.SolveVecTo(ad, cyx); err != nil {
				panic("train: solving for A_k: " + err.Error())
			}
			row := A[d*L : (d+1)*L]
			for l := range row {
				row[l] = 0
			}
			bd := ybar
			// Σ_n ρ (y_d − A_d x_n − b_d)² = Var(y_d) − 2 A_d·C^yx_d + A_d C^xx A_dᵀ
			v := P2.Data[k*P2.Stride+d] - ybar*ybar
			for l := 0; l < lx; l++ {
				a := ad.AtVec(l)
				row[l] = a
				bd -= a * xbar[l]
				v -= 2 * a * cyx.AtVec(l)
				s := 0.0
				for j := 0; j < lx; j++ {
					s += cxx[l*lx+j] * ad.AtVec(j)
				}
				v += a * s
			}
			// + [A^w S^w A^wᵀ]_dd
			for i := 0; i < lw; i++ {
				s := 0.0
				for j := 0; j < lw; j++ {
					s += sw[i*Lw+j] * row[Lt+j]
				}
				v += row[Lt+i] * s
			}
			b[d] = bd
			res[d] = v
		}
	})
	e.constrainSigma()
}

// constrainSigma sets Σ_k from the residual variances e.res under the
// configured constraint, then applies the floor. Each is the constrained
// maximiser: the mean over dimensions for isotropic Σ_k, the π-weighted
// mean over components for shared Σ.
func (e *em) constrainSigma() {
	D, K := e.D, e.K
	p := e.p
	res := e.res
	if p.Cov == "isotropic" {
		for k := 0; k < K; k++ {
			s := 0.0
			for _, v := range res[k*D : (k+1)*D] {
				s += v
			}
			for d := 0; d < D; d++ {
				res[k*D+d] = s / float64(D)
			}
		}
	}
	if p.Shared {
		for d := 0; d < D; d++ {
			s := 0.0
			for k := 0; k < K; k++ {
				s += p.Pi[k] * res[k*D+d]
			}
			for k := 0; k < K; k++ {
				res[k*D+d] = s
			}
		}
	}
	floorMean := 0.0
	for _, f := range e.floor {
		floorMean += f
	}
	floorMean /= float64(D)
	for k := 0; k < K; k++ {
		sig := p.SigmaK(k)
		for d := 0; d < D; d++ {
			f := e.floor[d]
			if p.Cov == "isotropic" {
				f = floorMean
			}
			sig[d] = math.Max(res[k*D+d], f)
		}
	}
}

// floorEigen replaces the n×n symmetric matrix a by V max(Λ, floor) Vᵀ, the
// closest matrix (and the constrained likelihood maximiser) whose
// eigenvalues are at least floor.
//
// Entries far below the floor (|a_ij| < 1e-12·floor) are zeroed first:
// a component holding faces that share some labels exactly (Pointing'04's
// heads at pitch −90° all have yaw 0 and roll 0) has a covariance whose
// entries are zero up to rounding, down to subnormal numbers, on which the
// symmetric eigensolver can return eigenvectors that are not orthonormal
// and a reconstruction of 1e120 (seen on AFLW2000 k-fold). A result that
// is not finite, or larger than the matrix's largest eigenvalue allows, is
// replaced by the floored diagonal.
func floorEigen(a []float64, n int, floor float64) {
	clean := make([]float64, n*n)
	big := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := 0.5 * (a[i*n+j] + a[j*n+i])
			if math.Abs(v) < 1e-12*floor {
				v = 0
			}
			clean[i*n+j] = v
			big = math.Max(big, math.Abs(v))
		}
	}
	diagonal := func() {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a[i*n+j] = 0
			}
			a[i*n+i] = math.Max(clean[i*n+i], floor)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, clean), true) {
		diagonal()
		return
	}
	vals := eig.Values(nil)
	var v mat.Dense
	eig.VectorsTo(&v)
	// Every eigenvalue of a is at most n·max|a_ij|; so is every entry of
	// the floored matrix, up to the floor.
	limit := (float64(n)*big + floor) * (1 + 1e-6)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for l := 0; l < n; l++ {
				s += v.At(i, l) * math.Max(vals[l], floor) * v.At(j, l)
			}
			if math.IsNaN(s) || math.Abs(s) > limit {
				diagonal()
				return
			}
			a[i*n+j] = s
		}
	}
}

// reseed re-seeds every component whose Σ_n r_nk fell below MinCount by
// splitting the responsibilities of the largest component in two along the
// principal direction of its Γ^t, and returns how many it re-seeded. The
// M-step that follows re-estimates both halves.
func (e *em) reseed() int {
	N, K, Lt, Lw := e.N, e.K, e.Lt, e.Lw
	var dead []int
	for k := 0; k < K; k++ {
		if e.nk[k] < e.cfg.MinCount {
			dead = append(dead, k)
		}
	}
	if len(dead) == 0 {
		return 0
	}
	order := make([]int, K)
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(i, j int) bool { return e.nk[order[i]] > e.nk[order[j]] })
	done := 0
	for i, k := range dead {
		if i >= len(order) {
			break
		}
		j := order[i]
		if e.nk[j] < 2*e.cfg.MinCount {
			break // nothing large enough to split
		}
		// The dead component's remaining mass joins the one split, so
		// that every sample's responsibilities still sum to one (else the
		// π_k of the next M-step would not sum to one).
		for n := 0; n < N; n++ {
			e.r[j*N+n] += e.r[k*N+n]
			e.r[k*N+n] = 0
		}
		e.nk[j] += e.nk[k]
		e.nk[k] = 0
		// Principal direction of Γ^t_j.
		var eig mat.EigenSym
		if !eig.Factorize(mat.NewSymDense(Lt, append([]float64(nil), e.p.GammaK(j)...)), true) {
			continue
		}
		var v mat.Dense
		eig.VectorsTo(&v)
		c := e.p.Ck(j)
		// Weighted median of the projections, so both halves get mass.
		type pr struct{ z, w float64 }
		proj := make([]pr, 0, N)
		for n := 0; n < N; n++ {
			z := 0.0
			for l := 0; l < Lt; l++ {
				z += (e.t[n*Lt+l] - c[l]) * v.At(l, Lt-1)
			}
			proj = append(proj, pr{z, e.r[j*N+n]})
		}
		sorted := append([]pr(nil), proj...)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a].z < sorted[b].z })
		half, acc, cut := e.nk[j]/2, 0.0, 0.0
		for _, s := range sorted {
			acc += s.w
			if acc >= half {
				cut = s.z
				break
			}
		}
		nk, nj := 0.0, 0.0
		for n := 0; n < N; n++ {
			if proj[n].z > cut {
				e.r[k*N+n] = e.r[j*N+n]
				e.r[j*N+n] = 0
			} else {
				e.r[k*N+n] = 0
			}
			nk += e.r[k*N+n]
			nj += e.r[j*N+n]
		}
		if nk < e.cfg.MinCount || nj < e.cfg.MinCount {
			// Cannot split (all mass at one point): give the halves back.
			for n := 0; n < N; n++ {
				e.r[j*N+n] += e.r[k*N+n]
				e.r[k*N+n] = 0
			}
			continue
		}
		e.nk[k], e.nk[j] = nk, nj
		copy(e.muW[k*N*Lw:(k+1)*N*Lw], e.muW[j*N*Lw:(j+1)*N*Lw])
		copy(e.sw[k*Lw*Lw:(k+1)*Lw*Lw], e.sw[j*Lw*Lw:(j+1)*Lw*Lw])
		done++
	}
	// A component still below MinCount keeps a tiny share of every sample
	// so that its M-step stays defined.
	for k := 0; k < K; k++ {
		if e.nk[k] < e.cfg.MinCount {
			e.spread(k)
		}
	}
	return done
}

// spread gives component k an equal small share of every sample, taken from
// the other components in proportion, so that N_k = MinCount.
func (e *em) spread(k int) {
	N, K := e.N, e.K
	share := e.cfg.MinCount / float64(N)
	if share >= 1 {
		share = 0.5
	}
	for n := 0; n < N; n++ {
		rest := 1 - e.r[k*N+n]
		for j := 0; j < K; j++ {
			if j == k {
				continue
			}
			if rest > 0 {
				e.r[j*N+n] *= (1 - share) / rest
			}
		}
		e.r[k*N+n] = share
	}
	for j := 0; j < K; j++ {
		s := 0.0
		for n := 0; n < N; n++ {
			s += e.r[j*N+n]
		}
		e.nk[j] = s
	}
}
