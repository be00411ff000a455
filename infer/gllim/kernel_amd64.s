//go:build !purego

#include "textflag.h"

// Zero the accumulators Y0…Y7 (four rows, two each).
#define ZERO_ROWS \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// Reduce the row accumulators to X0 = (Σa, Σb, Σc, Σe): row i is
// Y(2i) + Y(2i+1), its two 128-bit halves added, then two horizontal adds
// over the four rows.
#define SUM_ROWS \
	VADDPS       Y1, Y0, Y0; \
	VADDPS       Y3, Y2, Y2; \
	VADDPS       Y5, Y4, Y4; \
	VADDPS       Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VEXTRACTF128 $1, Y2, X3; \
	VADDPS       X3, X2, X2; \
	VEXTRACTF128 $1, Y4, X5; \
	VADDPS       X5, X4, X4; \
	VEXTRACTF128 $1, Y6, X7; \
	VADDPS       X7, X6, X6; \
	VHADDPS      X2, X0, X0; \
	VHADDPS      X6, X4, X4; \
	VHADDPS      X4, X0, X0

// Reduce two accumulators a, b (Y registers; xa, xb their X halves) to
// the scalar in the low lane of xa.
#define SUM_PAIR(a, b, xa, xb) \
	VADDPS       b, a, a; \
	VEXTRACTF128 $1, a, xb; \
	VADDPS       xb, xa, xa; \
	VHADDPS      xa, xa, xa; \
	VHADDPS      xa, xa, xa

// AVX2 + FMA kernels of the forward pass (kernel.go says what each
// computes; the Go kernels there are their reference). n is a multiple of
// 16 (simdBlock); the callers do the tail in Go.

// func dot4AVX(a, b, c, e, x *float32, n int, out *[4]float32)
//
// out[i] = Σ_d row_i[d]·x[d] for the four rows a, b, c, e: each 8-float
// block of x is loaded once for the four rows; two accumulators per row
// (Y0…Y7) hide the fused multiply-add's latency.
TEXT ·dot4AVX(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), R8
	MOVQ b+8(FP), R9
	MOVQ c+16(FP), R10
	MOVQ e+24(FP), R11
	MOVQ x+32(FP), SI
	MOVQ n+40(FP), CX
	MOVQ out+48(FP), DI
	ZERO_ROWS
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    dot4sum

dot4loop:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VFMADD231PS (R8)(AX*4), Y8, Y0
	VFMADD231PS 32(R8)(AX*4), Y9, Y1
	VFMADD231PS (R9)(AX*4), Y8, Y2
	VFMADD231PS 32(R9)(AX*4), Y9, Y3
	VFMADD231PS (R10)(AX*4), Y8, Y4
	VFMADD231PS 32(R10)(AX*4), Y9, Y5
	VFMADD231PS (R11)(AX*4), Y8, Y6
	VFMADD231PS 32(R11)(AX*4), Y9, Y7
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dot4loop

dot4sum:
	// Row i: Y(2i) + Y(2i+1), then the 8 lanes to one.
	SUM_ROWS
	VMOVUPS X0, (DI)
	VZEROUPPER
	RET

// func dot1AVX(a, x *float32, n int) float32
TEXT ·dot1AVX(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), R8
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    dot1sum

dot1loop:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VFMADD231PS (R8)(AX*4), Y8, Y0
	VFMADD231PS 32(R8)(AX*4), Y9, Y1
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dot1loop

dot1sum:
	SUM_PAIR(Y0, Y1, X0, X1)
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func diffSqDistAVX(r, x, c, s *float32, n int) float32
//
// r = x − c, returns Σ r²·s: the difference first (no cancellation), two
// accumulators, r·r then a fused multiply-add with s.
TEXT ·diffSqDistAVX(SB), NOSPLIT, $0-44
	MOVQ   r+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   c+16(FP), R8
	MOVQ   s+24(FP), R9
	MOVQ   n+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    dsdsum

dsd16:
	VMOVUPS     (SI)(AX*4), Y2
	VMOVUPS     32(SI)(AX*4), Y3
	VSUBPS      (R8)(AX*4), Y2, Y2
	VSUBPS      32(R8)(AX*4), Y3, Y3
	VMOVUPS     Y2, (DI)(AX*4)
	VMOVUPS     Y3, 32(DI)(AX*4)
	VMULPS      Y2, Y2, Y2
	VMULPS      Y3, Y3, Y3
	VFMADD231PS (R9)(AX*4), Y2, Y0
	VFMADD231PS 32(R9)(AX*4), Y3, Y1
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dsd16

dsdsum:
	SUM_PAIR(Y0, Y1, X0, X1)
	VMOVSS       X0, ret+40(FP)
	VZEROUPPER
	RET

// Half-precision weights (F16C): rows of A_k stored as binary16, widened
// in registers by VCVTPH2PS (8 halves → 8 floats), halving the bytes the
// pass reads. u = (x − c)·s replaces r: v = A_kᵀ u = A_kᵀ Σ⁻¹ r.

// func distDot4HAVX(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[5]float32)
//
// u = (x − c)·s (stored), out[4] = Σ (x − c)·u, out[0…3] = Σ row_i·u. n is
// a multiple of 16; two accumulators per sum.
TEXT ·distDot4HAVX(SB), NOSPLIT, $0-80
	MOVQ   u+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   c+16(FP), BX
	MOVQ   s+24(FP), DX
	MOVQ   a+32(FP), R8
	MOVQ   b+40(FP), R9
	MOVQ   cc+48(FP), R10
	MOVQ   e+56(FP), R11
	MOVQ   n+64(FP), CX
	ZERO_ROWS
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    hd4sum

hd4loop:
	VMOVUPS     (SI)(AX*4), Y10
	VMOVUPS     32(SI)(AX*4), Y11
	VSUBPS      (BX)(AX*4), Y10, Y10
	VSUBPS      32(BX)(AX*4), Y11, Y11
	VMULPS      (DX)(AX*4), Y10, Y12
	VMULPS      32(DX)(AX*4), Y11, Y13
	VMOVUPS     Y12, (DI)(AX*4)
	VMOVUPS     Y13, 32(DI)(AX*4)
	VFMADD231PS Y12, Y10, Y8
	VFMADD231PS Y13, Y11, Y9
	VCVTPH2PS   (R8)(AX*2), Y14
	VCVTPH2PS   16(R8)(AX*2), Y15
	VFMADD231PS Y14, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VCVTPH2PS   (R9)(AX*2), Y14
	VCVTPH2PS   16(R9)(AX*2), Y15
	VFMADD231PS Y14, Y12, Y2
	VFMADD231PS Y15, Y13, Y3
	VCVTPH2PS   (R10)(AX*2), Y14
	VCVTPH2PS   16(R10)(AX*2), Y15
	VFMADD231PS Y14, Y12, Y4
	VFMADD231PS Y15, Y13, Y5
	VCVTPH2PS   (R11)(AX*2), Y14
	VCVTPH2PS   16(R11)(AX*2), Y15
	VFMADD231PS Y14, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         hd4loop

hd4sum:
	MOVQ         out+72(FP), DI
	SUM_ROWS
	SUM_PAIR(Y8, Y9, X8, X9)
	VMOVUPS      X0, (DI)
	VMOVSS       X8, 16(DI)
	VZEROUPPER
	RET

// func dot4HAVX(a, b, c, e *uint16, x *float32, n int, out *[4]float32)
TEXT ·dot4HAVX(SB), NOSPLIT, $0-56
	MOVQ   a+0(FP), R8
	MOVQ   b+8(FP), R9
	MOVQ   c+16(FP), R10
	MOVQ   e+24(FP), R11
	MOVQ   x+32(FP), SI
	MOVQ   n+40(FP), CX
	MOVQ   out+48(FP), DI
	ZERO_ROWS
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    h4sum

h4loop:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VCVTPH2PS   (R8)(AX*2), Y10
	VCVTPH2PS   16(R8)(AX*2), Y11
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y1
	VCVTPH2PS   (R9)(AX*2), Y12
	VCVTPH2PS   16(R9)(AX*2), Y13
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y9, Y3
	VCVTPH2PS   (R10)(AX*2), Y10
	VCVTPH2PS   16(R10)(AX*2), Y11
	VFMADD231PS Y10, Y8, Y4
	VFMADD231PS Y11, Y9, Y5
	VCVTPH2PS   (R11)(AX*2), Y12
	VCVTPH2PS   16(R11)(AX*2), Y13
	VFMADD231PS Y12, Y8, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         h4loop

h4sum:
	SUM_ROWS
	VMOVUPS      X0, (DI)
	VZEROUPPER
	RET

// func dot1HAVX(a *uint16, x *float32, n int) float32
TEXT ·dot1HAVX(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), R8
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    h1sum

h1loop:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VCVTPH2PS   (R8)(AX*2), Y10
	VCVTPH2PS   16(R8)(AX*2), Y11
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y1
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         h1loop

h1sum:
	SUM_PAIR(Y0, Y1, X0, X1)
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET
