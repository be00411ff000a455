//go:build !purego

package yunet

import "golang.org/x/sys/cpu"

// simd says whether the AVX2 + FMA kernels run (chosen at start from the
// CPU; tests switch it to compare them with the Go kernels).
var simd = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useVectorKernels switches the vector kernels on or off where the CPU has
// them and returns the previous setting.
func useVectorKernels(on bool) bool {
	prev := simd
	simd = on && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	return prev
}

// The kernels of kernel_amd64.s (kernel_vec.go says what each takes).

//go:noescape
func pwKernel(dst, src, wt, b *float32, n, in, out int, lo float32)

//go:noescape
func dwRowKernel(dst, up, mid, down, w, b *float32, n, ch int, lo float32)

//go:noescape
func poolKernel(dst, top, bottom *float32, n, ch int)
