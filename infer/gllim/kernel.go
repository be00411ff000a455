package gllim

// float32 kernels of the forward pass: the Σ⁻¹-weighted distance
// (y − c*_k)ᵀ Σ_k⁻¹ (y − c*_k) and the products B_k (y − c*_k) of each
// component (the terms of direct3–direct5 that cost O(D)). Each has a
// vector version (kernel_amd64.s: AVX2 + FMA; kernel_arm64.s: NEON),
// chosen at start where the CPU has it (simd), and the Go version here,
// which runs elsewhere, under -tags purego, and is the vectors' reference
// in the tests. The architecture files provide only the *Block functions,
// which take lengths that are multiples of simdBlock; the *SIMD wrappers
// below run them and finish the tail with the Go kernels. Go does not vectorise, so the Go kernels' speed comes from
// independent accumulators (no loop-carried dependency on one register),
// from sharing each load of y between several rows, and from re-slicing to
// one length so the compiler drops the bounds checks.
//
// Rounding: every product and sum is a float32 operation; the error of a
// D-term dot product grows like √D·ε₃₂·Σ|w_d y_d| (ε₃₂ = 2⁻²⁴ ≈ 6e-8) with
// the four partial sums, i.e. about 3e-6 relative at D = 1888.

// matVec computes dst[r] = Σ_d w[r·n+d] x[d] for the rows×n matrix w.
func matVec(dst []float32, w []float32, x []float32, n int) { matVecWith(dst, w, x, n, dot4, dot) }

// matVecWith is matVec for rows of any element type, four rows at a time
// with dot4 (sharing each load of x), the rest with dot.
func matVecWith[W float32 | uint16](dst []float32, w []W, x []float32, n int,
	dot4 func(a, b, c, e []W, x []float32) (float32, float32, float32, float32), dot func(a []W, x []float32) float32) {
	rows := len(dst)
	if len(w) < rows*n || len(x) < n {
		panic("gllim: matVec: size mismatch")
	}
	x = x[:n]
	r := 0
	for ; r+4 <= rows; r += 4 {
		dst[r], dst[r+1], dst[r+2], dst[r+3] = dot4(w[r*n:(r+1)*n], w[(r+1)*n:(r+2)*n], w[(r+2)*n:(r+3)*n], w[(r+3)*n:(r+4)*n], x)
	}
	for ; r < rows; r++ {
		dst[r] = dot(w[r*n:(r+1)*n], x)
	}
}

// dot4 returns the dot products of four rows with x.
func dot4(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	if simd {
		n := len(x)
		return dot4SIMD(a[:n], b[:n], c[:n], e[:n], x)
	}
	return dot4Go(a, b, c, e, x)
}

// dot returns Σ_d a_d x_d.
func dot(a, x []float32) float32 {
	if simd {
		return dotSIMD(a[:len(x)], x)
	}
	return dotGo(a, x)
}

// diffSqDist writes r = x − c and returns q = Σ_d r_d² s_d, the
// Σ⁻¹-weighted squared distance with s = 1/σ (direct3's exponent). The
// difference is taken before squaring so that no large terms cancel (the
// expanded form x²s − 2xcs + c²s loses digits in float32).
func diffSqDist(r, x, c, s []float32) float32 {
	if simd {
		n := len(x)
		return diffSqDistSIMD(r[:n], x, c[:n], s[:n])
	}
	return diffSqDistGo(r, x, c, s)
}

// dot4Go returns the dot products of four rows with x: each x_d is loaded
// once for the four rows, two accumulators per row.
func dot4Go(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	a, b, c, e = a[:n], b[:n], c[:n], e[:n]
	var a0, a1, b0, b1, c0, c1, e0, e1 float32
	d := 0
	for ; d+2 <= n; d += 2 {
		x0, x1 := x[d], x[d+1]
		a0 += a[d] * x0
		a1 += a[d+1] * x1
		b0 += b[d] * x0
		b1 += b[d+1] * x1
		c0 += c[d] * x0
		c1 += c[d+1] * x1
		e0 += e[d] * x0
		e1 += e[d+1] * x1
	}
	for ; d < n; d++ {
		a0 += a[d] * x[d]
		b0 += b[d] * x[d]
		c0 += c[d] * x[d]
		e0 += e[d] * x[d]
	}
	return a0 + a1, b0 + b1, c0 + c1, e0 + e1
}

// dotGo returns Σ_d a_d x_d with four accumulators.
func dotGo(a, x []float32) float32 {
	n := len(x)
	a = a[:n]
	var s0, s1, s2, s3 float32
	d := 0
	for ; d+4 <= n; d += 4 {
		s0 += a[d] * x[d]
		s1 += a[d+1] * x[d+1]
		s2 += a[d+2] * x[d+2]
		s3 += a[d+3] * x[d+3]
	}
	for ; d < n; d++ {
		s0 += a[d] * x[d]
	}
	return (s0 + s1) + (s2 + s3)
}

// diffSqDistGo is diffSqDist in Go.
func diffSqDistGo(r, x, c, s []float32) float32 {
	n := len(x)
	r, c, s = r[:n], c[:n], s[:n]
	var q0, q1, q2, q3 float32
	d := 0
	for ; d+4 <= n; d += 4 {
		r0 := x[d] - c[d]
		r1 := x[d+1] - c[d+1]
		r2 := x[d+2] - c[d+2]
		r3 := x[d+3] - c[d+3]
		r[d], r[d+1], r[d+2], r[d+3] = r0, r1, r2, r3
		q0 += r0 * r0 * s[d]
		q1 += r1 * r1 * s[d+1]
		q2 += r2 * r2 * s[d+2]
		q3 += r3 * r3 * s[d+3]
	}
	for ; d < n; d++ {
		r0 := x[d] - c[d]
		r[d] = r0
		q0 += r0 * r0 * s[d]
	}
	return (q0 + q1) + (q2 + q3)
}

// dot4SIMD is dot4 on the vector unit, the tail in Go.
func dot4SIMD(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	return dot4Split(a, b, c, e, x, dot4Block, dot4Go)
}

// dotSIMD is dot on the vector unit, the tail in Go.
func dotSIMD(a, x []float32) float32 { return dotSplit(a, x, dotBlock, dotGo) }

// dot4Split runs block on the first multiple of simdBlock values of four
// rows of any element type and tail on the rest.
func dot4Split[W float32 | uint16](a, b, c, e []W, x []float32,
	block func(a, b, c, e *W, x *float32, n int) [4]float32,
	tail func(a, b, c, e []W, x []float32) (float32, float32, float32, float32)) (float32, float32, float32, float32) {
	n := len(x)
	m := n - n%simdBlock
	var v [4]float32
	if m > 0 {
		v = block(&a[0], &b[0], &c[0], &e[0], &x[0], m)
	}
	if m < n {
		t0, t1, t2, t3 := tail(a[m:n], b[m:n], c[m:n], e[m:n], x[m:])
		v = [4]float32{v[0] + t0, v[1] + t1, v[2] + t2, v[3] + t3}
	}
	return v[0], v[1], v[2], v[3]
}

// dotSplit is dot4Split for one row.
func dotSplit[W float32 | uint16](a []W, x []float32, block func(a *W, x *float32, n int) float32, tail func(a []W, x []float32) float32) float32 {
	n := len(x)
	m := n - n%simdBlock
	var s float32
	if m > 0 {
		s = block(&a[0], &x[0], m)
	}
	if m < n {
		s += tail(a[m:n], x[m:])
	}
	return s
}

// diffSqDistSIMD is diffSqDist on the vector unit, the tail in Go.
func diffSqDistSIMD(r, x, c, s []float32) float32 {
	n := len(x)
	m := n - n%simdBlock
	var q float32
	if m > 0 {
		q = diffSqDistBlock(&r[0], &x[0], &c[0], &s[0], m)
	}
	if m < n {
		q += diffSqDistGo(r[m:n], x[m:], c[m:n], s[m:n])
	}
	return q
}

// vectorKernels reports which kernels the forward pass uses ("avx2+fma",
// "neon" or "go").
func vectorKernels() string { return simdName() }

// Half-precision weights. Where a model's A_k are exactly binary16 values
// times a power-of-two scale per component (a file written with
// -encoding half), the forward pass can keep them so in memory and widen
// them as it reads (halving the bytes read, the pass being memory-bound):
// with u = (y − c*_k)·Σ_k⁻¹ (elementwise), the distance is Σ r·u and
// B_k r = A_kᵀ u. The kernels below are the Go reference of those in
// kernel_amd64.s.

// distDot4HalfGo writes u = (x − c)·s and returns Σ (x − c)·u and the
// four rows' products with u.
func distDot4HalfGo(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	n := len(x)
	u, c, s, a, b, cc, e = u[:n], c[:n], s[:n], a[:n], b[:n], cc[:n], e[:n]
	var q float32
	var v [4]float32
	for d := 0; d < n; d++ {
		r := x[d] - c[d]
		ud := r * s[d]
		u[d] = ud
		q += r * ud
		v[0] += halfFloat(a[d]) * ud
		v[1] += halfFloat(b[d]) * ud
		v[2] += halfFloat(cc[d]) * ud
		v[3] += halfFloat(e[d]) * ud
	}
	return q, v
}

// dot4HalfGo returns the products of four half rows with x.
func dot4HalfGo(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	a, b, c, e = a[:n], b[:n], c[:n], e[:n]
	var s [4]float32
	for d, xd := range x {
		s[0] += halfFloat(a[d]) * xd
		s[1] += halfFloat(b[d]) * xd
		s[2] += halfFloat(c[d]) * xd
		s[3] += halfFloat(e[d]) * xd
	}
	return s[0], s[1], s[2], s[3]
}

// dotHalfGo returns Σ a_d x_d for a half row a.
func dotHalfGo(a []uint16, x []float32) float32 {
	a = a[:len(x)]
	var s float32
	for d, xd := range x {
		s += halfFloat(a[d]) * xd
	}
	return s
}

// The half kernels on the vector unit, the tail in Go.

func distDot4HalfSIMD(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	n := len(x)
	m := n - n%simdBlock
	var q float32
	var v [4]float32
	if m > 0 {
		q, v = distDot4HalfBlock(&u[0], &x[0], &c[0], &s[0], &a[0], &b[0], &cc[0], &e[0], m)
	}
	if m < n {
		tq, tv := distDot4HalfGo(u[m:n], x[m:], c[m:n], s[m:n], a[m:n], b[m:n], cc[m:n], e[m:n])
		q += tq
		for i := range v {
			v[i] += tv[i]
		}
	}
	return q, v
}

func dot4HalfSIMD(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32) {
	return dot4Split(a, b, c, e, x, dot4HalfBlock, dot4HalfGo)
}

func dotHalfSIMD(a []uint16, x []float32) float32 { return dotSplit(a, x, dotHalfBlock, dotHalfGo) }

// Dispatchers of the half kernels.

func distDot4Half(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	if simd {
		n := len(x)
		return distDot4HalfSIMD(u[:n], x, c[:n], s[:n], a[:n], b[:n], cc[:n], e[:n])
	}
	return distDot4HalfGo(u, x, c, s, a, b, cc, e)
}

func dot4Half(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32) {
	if simd {
		n := len(x)
		return dot4HalfSIMD(a[:n], b[:n], c[:n], e[:n], x)
	}
	return dot4HalfGo(a, b, c, e, x)
}

func dotHalf(a []uint16, x []float32) float32 {
	if simd {
		return dotHalfSIMD(a[:len(x)], x)
	}
	return dotHalfGo(a, x)
}

// matVecHalf is matVec for half rows w.
func matVecHalf(dst []float32, w []uint16, x []float32, n int) {
	matVecWith(dst, w, x, n, dot4Half, dotHalf)
}
