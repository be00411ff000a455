package yunet

import "math"

// The convolutions in Go; kernel_vec.go runs vector kernels in their
// place where the CPU has them. Both end in a ReLU if relu: the kernels
// take it as a floor lo on the outputs, 0 for a ReLU, −∞ for none.

func floor(relu bool) float32 {
	if relu {
		return 0
	}
	return float32(math.Inf(-1))
}

// pointwise is a 1×1 convolution: for each cell p, dst[p][o] = b[o] +
// Σ_c src[p][c]·wt[c][o] (wt is the layer's weights transposed), then
// ReLU if relu.
func pointwise(dst, src []float32, in, out int, wt, b []float32, relu bool) {
	lo := floor(relu)
	n := len(src) / in
	if n == 0 {
		return
	}
	dst, wt, b = dst[:n*out], wt[:in*out], b[:out]
	if simd && out%16 == 0 {
		pointwiseVec(dst, src, in, out, wt, b, lo)
		return
	}
	pointwiseGo(dst, src, in, out, wt, b, lo)
}

// pointwiseGo is pointwise in Go (32-bit ARM, other CPUs, and shapes the
// vector kernel does not take): four input channels at a time, so that
// each output is loaded and stored once for four products, not one.
func pointwiseGo(dst, src []float32, in, out int, wt, b []float32, lo float32) {
	n := len(src) / in
	for p := range n {
		o := dst[p*out : p*out+out]
		copy(o, b)
		x := src[p*in : p*in+in]
		c := 0
		for ; c+4 <= in; c += 4 {
			x0, x1, x2, x3 := x[c], x[c+1], x[c+2], x[c+3]
			w0 := wt[c*out:][:len(o)]
			w1 := wt[(c+1)*out:][:len(o)]
			w2 := wt[(c+2)*out:][:len(o)]
			w3 := wt[(c+3)*out:][:len(o)]
			for k := range o {
				o[k] += x0*w0[k] + x1*w1[k] + x2*w2[k] + x3*w3[k]
			}
		}
		for ; c < in; c++ {
			xc, w := x[c], wt[c*out:][:len(o)]
			for k := range o {
				o[k] += xc * w[k]
			}
		}
		for k, v := range o {
			o[k] = max(v, lo)
		}
	}
}

// depthwise is a 3×3 depth-wise convolution with zero padding over
// rows×cols cells of ch channels: dst[y][x][c] = b[c] + Σ_tap
// src[y+dy][x+dx][c]·w[tap][c], then ReLU if relu.
func depthwise(dst, src []float32, rows, cols, ch int, w, b []float32, relu bool) {
	dst, src, w, b = dst[:rows*cols*ch], src[:rows*cols*ch], w[:9*ch], b[:ch]
	lo := floor(relu)
	if !simd || ch%8 != 0 || rows < 3 || cols < 3 {
		depthwiseCells(dst, src, rows, cols, ch, w, b, lo, 0, rows, 0, cols)
		return
	}
	// Every row's cells but its first and last by the vector kernel (the
	// first and last rows against a row of zeros, the padding), then the
	// first and last columns by it too, on a copy of each cell's
	// neighbours with zeros beside them. At a landmark look's deep levels
	// (8×8, 4×4 cells of 64 channels) the border is half the cells or more.
	row := cols * ch
	y0, y1 := 0, rows
	if row > len(zeroRow) {
		y0, y1 = 1, rows-1 // a row wider than the zeros: the Go kernel
		depthwiseCells(dst, src, rows, cols, ch, w, b, lo, 0, 1, 0, cols)
		depthwiseCells(dst, src, rows, cols, ch, w, b, lo, rows-1, rows, 0, cols)
	}
	for y := y0; y < y1; y++ {
		var up, down []float32
		if y > 0 {
			up = src[(y-1)*row : y*row]
		} else {
			up = zeroRow[:row]
		}
		if y < rows-1 {
			down = src[(y+1)*row : (y+2)*row]
		} else {
			down = zeroRow[:row]
		}
		depthwiseRowVec(dst[y*row:(y+1)*row], up, src[y*row:(y+1)*row], down, cols, ch, w, b, lo)
	}
	if ch > maxSideChannels {
		depthwiseCells(dst, src, rows, cols, ch, w, b, lo, y0, y1, 0, 1)
		depthwiseCells(dst, src, rows, cols, ch, w, b, lo, y0, y1, cols-1, cols)
		return
	}
	depthwiseSides(dst, src, rows, cols, ch, w, b, lo, y0, y1)
}

// maxSideChannels bounds the channels depthwiseSides copies on the stack
// (the network's widest layer has 64).
const maxSideChannels = 64

// depthwiseSides computes the first and last cells of rows y0 ≤ y < y1 by
// the vector kernel: each cell's three rows of neighbours are copied, three
// cells a row, with zeros where the frame ends (beside the column, and
// above the first row or below the last).
func depthwiseSides(dst, src []float32, rows, cols, ch int, w, b []float32, lo float32, y0, y1 int) {
	var pad [3][3 * maxSideChannels]float32
	row := cols * ch
	for _, x := range [2]int{0, cols - 1} {
		for y := y0; y < y1; y++ {
			for r := range pad {
				cells := pad[r][:3*ch]
				sy := y + r - 1
				if sy < 0 || sy >= rows {
					clear(cells)
					continue
				}
				if x == 0 {
					clear(cells[:ch])
					copy(cells[ch:], src[sy*row:sy*row+2*ch])
				} else {
					copy(cells, src[sy*row+(x-1)*ch:sy*row+(x+1)*ch])
					clear(cells[2*ch:])
				}
			}
			depthwiseCellVec(dst[y*row+x*ch:y*row+(x+1)*ch], pad[0][:3*ch], pad[1][:3*ch], pad[2][:3*ch], ch, w, b, lo)
		}
	}
}

// zeroRow is the padding above a depth-wise convolution's first row and
// below its last, for the vector kernel: never written. 8192 values hold
// a row of the network's first level (16 channels) at 512 cells, a
// 1024-pixel frame's scan.
var zeroRow [8192]float32

// depthwiseCells computes the depth-wise convolution's cells y0 ≤ y < y1,
// x0 ≤ x < x1.
func depthwiseCells(dst, src []float32, rows, cols, ch int, w, b []float32, lo float32, y0, y1, x0, x1 int) {
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			o := dst[(y*cols+x)*ch : (y*cols+x+1)*ch]
			copy(o, b)
			for dy := -1; dy <= 1; dy++ {
				sy := y + dy
				if sy < 0 || sy >= rows {
					continue
				}
				if x > 0 && x < cols-1 {
					// The row's three taps in one pass: each output
					// loaded and stored once for three products.
					at := (sy*cols + x - 1) * ch
					s0, s1, s2 := src[at:][:len(o)], src[at+ch:][:len(o)], src[at+2*ch:][:len(o)]
					t := (dy + 1) * 3 * ch
					w0, w1, w2 := w[t:][:len(o)], w[t+ch:][:len(o)], w[t+2*ch:][:len(o)]
					for c := range o {
						o[c] += s0[c]*w0[c] + s1[c]*w1[c] + s2[c]*w2[c]
					}
					continue
				}
				for dx := -1; dx <= 1; dx++ {
					sx := x + dx
					if sx < 0 || sx >= cols {
						continue
					}
					tap := (dy+1)*3 + dx + 1
					s := src[(sy*cols+sx)*ch : (sy*cols+sx+1)*ch]
					ww := w[tap*ch : tap*ch+ch]
					for c := range o {
						o[c] += s[c] * ww[c]
					}
				}
			}
			for c, v := range o {
				o[c] = max(v, lo)
			}
		}
	}
}
