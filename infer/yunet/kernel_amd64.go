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

// The kernels of kernel_amd64.s.

// pwAVX: n cells, out a multiple of 16.
//
//go:noescape
func pwAVX(dst, src, wt, b *float32, n, in, out int, lo float32)

// dwRowAVX: n cells of a row, ch a multiple of 8; up, mid and down point
// at the cell above, at and below the first output cell.
//
//go:noescape
func dwRowAVX(dst, up, mid, down, w, b *float32, n, ch int, lo float32)

func pointwiseVec(dst, src []float32, in, out int, wt, b []float32, lo float32) {
	pwAVX(&dst[0], &src[0], &wt[0], &b[0], len(src)/in, in, out, lo)
}

// depthwiseRowVec computes the cells 1 … cols−2 of row y (1 ≤ y ≤ rows−2).
func depthwiseRowVec(dst, src []float32, y, cols, ch int, w, b []float32, lo float32) {
	row := cols * ch
	_ = src[(y+2)*row-1] // the row below is there
	at := y*row + ch
	dwRowAVX(&dst[at], &src[at-row], &src[at], &src[at+row], &w[0], &b[0], cols-2, ch, lo)
}

// poolAVX: n output cells of ch channels (a multiple of 8) from the two
// source rows top and bottom (2n cells each).
//
//go:noescape
func poolAVX(dst, top, bottom *float32, n, ch int)

// poolRowVec is a row of the 2×2 max pool (net.go, maxPool).
func poolRowVec(dst, top, bottom []float32, n, ch int) {
	_, _ = top[2*n*ch-1], bottom[2*n*ch-1]
	_ = dst[n*ch-1]
	poolAVX(&dst[0], &top[0], &bottom[0], n, ch)
}
