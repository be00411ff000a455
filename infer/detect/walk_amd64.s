//go:build !purego

#include "textflag.h"

// Pixel step of one level: Y4, Y5 hold the lanes' offsets o1, o2; p_k is
// the top byte of the 4 bytes ending on base + o_k (SI is pix − 3, so no
// byte past a pixel is read); idx = 2·idx + 1 − [p1 > p2]. A gather
// clears its mask, so each is given a fresh all-ones one (Y15).
#define STEP \
	VPADDD     Y0, Y4, Y4; \
	VPADDD     Y0, Y5, Y5; \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, (SI)(Y4*1), Y6; \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, (SI)(Y5*1), Y7; \
	VPSRLD     $24, Y6, Y6; \
	VPSRLD     $24, Y7, Y7; \
	VPCMPGTD   Y7, Y6, Y8; \
	VPADDD     Y1, Y1, Y1; \
	VPADDD     Y14, Y1, Y1; \
	VPADDD     Y8, Y1, Y1

// Offsets of level L ≤ 3 (nodes 2^L … 2^(L+1) − 1, 8 or fewer): one
// permute of the 8 entries from node 2^L by j = idx − 2^L (in Y3).
#define PERM_LEVEL(first, lo) \
	VPSUBD lo, Y1, Y3; \
	VPERMD (first*4)(DX), Y3, Y4; \
	VPERMD (first*4)(R10), Y3, Y5

// func walk6AVX(out, base *int32, n int, o1, o2 *int32, pix *byte)
//
// Eight windows at a time walk down one tree of depth 6 (pico eq. 1, see
// Cascade and walkGo, its reference): from idx = 1, six times
// idx = 2·idx + [p1 ≤ p2], p_k = pix[base + o_k[idx − 1]]. The node
// offsets of levels 0–3 come from one permute of a register, level 4's
// from two and a blend, level 5's from gathers.
TEXT ·walk6AVX(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ base+8(FP), BX
	MOVQ n+16(FP), R8
	MOVQ o1+24(FP), DX
	MOVQ o2+32(FP), R10
	MOVQ pix+40(FP), SI
	SUBQ $3, SI
	MOVL $1, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14        // 1
	MOVL $2, AX
	MOVQ AX, X13
	VPBROADCASTD X13, Y13        // 2
	MOVL $4, AX
	MOVQ AX, X12
	VPBROADCASTD X12, Y12        // 4
	MOVL $8, AX
	MOVQ AX, X11
	VPBROADCASTD X11, Y11        // 8
	MOVL $16, AX
	MOVQ AX, X10
	VPBROADCASTD X10, Y10        // 16
	MOVL $7, AX
	MOVQ AX, X9
	VPBROADCASTD X9, Y9          // 7
	VPBROADCASTD (DX), Y2        // level 0: node 1's o1 for every lane
	SHRQ $3, R8
	JZ   done

loop:
	VMOVDQU (BX), Y0             // the windows' centres
	VMOVDQA Y14, Y1              // idx = 1
	VMOVDQA Y2, Y4
	VPBROADCASTD (R10), Y5
	STEP                         // level 0
	PERM_LEVEL(1, Y13)
	STEP                         // level 1: nodes 2, 3
	PERM_LEVEL(3, Y12)
	STEP                         // level 2: nodes 4…7
	PERM_LEVEL(7, Y11)
	STEP                         // level 3: nodes 8…15
	// level 4: nodes 16…31, j = idx − 16; entries 15…22 or 23…30.
	VPSUBD     Y10, Y1, Y3
	VPCMPGTD   Y9, Y3, Y8        // j > 7
	VPERMD     60(DX), Y3, Y4
	VPERMD     92(DX), Y3, Y6
	VPBLENDVB  Y8, Y6, Y4, Y4
	VPERMD     60(R10), Y3, Y5
	VPERMD     92(R10), Y3, Y6
	VPBLENDVB  Y8, Y6, Y5, Y5
	STEP
	// level 5: nodes 32…63, gathered at idx − 1.
	VPSUBD     Y14, Y1, Y3
	VPCMPEQD   Y15, Y15, Y15
	VPGATHERDD Y15, (DX)(Y3*4), Y4
	VPCMPEQD   Y15, Y15, Y15
	VPGATHERDD Y15, (R10)(Y3*4), Y5
	STEP

	VMOVDQU Y1, (DI)
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    R8
	JNZ     loop

done:
	VZEROUPPER
	RET

// func keepAVX(cand *int32, score *float32, idx *int32, n int, leaf *float32, thr float32, lut *[256][8]int32, kept int) int
//
// The survivors of one tree (pico eq. 2, see scanScale, its reference),
// eight windows at a time: v_i = score_i + leaf[idx_i mod 64] (depth 6),
// window i kept when v_i > thr (ordered: a NaN is dropped), the kept
// centres and sums packed in order from index kept on (a permute by the
// table entry of the 8-bit mask: lut[m] lists m's set lanes first). n is a
// multiple of 8; the packed stores write 8 lanes at kept ≤ i, so they
// overwrite only windows already read. Returns the new kept.
TEXT ·keepAVX(SB), NOSPLIT, $0-72
	MOVQ cand+0(FP), DI
	MOVQ score+8(FP), SI
	MOVQ idx+16(FP), BX
	MOVQ n+24(FP), R8
	MOVQ leaf+32(FP), R11
	VBROADCASTSS thr+40(FP), Y13
	MOVQ lut+48(FP), R9
	MOVQ kept+56(FP), R13
	MOVL $63, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14        // 63
	XORQ R12, R12                // i
	SHRQ $3, R8
	JZ   kdone

kloop:
	VMOVDQU (BX)(R12*4), Y1      // leaf heap indices, 64…127
	VPAND   Y14, Y1, Y1          // mod 64: the leaf
	VPCMPEQD Y15, Y15, Y15
	VGATHERDPS Y15, (R11)(Y1*4), Y2
	VMOVUPS (SI)(R12*4), Y3
	VADDPS  Y2, Y3, Y3           // v = score + leaf
	VMOVDQU (DI)(R12*4), Y0      // the centres
	VCMPPS  $0x1e, Y13, Y3, Y4   // v > thr, ordered
	VMOVMSKPS Y4, AX
	MOVQ    AX, CX
	SHLQ    $5, CX
	VMOVDQU (R9)(CX*1), Y5       // lut[mask]
	VPERMD  Y0, Y5, Y6
	VPERMD  Y3, Y5, Y7
	VMOVDQU Y6, (DI)(R13*4)
	VMOVUPS Y7, (SI)(R13*4)
	POPCNTL AX, AX
	ADDQ    AX, R13
	ADDQ    $8, R12
	DECQ    R8
	JNZ     kloop

kdone:
	MOVQ R13, ret+64(FP)
	VZEROUPPER
	RET
