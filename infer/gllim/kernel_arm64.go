//go:build !purego

package gllim

// simd: NEON (Advanced SIMD) is part of every ARMv8-A core; tests switch
// it off to compare with the Go kernels.
var simd = true

// halfWeights: the NEON kernels widen half weights (FCVTL).
var halfWeights = simd

// simdBlock is the multiple of lengths the assembly kernels take.
const simdBlock = 8

func simdName() string {
	if simd {
		return "neon"
	}
	return "go"
}

// useVectorKernels switches the NEON kernels on or off (for tests that
// compare them with the Go kernels) and returns the previous setting.
func useVectorKernels(on bool) bool {
	prev := simd
	simd = on
	return prev
}

// The kernels of kernel_arm64.s leave each sum as four lanes in out.

//go:noescape
func dot4NEON(a, b, c, e, x *float32, n int, out *[16]float32)

//go:noescape
func dot1NEON(a, x *float32, n int, out *[4]float32)

//go:noescape
func diffSqDistNEON(r, x, c, s *float32, n int, out *[4]float32)

//go:noescape
func distDot4HNEON(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[20]float32)

//go:noescape
func dot4HNEON(a, b, c, e *uint16, x *float32, n int, out *[16]float32)

//go:noescape
func dot1HNEON(a *uint16, x *float32, n int, out *[4]float32)

// lanes sums four lanes.
func lanes(v []float32) float32 { return (v[0] + v[1]) + (v[2] + v[3]) }

// rows4 sums the lanes of four rows.
func rows4(v []float32) [4]float32 {
	return [4]float32{lanes(v[0:4]), lanes(v[4:8]), lanes(v[8:12]), lanes(v[12:16])}
}

func dot4Block(a, b, c, e, x *float32, n int) [4]float32 {
	var out [16]float32
	dot4NEON(a, b, c, e, x, n, &out)
	return rows4(out[:])
}

func dotBlock(a, x *float32, n int) float32 {
	var out [4]float32
	dot1NEON(a, x, n, &out)
	return lanes(out[:])
}

func diffSqDistBlock(r, x, c, s *float32, n int) float32 {
	var out [4]float32
	diffSqDistNEON(r, x, c, s, n, &out)
	return lanes(out[:])
}

func distDot4HalfBlock(u, x, c, s *float32, a, b, cc, e *uint16, n int) (float32, [4]float32) {
	var out [20]float32
	distDot4HNEON(u, x, c, s, a, b, cc, e, n, &out)
	return lanes(out[16:20]), rows4(out[:16])
}

func dot4HalfBlock(a, b, c, e *uint16, x *float32, n int) [4]float32 {
	var out [16]float32
	dot4HNEON(a, b, c, e, x, n, &out)
	return rows4(out[:])
}

func dotHalfBlock(a *uint16, x *float32, n int) float32 {
	var out [4]float32
	dot1HNEON(a, x, n, &out)
	return lanes(out[:])
}
