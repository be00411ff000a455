//go:build !purego

#include "textflag.h"

// NEON kernels of the network (kernel_vec.go says what each takes; the Go
// kernels of kernel.go and net.go are their reference). Go's assembler has
// the fused VFMLA (d += n·m) but no vector FMAX or FADD: those are written
// as their encodings (Arm ARM, "FMAX (vector)" and "FADD (vector)", single
// precision, 128 bits).

// FMAX Vd.4S, Vn.4S, Vm.4S
#define FMAX(d, n, m) WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))

// FADD Vd.4S, Vn.4S, Vm.4S
#define FADD(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))

// The floor lo (V31) on four accumulators from a.
#define FLOOR4(a) \
	FMAX((a), (a), 31); \
	FMAX((a)+1, (a)+1, 31); \
	FMAX((a)+2, (a)+2, 31); \
	FMAX((a)+3, (a)+3, 31)

// func pwKernel(dst, src, wt, b *float32, n, in, out int, lo float32)
//
// dst[p][o] = max(lo, b[o] + Σ_c src[p][c]·wt[c][o]) for n cells, out a
// multiple of 16. Four cells at a time share each row of 16 weights
// (V16–V19): 16 accumulators (V0–V15), each cell's input broadcast
// (V20–V23); the cells left over go one at a time.
//
// Registers: R0 dst cell, R1 src cell, R2 wt, R3 b, R4 cells left, R5 in,
// R7 in·4, R8 out·4, R10 the outputs' byte offset, R12, R15, R19, R20 the
// four cells' inputs, R13 the weights' walk, R14 inputs left, R21 stores.
TEXT ·pwKernel(SB), NOSPLIT, $0-60
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  wt+16(FP), R2
	MOVD  b+24(FP), R3
	MOVD  n+32(FP), R4
	MOVD  in+40(FP), R5
	MOVD  out+48(FP), R8
	MOVWU lo+56(FP), R9
	VDUP  R9, V31.S4
	LSL   $2, R5, R7
	LSL   $2, R8, R8

pwcells4:
	CMP  $4, R4
	BLT  pwcells1
	MOVD ZR, R10

pwchunk4:
	ADD  R3, R10, R11
	VLD1 (R11), [V0.S4, V1.S4, V2.S4, V3.S4]
	VMOV V0.B16, V4.B16
	VMOV V1.B16, V5.B16
	VMOV V2.B16, V6.B16
	VMOV V3.B16, V7.B16
	VMOV V0.B16, V8.B16
	VMOV V1.B16, V9.B16
	VMOV V2.B16, V10.B16
	VMOV V3.B16, V11.B16
	VMOV V0.B16, V12.B16
	VMOV V1.B16, V13.B16
	VMOV V2.B16, V14.B16
	VMOV V3.B16, V15.B16
	MOVD R1, R12
	ADD  R12, R7, R15
	ADD  R15, R7, R19
	ADD  R19, R7, R20
	ADD  R2, R10, R13
	MOVD R5, R14

pwin4:
	VLD1   (R13), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD    R8, R13, R13
	VLD1R.P 4(R12), [V20.S4]
	VLD1R.P 4(R15), [V21.S4]
	VLD1R.P 4(R19), [V22.S4]
	VLD1R.P 4(R20), [V23.S4]
	VFMLA  V16.S4, V20.S4, V0.S4
	VFMLA  V17.S4, V20.S4, V1.S4
	VFMLA  V18.S4, V20.S4, V2.S4
	VFMLA  V19.S4, V20.S4, V3.S4
	VFMLA  V16.S4, V21.S4, V4.S4
	VFMLA  V17.S4, V21.S4, V5.S4
	VFMLA  V18.S4, V21.S4, V6.S4
	VFMLA  V19.S4, V21.S4, V7.S4
	VFMLA  V16.S4, V22.S4, V8.S4
	VFMLA  V17.S4, V22.S4, V9.S4
	VFMLA  V18.S4, V22.S4, V10.S4
	VFMLA  V19.S4, V22.S4, V11.S4
	VFMLA  V16.S4, V23.S4, V12.S4
	VFMLA  V17.S4, V23.S4, V13.S4
	VFMLA  V18.S4, V23.S4, V14.S4
	VFMLA  V19.S4, V23.S4, V15.S4
	SUBS   $1, R14, R14
	BNE    pwin4

	FLOOR4(0)
	FLOOR4(4)
	FLOOR4(8)
	FLOOR4(12)
	ADD  R0, R10, R21
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R21)
	ADD  R21, R8, R21
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R21)
	ADD  R21, R8, R21
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R21)
	ADD  R21, R8, R21
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R21)
	ADD  $64, R10, R10
	CMP  R8, R10
	BLT  pwchunk4

	ADD R7<<2, R1, R1
	ADD R8<<2, R0, R0
	SUB $4, R4, R4
	B   pwcells4

pwcells1:
	CBZ  R4, pwdone
	MOVD ZR, R10

pwchunk1:
	ADD  R3, R10, R11
	VLD1 (R11), [V0.S4, V1.S4, V2.S4, V3.S4]
	MOVD R1, R12
	ADD  R2, R10, R13
	MOVD R5, R14

pwin1:
	VLD1    (R13), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD     R8, R13, R13
	VLD1R.P 4(R12), [V20.S4]
	VFMLA   V16.S4, V20.S4, V0.S4
	VFMLA   V17.S4, V20.S4, V1.S4
	VFMLA   V18.S4, V20.S4, V2.S4
	VFMLA   V19.S4, V20.S4, V3.S4
	SUBS    $1, R14, R14
	BNE     pwin1

	FLOOR4(0)
	ADD  R0, R10, R21
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R21)
	ADD  $64, R10, R10
	CMP  R8, R10
	BLT  pwchunk1

	ADD R7, R1, R1
	ADD R8, R0, R0
	SUB $1, R4, R4
	B   pwcells1

pwdone:
	RET

// DWTAPS: a row's three taps of a cell: the left, centre and right
// neighbours of row (R7, row, R8) times the weights wl, wc, wr into the
// accumulators al, ac, ar.
#define DWTAPS(row, wl, wc, wr, al, ac, ar) \
	SUB   R11, row, R7; \
	ADD   R11, row, R8; \
	VLD1  (R7), [V12.S4]; \
	VLD1  (row), [V13.S4]; \
	VLD1  (R8), [V14.S4]; \
	VFMLA wl.S4, V12.S4, al.S4; \
	VFMLA wc.S4, V13.S4, ac.S4; \
	VFMLA wr.S4, V14.S4, ar.S4

// func dwRowKernel(dst, up, mid, down, w, b *float32, n, ch int, lo float32)
//
// dst[x][c] = max(lo, b[c] + Σ_tap row_dy[x+dx][c]·w[tap][c]) for n cells
// of a row with all their neighbours, ch a multiple of 4 (the callers give
// multiples of 8). For each 4 channels the 9 taps' weights (V0–V8) and the
// biases (V9) stay in registers while the cells go by; each cell sums its
// taps in two accumulators (V10, V11).
//
// Registers: R11 ch·4, R10 the channels' byte offset, R2 dst, R3, R4, R5
// the cells above, at and below, R6 cells left, R7 and R8 the left and
// right neighbours.
TEXT ·dwRowKernel(SB), NOSPLIT, $0-68
	MOVD  ch+56(FP), R11
	LSL   $2, R11, R11
	MOVWU lo+64(FP), R9
	VDUP  R9, V31.S4
	MOVD  ZR, R10

dwblock:
	MOVD w+32(FP), R0
	ADD  R10, R0, R0
	VLD1 (R0), [V0.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V1.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V2.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V3.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V4.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V5.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V6.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V7.S4]
	ADD  R11, R0, R0
	VLD1 (R0), [V8.S4]
	MOVD b+40(FP), R1
	ADD  R10, R1, R1
	VLD1 (R1), [V9.S4]
	MOVD dst+0(FP), R2
	MOVD up+8(FP), R3
	MOVD mid+16(FP), R4
	MOVD down+24(FP), R5
	ADD  R10, R2, R2
	ADD  R10, R3, R3
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	MOVD n+48(FP), R6

dwcell:
	VMOV  V9.B16, V10.B16
	VEOR  V11.B16, V11.B16, V11.B16
	DWTAPS(R3, V0, V1, V2, V10, V11, V10)
	DWTAPS(R4, V3, V4, V5, V11, V10, V11)
	DWTAPS(R5, V6, V7, V8, V10, V11, V10)
	FADD(10, 10, 11)
	FMAX(10, 10, 31)
	VST1  [V10.S4], (R2)
	ADD   R11, R2, R2
	ADD   R11, R3, R3
	ADD   R11, R4, R4
	ADD   R11, R5, R5
	SUBS  $1, R6, R6
	BNE   dwcell

	ADD $16, R10, R10
	CMP R11, R10
	BLT dwblock
	RET

// func poolKernel(dst, top, bottom *float32, n, ch int)
//
// dst[x][c] = the largest of top[2x][c], top[2x+1][c], bottom[2x][c],
// bottom[2x+1][c], for n cells of ch channels (a multiple of 4).
TEXT ·poolKernel(SB), NOSPLIT, $0-40
	MOVD dst+0(FP), R0
	MOVD top+8(FP), R1
	MOVD bottom+16(FP), R2
	MOVD n+24(FP), R3
	MOVD ch+32(FP), R5
	LSL  $2, R5, R5

poolcell:
	MOVD ZR, R6

poolblock:
	ADD  R1, R6, R7
	VLD1 (R7), [V0.S4]
	ADD  R7, R5, R7
	VLD1 (R7), [V1.S4]
	ADD  R2, R6, R8
	VLD1 (R8), [V2.S4]
	ADD  R8, R5, R8
	VLD1 (R8), [V3.S4]
	FMAX(0, 0, 1)
	FMAX(2, 2, 3)
	FMAX(0, 0, 2)
	ADD  R0, R6, R9
	VST1 [V0.S4], (R9)
	ADD  $16, R6, R6
	CMP  R5, R6
	BLT  poolblock

	ADD  R5, R0, R0
	ADD  R5<<1, R1, R1
	ADD  R5<<1, R2, R2
	SUBS $1, R3, R3
	BNE  poolcell
	RET
