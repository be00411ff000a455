//go:build !purego && (amd64 || arm64)

package yunet

// The vector kernels' Go side: each checks its slices' lengths, then hands
// the assembly (kernel_amd64.s, kernel_arm64.s) their first elements.
//
//   - pwKernel: the point-wise convolution (kernel.go, pointwise) of n
//     cells, out a multiple of 16;
//   - dwRowKernel: the depth-wise convolution (kernel.go, depthwise) of n
//     consecutive cells of a row that have all their neighbours, up, mid
//     and down pointing at the cell above, at and below the first, ch a
//     multiple of 8;
//   - poolKernel: a row of the 2×2 max pool (net.go, maxPool), n output
//     cells of ch channels (a multiple of 8) from the source rows top and
//     bottom (2n cells each).

func pointwiseVec(dst, src []float32, in, out int, wt, b []float32, lo float32) {
	n := len(src) / in
	_, _, _ = dst[n*out-1], wt[in*out-1], b[out-1]
	pwKernel(&dst[0], &src[0], &wt[0], &b[0], n, in, out, lo)
}

// depthwiseRowVec computes the cells 1 … cols−2 of a row, dst, from the
// rows up, mid and down (cols cells each; a row of zeros above the first
// row or below the last).
func depthwiseRowVec(dst, up, mid, down []float32, cols, ch int, w, b []float32, lo float32) {
	row := cols * ch
	_, _, _, _ = dst[row-1], up[row-1], mid[row-1], down[row-1]
	_, _ = w[9*ch-1], b[ch-1]
	dwRowKernel(&dst[ch], &up[ch], &mid[ch], &down[ch], &w[0], &b[0], cols-2, ch, lo)
}

// depthwiseCellVec computes one cell, dst, from the middle cells of up,
// mid and down (3 cells each).
func depthwiseCellVec(dst, up, mid, down []float32, ch int, w, b []float32, lo float32) {
	_, _, _, _ = dst[ch-1], up[3*ch-1], mid[3*ch-1], down[3*ch-1]
	_, _ = w[9*ch-1], b[ch-1]
	dwRowKernel(&dst[0], &up[ch], &mid[ch], &down[ch], &w[0], &b[0], 1, ch, lo)
}

// poolRowVec is a row of the 2×2 max pool.
func poolRowVec(dst, top, bottom []float32, n, ch int) {
	_, _ = top[2*n*ch-1], bottom[2*n*ch-1]
	_ = dst[n*ch-1]
	poolKernel(&dst[0], &top[0], &bottom[0], n, ch)
}
