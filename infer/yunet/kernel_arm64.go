//go:build !purego

package yunet

// simd: NEON (Advanced SIMD) is part of every ARMv8-A core; tests switch
// it off to compare with the Go kernels.
var simd = true

// useVectorKernels switches the NEON kernels on or off and returns the
// previous setting.
func useVectorKernels(on bool) bool {
	prev := simd
	simd = on
	return prev
}

// The kernels of kernel_arm64.s (kernel_vec.go says what each takes).

//go:noescape
func pwKernel(dst, src, wt, b *float32, n, in, out int, lo float32)

//go:noescape
func dwRowKernel(dst, up, mid, down, w, b *float32, n, ch int, lo float32)

//go:noescape
func poolKernel(dst, top, bottom *float32, n, ch int)
