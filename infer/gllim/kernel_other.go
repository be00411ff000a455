//go:build purego || !(amd64 || arm64)

package gllim

// No vector kernels here: the Go ones run (simd is false, so the *Block
// functions are never called).
const (
	simd        = false
	halfWeights = false
	simdBlock   = 16
)

func simdName() string { return "go" }

// useVectorKernels does nothing here: there are no vector kernels.
func useVectorKernels(on bool) bool { return false }

func noKernels() { panic("gllim: no vector kernels") }

func dot4Block(a, b, c, e, x *float32, n int) [4]float32 { noKernels(); return [4]float32{} }
func dotBlock(a, x *float32, n int) float32              { noKernels(); return 0 }
func diffSqDistBlock(r, x, c, s *float32, n int) float32 { noKernels(); return 0 }
func distDot4HalfBlock(u, x, c, s *float32, a, b, cc, e *uint16, n int) (float32, [4]float32) {
	noKernels()
	return 0, [4]float32{}
}
func dot4HalfBlock(a, b, c, e *uint16, x *float32, n int) [4]float32 {
	noKernels()
	return [4]float32{}
}
func dotHalfBlock(a *uint16, x *float32, n int) float32 { noKernels(); return 0 }
