//go:build !purego

package gllim

import "golang.org/x/sys/cpu"

// simd says whether the AVX2 + FMA kernels run (chosen at start from the
// CPU; tests switch it to compare them with the Go kernels).
var simd = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// halfWeights says whether models whose A is exactly half keep it so in
// memory: the vector kernels widen it with F16C.
var halfWeights = simd && cpu.X86.HasF16C

// simdBlock is the multiple of lengths the assembly kernels take.
const simdBlock = 16

func simdName() string {
	if simd {
		return "avx2+fma"
	}
	return "go"
}

// useVectorKernels switches the vector kernels on or off where the CPU has
// them (for tests that compare them with the Go kernels) and returns the
// previous setting.
func useVectorKernels(on bool) bool {
	prev := simd
	simd = on && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	return prev
}

// The kernels of kernel_amd64.s.

//go:noescape
func dot4AVX(a, b, c, e, x *float32, n int, out *[4]float32)

//go:noescape
func dot1AVX(a, x *float32, n int) float32

//go:noescape
func diffSqDistAVX(r, x, c, s *float32, n int) float32

//go:noescape
func distDot4HAVX(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[5]float32)

//go:noescape
func dot4HAVX(a, b, c, e *uint16, x *float32, n int, out *[4]float32)

//go:noescape
func dot1HAVX(a *uint16, x *float32, n int) float32

func dot4Block(a, b, c, e, x *float32, n int) (v [4]float32) {
	dot4AVX(a, b, c, e, x, n, &v)
	return v
}

func dotBlock(a, x *float32, n int) float32 { return dot1AVX(a, x, n) }

func diffSqDistBlock(r, x, c, s *float32, n int) float32 { return diffSqDistAVX(r, x, c, s, n) }

func distDot4HalfBlock(u, x, c, s *float32, a, b, cc, e *uint16, n int) (float32, [4]float32) {
	var out [5]float32
	distDot4HAVX(u, x, c, s, a, b, cc, e, n, &out)
	return out[4], [4]float32(out[:4])
}

func dot4HalfBlock(a, b, c, e *uint16, x *float32, n int) (v [4]float32) {
	dot4HAVX(a, b, c, e, x, n, &v)
	return v
}

func dotHalfBlock(a *uint16, x *float32, n int) float32 { return dot1HAVX(a, x, n) }
