package gllim

import "math"

// The "q8" encoding stores each A_k (D × L) as 8-bit integers.
//
// What a rounding of A costs is set by the noise it is compared with: the
// features enter every term of the forward model whitened by Σ_k
// (docs/method.md §4: B_k = A_kᵀ Σ_k⁻¹, and the component density of y), so an
// error δ in A_k[d,j] weighs δ/σ_kd, σ_kd = √Σ_k[d]. The encoding therefore
// rounds the whitened matrix Ã_k[d,j] = A_k[d,j]/σ_kd on a uniform grid of
// step s_kj per component and latent dimension:
//
//	A_k[d,j] = q_kdj · s_kj · σ_kd,   q_kdj ∈ [−127, 127],
//
// with s_kj the smallest power of two that puts max_d |Ã_k[d,j]| within
// 127.5 steps. The σ_kd are those of Σ as the file stores it (binary16),
// so writer and reader agree on them. At load each A_k is rounded once more
// to binary16 with a power-of-two scale per component, as the "half"
// encoding stores it: the kernels then keep the weights as halves
// (halfRows), and that rounding (≤ 2⁻¹¹ relative) is far below the grid's
// (2⁻⁸ of the largest whitened value). Both rules are stable, so writing a
// loaded model again gives the same bytes.

const q8Max = 127

// q8Scale is the smallest power of two s with big/s ≤ 127.5 (1 for a
// block of zeros).
func q8Scale(big float64) float64 {
	if !(big > 0) || math.IsInf(big, 0) {
		return 1
	}
	_, e := math.Frexp(big / (q8Max + 0.5)) // big/127.5 = f·2^e, f ∈ [0.5, 1)
	s := math.Ldexp(1, e)
	if big/(s/2) <= q8Max+0.5 { // f = 0.5 exactly
		s /= 2
	}
	return s
}

// roundHalves rounds v, cut into rows equal blocks, in place to what
// appendHalves stores and readMember reads back.
func roundHalves(v []float64, rows int) {
	n := len(v) / rows
	for r := 0; r < rows; r++ {
		block := v[r*n : (r+1)*n]
		sc := float64(float32(blockHalfScale(block)))
		for i, x := range block {
			block[i] = sc * float64(halfFloat(halfBits(float32(x/sc))))
		}
	}
}

// appendQ8 appends q's K·L scales s_kj (float32) and A as int8, in A's
// order (component, feature, latent dimension).
func appendQ8(buf []byte, q *Params) []byte {
	K, D, L := q.K, q.D, q.L()
	root := append([]float64(nil), q.Sigma...)
	roundHalves(root, K) // Σ as the file reads it back
	for i, v := range root {
		root[i] = math.Sqrt(v)
	}
	scales := make([]float64, K*L)
	for k := 0; k < K; k++ {
		a := q.Ak(k)
		for j := 0; j < L; j++ {
			big := 0.0
			for d := 0; d < D; d++ {
				if r := root[k*D+d]; r > 0 {
					big = math.Max(big, math.Abs(a[d*L+j])/r)
				}
			}
			scales[k*L+j] = q8Scale(big)
		}
	}
	buf = appendF32(buf, scales)
	for k := 0; k < K; k++ {
		a := q.Ak(k)
		for d := 0; d < D; d++ {
			r := root[k*D+d]
			for j := 0; j < L; j++ {
				v := 0.0
				if r > 0 {
					v = math.Round(a[d*L+j] / (scales[k*L+j] * r))
				}
				buf = append(buf, byte(int8(max(-q8Max, min(q8Max, v)))))
			}
		}
	}
	return buf
}

// readQ8 sets p.A from the int8 values in b and their scales, with p.Sigma
// already read: A_k[d,j] = q · s_kj · √Σ_k[d], then rounded to binary16
// with a power-of-two scale per component (as appendHalves would store
// it). A hostile file's non-finite scales or negative Σ give non-finite
// weights, which Validate refuses.
func readQ8(p *Params, scales []float64, b []byte) {
	K, D, L := p.K, p.D, p.L()
	for k := 0; k < K; k++ {
		a, sig := p.Ak(k), p.SigmaK(k)
		for d := 0; d < D; d++ {
			r := math.Sqrt(sig[d])
			for j := 0; j < L; j++ {
				a[d*L+j] = float64(int8(b[(k*D+d)*L+j])) * scales[k*L+j] * r
			}
		}
		roundHalves(a, 1)
	}
}
