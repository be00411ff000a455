//go:build !purego

package gllim

// simd: NEON (Advanced SIMD) is part of every ARMv8-A core; tests switch
// it off to compare with the Go kernels.
var simd = true

func simdName() string {
	if simd {
		return "neon"
	}
	return "go"
}

//go:noescape
func dot4NEON(a, b, c, e, x *float32, n int, out *[16]float32)

//go:noescape
func dot1NEON(a, x *float32, n int, out *[4]float32)

//go:noescape
func distDot4NEON(r, x, c, s, a, b, cc, e *float32, n int, out *[20]float32)

//go:noescape
func diffSqDistNEON(r, x, c, s *float32, n int, out *[4]float32)

func lanes(v []float32) float32 { return (v[0] + v[1]) + (v[2] + v[3]) }

func dot4SIMD(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	m := n &^ 7
	var out [16]float32
	if m > 0 {
		dot4NEON(&a[0], &b[0], &c[0], &e[0], &x[0], m, &out)
	}
	s := [4]float32{lanes(out[0:4]), lanes(out[4:8]), lanes(out[8:12]), lanes(out[12:16])}
	for d := m; d < n; d++ {
		s[0] += a[d] * x[d]
		s[1] += b[d] * x[d]
		s[2] += c[d] * x[d]
		s[3] += e[d] * x[d]
	}
	return s[0], s[1], s[2], s[3]
}

func dotSIMD(a, x []float32) float32 {
	n := len(x)
	m := n &^ 7
	var out [4]float32
	if m > 0 {
		dot1NEON(&a[0], &x[0], m, &out)
	}
	s := lanes(out[:])
	for d := m; d < n; d++ {
		s += a[d] * x[d]
	}
	return s
}

func diffSqDistSIMD(r, x, c, s []float32) float32 {
	n := len(x)
	m := n &^ 7
	var out [4]float32
	if m > 0 {
		diffSqDistNEON(&r[0], &x[0], &c[0], &s[0], m, &out)
	}
	q := lanes(out[:])
	for d := m; d < n; d++ {
		v := x[d] - c[d]
		r[d] = v
		q += v * v * s[d]
	}
	return q
}

func distDot4SIMD(r, x, c, s, a, b, cc, e []float32) (float32, [4]float32) {
	n := len(x)
	m := n &^ 7
	var out [20]float32
	if m > 0 {
		distDot4NEON(&r[0], &x[0], &c[0], &s[0], &a[0], &b[0], &cc[0], &e[0], m, &out)
	}
	v := [4]float32{lanes(out[0:4]), lanes(out[4:8]), lanes(out[8:12]), lanes(out[12:16])}
	q := lanes(out[16:20])
	for d := m; d < n; d++ {
		rd := x[d] - c[d]
		r[d] = rd
		q += rd * rd * s[d]
		v[0] += a[d] * rd
		v[1] += b[d] * rd
		v[2] += cc[d] * rd
		v[3] += e[d] * rd
	}
	return q, v
}

// UseVectorKernels switches the NEON kernels on or off (for tests that
// compare them with the Go kernels) and returns the previous setting.
func UseVectorKernels(on bool) bool {
	prev := simd
	simd = on
	return prev
}

// halfWeights: the NEON kernels widen half weights (FCVTL).
var halfWeights = simd

//go:noescape
func distDot4HNEON(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[20]float32)

//go:noescape
func dot4HNEON(a, b, c, e *uint16, x *float32, n int, out *[16]float32)

//go:noescape
func dot1HNEON(a *uint16, x *float32, n int, out *[4]float32)

func distDot4HalfSIMD(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	n := len(x)
	m := n &^ 7
	var out [20]float32
	if m > 0 {
		distDot4HNEON(&u[0], &x[0], &c[0], &s[0], &a[0], &b[0], &cc[0], &e[0], m, &out)
	}
	v := [4]float32{lanes(out[0:4]), lanes(out[4:8]), lanes(out[8:12]), lanes(out[12:16])}
	q := lanes(out[16:20])
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
	m := n &^ 7
	var out [16]float32
	if m > 0 {
		dot4HNEON(&a[0], &b[0], &c[0], &e[0], &x[0], m, &out)
	}
	s := [4]float32{lanes(out[0:4]), lanes(out[4:8]), lanes(out[8:12]), lanes(out[12:16])}
	if m < n {
		t0, t1, t2, t3 := dot4HalfGo(a[m:], b[m:], c[m:], e[m:], x[m:])
		s[0], s[1], s[2], s[3] = s[0]+t0, s[1]+t1, s[2]+t2, s[3]+t3
	}
	return s[0], s[1], s[2], s[3]
}

func dotHalfSIMD(a []uint16, x []float32) float32 {
	n := len(x)
	m := n &^ 7
	var out [4]float32
	if m > 0 {
		dot1HNEON(&a[0], &x[0], m, &out)
	}
	s := lanes(out[:])
	if m < n {
		s += dotHalfGo(a[m:], x[m:])
	}
	return s
}
