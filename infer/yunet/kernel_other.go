//go:build purego || !(amd64 || arm64)

package yunet

// No vector kernels here: the Go ones run.
const simd = false

func useVectorKernels(on bool) bool { return false }

func pointwiseVec(dst, src []float32, in, out int, wt, b []float32, lo float32) {
	panic("yunet: no vector kernels")
}
func depthwiseRowVec(dst, up, mid, down []float32, cols, ch int, w, b []float32, lo float32) {
	panic("yunet: no vector kernels")
}
func depthwiseCellVec(dst, up, mid, down []float32, ch int, w, b []float32, lo float32) {
	panic("yunet: no vector kernels")
}
func poolRowVec(dst, top, bottom []float32, n, ch int) { panic("yunet: no vector kernels") }
