//go:build !purego

#include "textflag.h"

// NEON kernels of the forward pass (kernel.go says what each computes; the
// Go kernels there are their reference). n is a multiple of 8 (simdBlock); the callers
// do the tail in Go and sum the lanes left in out. Go's assembler has no
// vector float add, subtract or multiply, only the fused VFMLA (d += n·m)
// and VFMLS (d −= n·m): with a vector of ones, x − c is VFMLS into a copy
// of x and a + b is VFMLA, each exactly one rounding as the plain
// operations; r² is VFMLA into a zeroed register. V30 holds the ones.

// Zero the row accumulators V0…V7 (four rows, two each).
#define ZERO_ROWS \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; \
	VEOR V5.B16, V5.B16, V5.B16; \
	VEOR V6.B16, V6.B16, V6.B16; \
	VEOR V7.B16, V7.B16, V7.B16

// Add each row's two accumulators (V2i += V2i+1 · 1) and store rows 0–2
// at R6, advancing it (row 3, in V6, is stored by the caller).
#define ADD_PAIRS \
	VFMLA  V30.S4, V1.S4, V0.S4; \
	VFMLA  V30.S4, V3.S4, V2.S4; \
	VFMLA  V30.S4, V5.S4, V4.S4; \
	VFMLA  V30.S4, V7.S4, V6.S4; \
	VST1.P [V0.S4], 16(R6); \
	VST1.P [V2.S4], 16(R6); \
	VST1.P [V4.S4], 16(R6)

#define ONES(reg) \
	MOVW $0x3f800000, R9; \
	VDUP R9, V30.S4

// func dot4NEON(a, b, c, e, x *float32, n int, out *[16]float32)
//
// out[4i…4i+3] are the four lanes of row i's dot product with x; each
// 8-float block of x is loaded once for the four rows, two accumulators
// per row.
TEXT ·dot4NEON(SB), NOSPLIT, $0-56
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD c+16(FP), R2
	MOVD e+24(FP), R3
	MOVD x+32(FP), R4
	MOVD n+40(FP), R5
	MOVD out+48(FP), R6
	ONES(R9)
	ZERO_ROWS
	CBZ  R5, dot4done

dot4loop:
	VLD1.P 32(R4), [V16.S4, V17.S4]
	VLD1.P 32(R0), [V18.S4, V19.S4]
	VLD1.P 32(R1), [V20.S4, V21.S4]
	VLD1.P 32(R2), [V22.S4, V23.S4]
	VLD1.P 32(R3), [V24.S4, V25.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	VFMLA  V17.S4, V19.S4, V1.S4
	VFMLA  V16.S4, V20.S4, V2.S4
	VFMLA  V17.S4, V21.S4, V3.S4
	VFMLA  V16.S4, V22.S4, V4.S4
	VFMLA  V17.S4, V23.S4, V5.S4
	VFMLA  V16.S4, V24.S4, V6.S4
	VFMLA  V17.S4, V25.S4, V7.S4
	SUBS   $8, R5, R5
	BNE    dot4loop

dot4done:
	ADD_PAIRS
	VST1   [V6.S4], (R6)
	RET

// func dot1NEON(a, x *float32, n int, out *[4]float32)
TEXT ·dot1NEON(SB), NOSPLIT, $0-32
	MOVD a+0(FP), R0
	MOVD x+8(FP), R4
	MOVD n+16(FP), R5
	MOVD out+24(FP), R6
	ONES(R9)
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	CBZ  R5, dot1done

dot1loop:
	VLD1.P 32(R4), [V16.S4, V17.S4]
	VLD1.P 32(R0), [V18.S4, V19.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	VFMLA  V17.S4, V19.S4, V1.S4
	SUBS   $8, R5, R5
	BNE    dot1loop

dot1done:
	VFMLA V30.S4, V1.S4, V0.S4
	VST1  [V0.S4], (R6)
	RET

// func diffSqDistNEON(r, x, c, s *float32, n int, out *[4]float32)
TEXT ·diffSqDistNEON(SB), NOSPLIT, $0-48
	MOVD r+0(FP), R7
	MOVD x+8(FP), R4
	MOVD c+16(FP), R8
	MOVD s+24(FP), R10
	MOVD n+32(FP), R5
	MOVD out+40(FP), R6
	ONES(R9)
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	CBZ  R5, dsddone

dsdloop:
	VLD1.P 32(R4), [V16.S4, V17.S4]
	VLD1.P 32(R8), [V26.S4, V27.S4]
	VFMLS  V30.S4, V26.S4, V16.S4
	VFMLS  V30.S4, V27.S4, V17.S4
	VST1.P [V16.S4, V17.S4], 32(R7)
	VEOR   V28.B16, V28.B16, V28.B16
	VEOR   V29.B16, V29.B16, V29.B16
	VFMLA  V16.S4, V16.S4, V28.S4
	VFMLA  V17.S4, V17.S4, V29.S4
	VLD1.P 32(R10), [V26.S4, V27.S4]
	VFMLA  V26.S4, V28.S4, V8.S4
	VFMLA  V27.S4, V29.S4, V9.S4
	SUBS   $8, R5, R5
	BNE    dsdloop

dsddone:
	VFMLA V30.S4, V9.S4, V8.S4
	VST1  [V8.S4], (R6)
	RET

// Half-precision weights: rows of A_k as binary16, widened in registers
// by FCVTL/FCVTL2 (4 halves → 4 singles each). Go's assembler has no
// FCVTL: it is encoded by hand,
//   FCVTL  Vd.4S, Vn.4H = 0x0e217800 | n<<5 | d
//   FCVTL2 Vd.4S, Vn.8H = 0x4e217800 | n<<5 | d
// u = (x − c)·s replaces r (v = A_kᵀ u); u = r·s is VFMLA into zero.

// Widen the 8 halves of V(h) into V(lo) (first 4) and V(hi) (last 4).
#define WIDEN(h, lo, hi) \
	WORD $(0x0e217800 | (h<<5) | lo); \
	WORD $(0x4e217800 | (h<<5) | hi)

// func distDot4HNEON(u, x, c, s *float32, a, b, cc, e *uint16, n int, out *[20]float32)
//
// u = (x − c)·s (stored); out[16…19] the lanes of Σ (x − c)·u;
// out[4i…4i+3] the lanes of Σ row_i·u. n is a multiple of 8.
TEXT ·distDot4HNEON(SB), NOSPLIT, $0-80
	MOVD u+0(FP), R7
	MOVD x+8(FP), R4
	MOVD c+16(FP), R8
	MOVD s+24(FP), R10
	MOVD a+32(FP), R0
	MOVD b+40(FP), R1
	MOVD cc+48(FP), R2
	MOVD e+56(FP), R3
	MOVD n+64(FP), R5
	MOVD out+72(FP), R6
	ONES(R9)
	ZERO_ROWS
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	CBZ  R5, hd4done

hd4loop:
	VLD1.P 32(R4), [V16.S4, V17.S4]  // x
	VLD1.P 32(R8), [V26.S4, V27.S4]  // c
	VFMLS  V30.S4, V26.S4, V16.S4    // r = x − c·1
	VFMLS  V30.S4, V27.S4, V17.S4
	VLD1.P 32(R10), [V26.S4, V27.S4] // s
	VEOR   V28.B16, V28.B16, V28.B16
	VEOR   V29.B16, V29.B16, V29.B16
	VFMLA  V26.S4, V16.S4, V28.S4    // u = r·s
	VFMLA  V27.S4, V17.S4, V29.S4
	VST1.P [V28.S4, V29.S4], 32(R7)
	VFMLA  V28.S4, V16.S4, V8.S4     // q += r·u
	VFMLA  V29.S4, V17.S4, V9.S4
	VLD1.P 16(R0), [V18.H8]
	VLD1.P 16(R1), [V19.H8]
	VLD1.P 16(R2), [V20.H8]
	VLD1.P 16(R3), [V21.H8]
	WIDEN(18, 22, 23)
	VFMLA  V28.S4, V22.S4, V0.S4
	VFMLA  V29.S4, V23.S4, V1.S4
	WIDEN(19, 24, 25)
	VFMLA  V28.S4, V24.S4, V2.S4
	VFMLA  V29.S4, V25.S4, V3.S4
	WIDEN(20, 22, 23)
	VFMLA  V28.S4, V22.S4, V4.S4
	VFMLA  V29.S4, V23.S4, V5.S4
	WIDEN(21, 24, 25)
	VFMLA  V28.S4, V24.S4, V6.S4
	VFMLA  V29.S4, V25.S4, V7.S4
	SUBS   $8, R5, R5
	BNE    hd4loop

hd4done:
	ADD_PAIRS
	VFMLA  V30.S4, V9.S4, V8.S4
	VST1.P [V6.S4], 16(R6)
	VST1   [V8.S4], (R6)
	RET

// func dot4HNEON(a, b, c, e *uint16, x *float32, n int, out *[16]float32)
TEXT ·dot4HNEON(SB), NOSPLIT, $0-56
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD c+16(FP), R2
	MOVD e+24(FP), R3
	MOVD x+32(FP), R4
	MOVD n+40(FP), R5
	MOVD out+48(FP), R6
	ONES(R9)
	ZERO_ROWS
	CBZ  R5, h4done

h4loop:
	VLD1.P 32(R4), [V16.S4, V17.S4]
	VLD1.P 16(R0), [V18.H8]
	VLD1.P 16(R1), [V19.H8]
	VLD1.P 16(R2), [V20.H8]
	VLD1.P 16(R3), [V21.H8]
	WIDEN(18, 22, 23)
	VFMLA  V16.S4, V22.S4, V0.S4
	VFMLA  V17.S4, V23.S4, V1.S4
	WIDEN(19, 24, 25)
	VFMLA  V16.S4, V24.S4, V2.S4
	VFMLA  V17.S4, V25.S4, V3.S4
	WIDEN(20, 22, 23)
	VFMLA  V16.S4, V22.S4, V4.S4
	VFMLA  V17.S4, V23.S4, V5.S4
	WIDEN(21, 24, 25)
	VFMLA  V16.S4, V24.S4, V6.S4
	VFMLA  V17.S4, V25.S4, V7.S4
	SUBS   $8, R5, R5
	BNE    h4loop

h4done:
	ADD_PAIRS
	VST1   [V6.S4], (R6)
	RET

// func dot1HNEON(a *uint16, x *float32, n int, out *[4]float32)
TEXT ·dot1HNEON(SB), NOSPLIT, $0-32
	MOVD a+0(FP), R0
	MOVD x+8(FP), R4
	MOVD n+16(FP), R5
	MOVD out+24(FP), R6
	ONES(R9)
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	CBZ  R5, h1done

h1loop:
	VLD1.P 32(R4), [V16.S4, V17.S4]
	VLD1.P 16(R0), [V18.H8]
	WIDEN(18, 22, 23)
	VFMLA  V16.S4, V22.S4, V0.S4
	VFMLA  V17.S4, V23.S4, V1.S4
	SUBS   $8, R5, R5
	BNE    h1loop

h1done:
	VFMLA V30.S4, V1.S4, V0.S4
	VST1  [V0.S4], (R6)
	RET
