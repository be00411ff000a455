//go:build purego || !(amd64 || arm64)

package gllim

// No vector kernels here: the Go ones run.
const simd = false

func simdName() string { return "go" }

func dot4SIMD(a, b, c, e, x []float32) (float32, float32, float32, float32) {
	panic("gllim: no vector kernels")
}
func dotSIMD(a, x []float32) float32              { panic("gllim: no vector kernels") }
func diffSqDistSIMD(r, x, c, s []float32) float32 { panic("gllim: no vector kernels") }

func distDot4SIMD(r, x, c, s, a, b, cc, e []float32) (float32, [4]float32) {
	panic("gllim: no vector kernels")
}

// UseVectorKernels does nothing here: there are no vector kernels.
func UseVectorKernels(on bool) bool { return false }

const halfWeights = false

func distDot4HalfSIMD(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32) {
	panic("gllim: no vector kernels")
}
func dot4HalfSIMD(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32) {
	panic("gllim: no vector kernels")
}
func dotHalfSIMD(a []uint16, x []float32) float32 { panic("gllim: no vector kernels") }
