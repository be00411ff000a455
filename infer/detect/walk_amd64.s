//go:build !purego

#include "textflag.h"

// Constants, 8 lanes each: 1, 7 and 64, the leaves' first heap index.
DATA one<>+0(SB)/8, $0x0000000100000001
DATA one<>+8(SB)/8, $0x0000000100000001
DATA one<>+16(SB)/8, $0x0000000100000001
DATA one<>+24(SB)/8, $0x0000000100000001
GLOBL one<>(SB), RODATA|NOPTR, $32
DATA seven<>+0(SB)/8, $0x0000000700000007
DATA seven<>+8(SB)/8, $0x0000000700000007
DATA seven<>+16(SB)/8, $0x0000000700000007
DATA seven<>+24(SB)/8, $0x0000000700000007
GLOBL seven<>(SB), RODATA|NOPTR, $32
DATA leaf0<>+0(SB)/8, $0x0000004000000040
DATA leaf0<>+8(SB)/8, $0x0000004000000040
DATA leaf0<>+16(SB)/8, $0x0000004000000040
DATA leaf0<>+24(SB)/8, $0x0000004000000040
GLOBL leaf0<>(SB), RODATA|NOPTR, $32

// One level's pixel step for a chain of 8 windows (centres at B in
// memory, node index within the level J, offsets O1, O2 in, P1, P2
// scratch): p_k is the top byte of the 4 bytes ending on base + o_k (SI is
// pix − 3, so no byte past a pixel is read); j = 2·j + 1 − [p1 > p2], the
// node's index within the next level. A gather clears its mask, so each
// is given a fresh all-ones one (Y15); it writes a register other than its
// index and mask.
#define STEP(B, J, O1, O2, P1, P2) \
	VPADDD     B, O1, O1; \
	VPADDD     B, O2, O2; \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, (SI)(O1*1), P1; \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, (SI)(O2*1), P2; \
	VPSRLD     $24, P1, P1; \
	VPSRLD     $24, P2, P2; \
	VPCMPGTD   P2, P1, P1; \
	VPADDD     J, J, J; \
	VPADDD     one<>(SB), J, J; \
	VPADDD     P1, J, J

// The offsets of level L ≤ 3 (nodes 2^L … 2^(L+1) − 1, heap entries
// first = 2^L − 1 on, 8 or fewer): one permute by j of the 8 entries.
#define PERM(first, J, O1, O2) \
	VPERMD (first*4)(DX), J, O1; \
	VPERMD (first*4)(R10), J, O2

// Level 4 (nodes 16…31, entries 15…30): a permute takes j's low 3 bits,
// so entries 15…22 and 23…30 are permuted and blended on j > 7 (P2).
#define PERM4(J, O1, O2, P1, P2) \
	VPCMPGTD  seven<>(SB), J, P2; \
	VPERMD    60(DX), J, O1; \
	VPERMD    92(DX), J, P1; \
	VPBLENDVB P2, P1, O1, O1; \
	VPERMD    60(R10), J, O2; \
	VPERMD    92(R10), J, P1; \
	VPBLENDVB P2, P1, O2, O2

// Level 5 (nodes 32…63, entries 31…62): gathered at 31 + j.
#define GATHER5(J, O1, O2) \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, 124(DX)(J*4), O1; \
	VPCMPEQD   Y15, Y15, Y15; \
	VPGATHERDD Y15, 124(R10)(J*4), O2

// A chain's first level: j = 0 and every lane at the root.
#define ROOT(J, O1, O2) \
	VPXOR        J, J, J; \
	VPBROADCASTD (DX), O1; \
	VPBROADCASTD (R10), O2

// One level for all three chains: chain 1's windows at (BX), chain 2's
// and 3's at R11 and R12 bytes from it (see walk6AVX).
#define STEP3 \
	STEP(0(BX), Y0, Y1, Y2, Y3, Y4); \
	STEP((BX)(R11*1), Y5, Y6, Y7, Y8, Y9); \
	STEP((BX)(R12*1), Y10, Y11, Y12, Y13, Y14)

#define PERM3(first) \
	PERM(first, Y0, Y1, Y2); \
	PERM(first, Y5, Y6, Y7); \
	PERM(first, Y10, Y11, Y12)

// func walk6AVX(out, base *int32, n int, o1, o2 *int32, pix *byte)
//
// Windows walk down one tree of depth 6 (pico eq. 1, see Cascade and
// walkGo, its reference): from the root, six times n = 2·n + [p1 ≤ p2],
// p_k = pix[base + o_k[n − 1]]; out gets the leaf's heap index n. Eight
// lanes carry, instead of n, its index j = n − 2^L within level L, which
// picks the level's offsets: from one permute of a register at levels 0–3,
// two and a blend at level 4, gathers at level 5. A level waits on the
// last one's gathers, so three chains of 8 windows walk side by side (24
// windows a turn) and their loads overlap. Where fewer than 24 windows
// are left, the chains past the end walk the last group again (the same
// windows, the same leaves written twice): a turn costs one chain's
// latency however many chains are busy.
TEXT ·walk6AVX(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ base+8(FP), BX
	MOVQ n+16(FP), R8
	MOVQ o1+24(FP), DX
	MOVQ o2+32(FP), R10
	MOVQ pix+40(FP), SI
	SUBQ $3, SI
	SHRQ $3, R8                  // groups of 8 left
	JZ   done

turn:
	// Chains 2 and 3 at the next groups, or at the last one.
	XORQ    AX, AX
	MOVQ    $32, R11
	CMPQ    R8, $2
	CMOVQLT AX, R11
	MOVQ    $64, R12
	CMPQ    R8, $3
	CMOVQLT R11, R12
	ROOT(Y0, Y1, Y2)
	ROOT(Y5, Y6, Y7)
	ROOT(Y10, Y11, Y12)
	STEP3
	PERM3(1)
	STEP3
	PERM3(3)
	STEP3
	PERM3(7)
	STEP3
	PERM4(Y0, Y1, Y2, Y3, Y4)
	PERM4(Y5, Y6, Y7, Y8, Y9)
	PERM4(Y10, Y11, Y12, Y13, Y14)
	STEP3
	GATHER5(Y0, Y1, Y2)
	GATHER5(Y5, Y6, Y7)
	GATHER5(Y10, Y11, Y12)
	STEP3
	VPADDD  leaf0<>(SB), Y0, Y0
	VPADDD  leaf0<>(SB), Y5, Y5
	VPADDD  leaf0<>(SB), Y10, Y10
	VMOVDQU Y0, (DI)
	VMOVDQU Y5, (DI)(R11*1)
	VMOVDQU Y10, (DI)(R12*1)
	ADDQ    $96, BX
	ADDQ    $96, DI
	SUBQ    $3, R8
	JG      turn

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
