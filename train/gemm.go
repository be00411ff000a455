package train

import (
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// The four dense products of an EM iteration (docs/method.md §3: E-step
// Y·[Σ⁻¹A Σ⁻¹b] and Y²·Σ⁻¹, M-step [ρ; ρ∘x]·Y and ρ·Y²) are nearly all of
// its time. mul computes them with a cache-blocked kernel that keeps a
// 6×8 block of C in AVX2 registers and updates it by fused multiply-adds
// (gemm_amd64.s) where the CPU has AVX2 and FMA, and with gonum's
// general product elsewhere.
//
// The blocking is BLIS's: for each kc-deep slice of the inner dimension,
// B's slice is packed into 8-column panels and A's into 6-row panels, so
// that the kernel reads both contiguously; C accumulates the slices in
// order. The larger of C's dimensions is cut into one contiguous part per
// core, each computed alone, so that every element of C is the same sum in
// the same order whatever the number of cores: EM stays deterministic.
const (
	gemmMR = 6   // rows of C per kernel call
	gemmNR = 8   // columns of C per kernel call (two 4-double registers)
	gemmKC = 256 // depth of a packed slice: an A panel (12 KB) and a B panel (16 KB) stay in L1
	gemmMC = 96  // rows of A packed at once (192 KB: L2)
	gemmNC = 2048
)

// useKernel says whether the assembly kernel runs (AVX2 and FMA present);
// tests turn it off to compare with gonum.
var useKernel = haveKernel

// mul sets c = a·b. c must be a×b's size and share no storage with them.
func mul(c, a, b *mat.Dense) {
	m, k := a.Dims()
	k2, n := b.Dims()
	if cm, cn := c.Dims(); k != k2 || cm != m || cn != n {
		panic("train: mul: dimension mismatch")
	}
	if !useKernel || m == 0 || n == 0 || k == 0 {
		c.Mul(a, b)
		return
	}
	A, B, C := a.RawMatrix(), b.RawMatrix(), c.RawMatrix()
	parts := runtime.GOMAXPROCS(0)
	// Cut the larger dimension into parts aligned to the kernel's tile.
	byRows := m >= n
	size, align := n, gemmNR
	if byRows {
		size, align = m, gemmMR
	}
	tiles := (size + align - 1) / align
	parts = max(1, min(parts, tiles))
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*tiles/parts*align, min((p+1)*tiles/parts*align, size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if byRows {
				gemmSerial(C.Data[lo*C.Stride:], C.Stride, A.Data[lo*A.Stride:], A.Stride, B.Data, B.Stride, hi-lo, n, k)
			} else {
				gemmSerial(C.Data[lo:], C.Stride, A.Data, A.Stride, B.Data[lo:], B.Stride, m, hi-lo, k)
			}
		}()
	}
	wg.Wait()
}

// gemmSerial sets the m×n block C (stride ldc) to A·B, A m×k (lda), B
// k×n (ldb), on one core.
func gemmSerial(c []float64, ldc int, a []float64, lda int, b []float64, ldb, m, n, k int) {
	for i := 0; i < m; i++ {
		clear(c[i*ldc : i*ldc+n])
	}
	ap := make([]float64, gemmMC*gemmKC)
	bp := make([]float64, ((min(n, gemmNC)+gemmNR-1)/gemmNR)*gemmNR*gemmKC)
	var tile [gemmMR * gemmNR]float64
	for jc := 0; jc < n; jc += gemmNC {
		nc := min(gemmNC, n-jc)
		for pc := 0; pc < k; pc += gemmKC {
			kc := min(gemmKC, k-pc)
			packB(bp, b[pc*ldb+jc:], ldb, kc, nc)
			for ic := 0; ic < m; ic += gemmMC {
				mc := min(gemmMC, m-ic)
				packA(ap, a[ic*lda+pc:], lda, mc, kc)
				for jr := 0; jr < nc; jr += gemmNR {
					nr := min(gemmNR, nc-jr)
					bpan := bp[(jr/gemmNR)*gemmNR*kc:]
					for ir := 0; ir < mc; ir += gemmMR {
						mr := min(gemmMR, mc-ir)
						apan := ap[(ir/gemmMR)*gemmMR*kc:]
						ct := c[(ic+ir)*ldc+jc+jr:]
						if mr == gemmMR && nr == gemmNR {
							kernel6x8(kc, &apan[0], &bpan[0], &ct[0], ldc)
							continue
						}
						// An edge tile: compute it whole in a scratch tile
						// (the panels are zero-padded) and add its valid part.
						clear(tile[:])
						kernel6x8(kc, &apan[0], &bpan[0], &tile[0], gemmNR)
						for i := 0; i < mr; i++ {
							for j := 0; j < nr; j++ {
								ct[i*ldc+j] += tile[i*gemmNR+j]
							}
						}
					}
				}
			}
		}
	}
}

// packA copies the mc×kc block of A (stride lda) into 6-row panels: panel
// r holds, for p = 0…kc−1, A[6r…6r+5][p] (rows past mc are zero).
func packA(dst, a []float64, lda, mc, kc int) {
	for r := 0; r < mc; r += gemmMR {
		pan := dst[(r/gemmMR)*gemmMR*kc:]
		rows := min(gemmMR, mc-r)
		for i := 0; i < gemmMR; i++ {
			if i >= rows {
				for p := 0; p < kc; p++ {
					pan[p*gemmMR+i] = 0
				}
				continue
			}
			row := a[(r+i)*lda : (r+i)*lda+kc]
			for p, v := range row {
				pan[p*gemmMR+i] = v
			}
		}
	}
}

// packB copies the kc×nc block of B (stride ldb) into 8-column panels:
// panel q holds, for p = 0…kc−1, B[p][8q…8q+7] (columns past nc are zero).
func packB(dst, b []float64, ldb, kc, nc int) {
	for q := 0; q < nc; q += gemmNR {
		pan := dst[(q/gemmNR)*gemmNR*kc:]
		cols := min(gemmNR, nc-q)
		for p := 0; p < kc; p++ {
			row := b[p*ldb+q:]
			out := pan[p*gemmNR : p*gemmNR+gemmNR]
			copy(out, row[:cols])
			clear(out[cols:])
		}
	}
}
