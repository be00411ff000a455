//go:build !purego

package gllim

import "golang.org/x/sys/cpu"

// simd says whether the AVX2 + FMA kernels run (chosen at start from the
// CPU; tests switch it to compare them with the Go kernels).
var simd = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// simdName names the kernels in use, for benchmarks and logs.
func simdName() string {
	if simd {
		return "avx2+fma"
	}
	return "go"
}

//go:noescape
func dot4AVX(a, b, c, e, x *float32, n int, out *[4]float32)

//go:noescape
func dot1AVX(a, x *float32, n int) float32

//go:noescape
func diffSqDistAVX(r, x, c, s *float32, n int) float32

// dot4SIMD is dot4 on the vector unit for the first n&^15 values, in Go
// for the rest.
func dot4SIMD(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	m := n &^ 15
	var out [4]float32
	if m > 0 {
		dot4AVX(&a[0], &b[0], &c[0], &e[0], &x[0], m, &out)
	}
	for d := m; d < n; d++ {
		out[0] += a[d] * x[d]
		out[1] += b[d] * x[d]
		out[2] += c[d] * x[d]
		out[3] += e[d] * x[d]
	}
	return out[0], out[1], out[2], out[3]
}

// dotSIMD is dot on the vector unit, the tail in Go.
func dotSIMD(a, x []float32) float32 {
	n := len(x)
	m := n &^ 15
	var s float32
	if m > 0 {
		s = dot1AVX(&a[0], &x[0], m)
	}
	for d := m; d < n; d++ {
		s += a[d] * x[d]
	}
	return s
}

// diffSqDistSIMD is diffSqDist on the vector unit, the tail in Go.
func diffSqDistSIMD(r, x, c, s []float32) float32 {
	n := len(x)
	m := n &^ 7
	var q float32
	if m > 0 {
		q = diffSqDistAVX(&r[0], &x[0], &c[0], &s[0], m)
	}
	for d := m; d < n; d++ {
		v := x[d] - c[d]
		r[d] = v
		q += v * v * s[d]
	}
	return q
}

//go:noescape
func distDot4AVX(r, x, c, s, a, b, cc, e *float32, n int, out *[5]float32)

// distDot4SIMD is one pass of a component on the vector unit: r = x − c,
// q = Σ r²s and the dot products of the four rows with r (the tail in Go).
func distDot4SIMD(r, x, c, s, a, b, cc, e []float32) (q float32, v [4]float32) {
	n := len(x)
	m := n &^ 15
	var out [5]float32
	if m > 0 {
		distDot4AVX(&r[0], &x[0], &c[0], &s[0], &a[0], &b[0], &cc[0], &e[0], m, &out)
	}
	for d := m; d < n; d++ {
		rd := x[d] - c[d]
		r[d] = rd
		out[4] += rd * rd * s[d]
		out[0] += a[d] * rd
		out[1] += b[d] * rd
		out[2] += cc[d] * rd
		out[3] += e[d] * rd
	}
	return out[4], [4]float32{out[0], out[1], out[2], out[3]}
}

// UseVectorKernels switches the vector kernels on or off where the CPU has
// them (for tests that compare them with the Go kernels) and returns the
// previous setting.
func UseVectorKernels(on bool) bool {
	prev := simd
	simd = on && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	return prev
}

// halfWeights says whether models whose A is exactly half keep it so in
// memory: the vector kernels widen it with F16C.
var halfWeights = simd && cpu.X86.HasF16C

//go:noescape
func distDot4HAVX(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[5]float32)

//go:noescape
func dot4HAVX(a, b, c, e *uint16, x *float32, n int, out *[4]float32)

//go:noescape
func dot1HAVX(a *uint16, x *float32, n int) float32

func distDot4HalfSIMD(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	n := len(x)
	m := n &^ 15
	var out [5]float32
	if m > 0 {
		distDot4HAVX(&u[0], &x[0], &c[0], &s[0], &a[0], &b[0], &cc[0], &e[0], m, &out)
	}
	q, v := out[4], [4]float32{out[0], out[1], out[2], out[3]}
	if m < n {
		tq, tv := distDot4HalfGo(u[m:], x[m:], c[m:], s[m:], a[m:], b[m:], cc[m:], e[m:])
		q += tq
		for i := range v {
			v[i] += tv[i]
		}
	}
	return q, v
}

func dot4HalfSIMD(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	m := n &^ 15
	var out [4]float32
	if m > 0 {
		dot4HAVX(&a[0], &b[0], &c[0], &e[0], &x[0], m, &out)
	}
	if m < n {
		t0, t1, t2, t3 := dot4HalfGo(a[m:], b[m:], c[m:], e[m:], x[m:])
		out[0], out[1], out[2], out[3] = out[0]+t0, out[1]+t1, out[2]+t2, out[3]+t3
	}
	return out[0], out[1], out[2], out[3]
}

func dotHalfSIMD(a []uint16, x []float32) float32 {
	n := len(x)
	m := n &^ 15
	var s float32
	if m > 0 {
		s = dot1HAVX(&a[0], &x[0], m)
	}
	if m < n {
		s += dotHalfGo(a[m:], x[m:])
	}
	return s
}
