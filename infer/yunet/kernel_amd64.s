//go:build !purego

#include "textflag.h"

// func pwKernel(dst, src, wt, b *float32, n, in, out int, lo float32)
//
// The point-wise convolution (kernel.go, pointwise): dst[p][o] = max(lo,
// b[o] + Σ_c src[p][c]·wt[c][o]) for n cells, out a multiple of 16. Four
// cells at a time share each 16 weights loaded: 8 independent
// accumulators (Y0–Y7); the cells left over go one at a time.
//
// Registers: DI dst cell, SI src cell, DX wt, R8 b, R9 cells left,
// R10 in·4 (a src cell), R11 out·4 (a dst cell, a wt row), BX the output
// channels' byte offset, R12 src walk, R13 wt walk, CX inputs left, AX
// 3·in·4, Y15 lo.
TEXT ·pwKernel(SB), NOSPLIT, $0-60
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ wt+16(FP), DX
	MOVQ b+24(FP), R8
	MOVQ n+32(FP), R9
	MOVQ in+40(FP), R10
	MOVQ out+48(FP), R11
	VBROADCASTSS lo+56(FP), Y15
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (R10)(R10*2), AX

cells4:
	CMPQ R9, $4
	JLT  cells1
	XORQ BX, BX

chunk4:
	VMOVUPS (R8)(BX*1), Y0
	VMOVUPS 32(R8)(BX*1), Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y1, Y3
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y1, Y7
	MOVQ SI, R12
	LEAQ (DX)(BX*1), R13
	MOVQ in+40(FP), CX

in4:
	VMOVUPS      (R13), Y8
	VMOVUPS      32(R13), Y9
	VBROADCASTSS (R12), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R12)(R10*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R12)(R10*2), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R12)(AX*1), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, R12
	ADDQ         R11, R13
	DECQ         CX
	JNZ          in4

	VMAXPS  Y15, Y0, Y0
	VMAXPS  Y15, Y1, Y1
	VMAXPS  Y15, Y2, Y2
	VMAXPS  Y15, Y3, Y3
	VMAXPS  Y15, Y4, Y4
	VMAXPS  Y15, Y5, Y5
	VMAXPS  Y15, Y6, Y6
	VMAXPS  Y15, Y7, Y7
	LEAQ    (DI)(BX*1), R12
	VMOVUPS Y0, (R12)
	VMOVUPS Y1, 32(R12)
	VMOVUPS Y2, (R12)(R11*1)
	VMOVUPS Y3, 32(R12)(R11*1)
	VMOVUPS Y4, (R12)(R11*2)
	VMOVUPS Y5, 32(R12)(R11*2)
	ADDQ    R11, R12
	VMOVUPS Y6, (R12)(R11*2)
	VMOVUPS Y7, 32(R12)(R11*2)
	ADDQ    $64, BX
	CMPQ    BX, R11
	JLT     chunk4

	LEAQ (SI)(R10*4), SI
	LEAQ (DI)(R11*4), DI
	SUBQ $4, R9
	JMP  cells4

cells1:
	TESTQ R9, R9
	JZ    done
	XORQ  BX, BX

chunk1:
	VMOVUPS (R8)(BX*1), Y0
	VMOVUPS 32(R8)(BX*1), Y1
	MOVQ    SI, R12
	LEAQ    (DX)(BX*1), R13
	MOVQ    in+40(FP), CX

in1:
	VBROADCASTSS (R12), Y10
	VFMADD231PS  (R13), Y10, Y0
	VFMADD231PS  32(R13), Y10, Y1
	ADDQ         $4, R12
	ADDQ         R11, R13
	DECQ         CX
	JNZ          in1

	VMAXPS  Y15, Y0, Y0
	VMAXPS  Y15, Y1, Y1
	VMOVUPS Y0, (DI)(BX*1)
	VMOVUPS Y1, 32(DI)(BX*1)
	ADDQ    $64, BX
	CMPQ    BX, R11
	JLT     chunk1

	ADDQ R10, SI
	ADDQ R11, DI
	DECQ R9
	JMP  cells1

done:
	VZEROUPPER
	RET

// func dwRowKernel(dst, up, mid, down, w, b *float32, n, ch int, lo float32)
//
// The depth-wise 3×3 convolution (kernel.go, depthwise) on n consecutive
// cells of a row that have all their neighbours: dst[x][c] = max(lo, b[c]
// + Σ_tap row_dy[x+dx][c]·w[tap][c]), ch a multiple of 8. For each 8
// channels, the 9 taps' weights (Y0–Y8) and the biases (Y9) stay in
// registers while the cells go by; each cell sums its three rows in two
// accumulators.
//
// Registers: R11 ch·4 (a cell), BX the channels' byte offset, DI dst,
// SI, DX, R8 the cell above, at and below, R12 a left neighbour, CX
// cells left, AX the weights' walk, Y15 lo.
TEXT ·dwRowKernel(SB), NOSPLIT, $0-68
	MOVQ         ch+56(FP), R11
	SHLQ         $2, R11
	VBROADCASTSS lo+64(FP), Y15
	XORQ         BX, BX

block:
	MOVQ    w+32(FP), AX
	ADDQ    BX, AX
	VMOVUPS (AX), Y0
	ADDQ    R11, AX
	VMOVUPS (AX), Y1
	ADDQ    R11, AX
	VMOVUPS (AX), Y2
	ADDQ    R11, AX
	VMOVUPS (AX), Y3
	ADDQ    R11, AX
	VMOVUPS (AX), Y4
	ADDQ    R11, AX
	VMOVUPS (AX), Y5
	ADDQ    R11, AX
	VMOVUPS (AX), Y6
	ADDQ    R11, AX
	VMOVUPS (AX), Y7
	ADDQ    R11, AX
	VMOVUPS (AX), Y8
	MOVQ    b+40(FP), AX
	VMOVUPS (AX)(BX*1), Y9
	MOVQ    dst+0(FP), DI
	MOVQ    up+8(FP), SI
	MOVQ    mid+16(FP), DX
	MOVQ    down+24(FP), R8
	ADDQ    BX, DI
	ADDQ    BX, SI
	ADDQ    BX, DX
	ADDQ    BX, R8
	MOVQ    n+48(FP), CX

cell:
	VMOVAPS     Y9, Y10
	VXORPS      Y11, Y11, Y11
	MOVQ        SI, R12
	SUBQ        R11, R12
	VFMADD231PS (R12), Y0, Y10
	VFMADD231PS (SI), Y1, Y11
	VFMADD231PS (SI)(R11*1), Y2, Y10
	MOVQ        DX, R12
	SUBQ        R11, R12
	VFMADD231PS (R12), Y3, Y11
	VFMADD231PS (DX), Y4, Y10
	VFMADD231PS (DX)(R11*1), Y5, Y11
	MOVQ        R8, R12
	SUBQ        R11, R12
	VFMADD231PS (R12), Y6, Y10
	VFMADD231PS (R8), Y7, Y11
	VFMADD231PS (R8)(R11*1), Y8, Y10
	VADDPS      Y11, Y10, Y10
	VMAXPS      Y15, Y10, Y10
	VMOVUPS     Y10, (DI)
	ADDQ        R11, DI
	ADDQ        R11, SI
	ADDQ        R11, DX
	ADDQ        R11, R8
	DECQ        CX
	JNZ         cell

	ADDQ $32, BX
	CMPQ BX, R11
	JLT  block

	VZEROUPPER
	RET

// func poolKernel(dst, top, bottom *float32, n, ch int)
//
// A row of the 2×2 stride-2 max pool (net.go, maxPool): dst[x][c] = the
// largest of top[2x][c], top[2x+1][c], bottom[2x][c], bottom[2x+1][c],
// for n cells of ch channels (a multiple of 8).
TEXT ·poolKernel(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ top+8(FP), SI
	MOVQ bottom+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ ch+32(FP), R8
	SHLQ $2, R8 // a cell's bytes

poolcell:
	XORQ BX, BX

poolblock:
	VMOVUPS (SI)(BX*1), Y0
	VMOVUPS (DX)(BX*1), Y1
	LEAQ    (SI)(R8*1), R9
	LEAQ    (DX)(R8*1), R10
	VMAXPS  (R9)(BX*1), Y0, Y0
	VMAXPS  (R10)(BX*1), Y1, Y1
	VMAXPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)(BX*1)
	ADDQ    $32, BX
	CMPQ    BX, R8
	JLT     poolblock

	ADDQ R8, DI
	LEAQ (SI)(R8*2), SI
	LEAQ (DX)(R8*2), DX
	DECQ CX
	JNZ  poolcell

	VZEROUPPER
	RET
