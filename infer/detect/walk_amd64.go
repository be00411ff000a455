//go:build !purego

package detect

import "golang.org/x/sys/cpu"

// vectorWalk says whether the AVX2 tree walk runs (chosen at start from
// the CPU; tests switch it to compare it with the Go walk).
var vectorWalk = cpu.X86.HasAVX2

// UseVectorWalk switches the AVX2 tree walk on or off where the CPU has
// it and returns the previous setting.
func UseVectorWalk(on bool) bool {
	prev := vectorWalk
	vectorWalk = on && cpu.X86.HasAVX2
	return prev
}

// walk6AVX walks n windows (n a multiple of 8) down one tree of depth 6,
// as walkGo does: out[i] = the heap index of window i's leaf. o1 and o2
// hold the node offsets with at least 8 entries of padding (the kernel
// loads 8 at nodes 8 and 24). Each window's pixels from 3 bytes before
// base[i] + o_k to it must lie inside pix (each pixel is read as the top
// byte of a 4-byte load ending on it).
//
//go:noescape
func walk6AVX(out, base *int32, n int, o1, o2 *int32, pix *byte)

func walkVector(out, base, o1, o2 []int32, pix []byte) {
	if len(o1) < 63+8 || len(o2) < 63+8 {
		panic("detect: walkVector: offset tables without padding")
	}
	walk6AVX(&out[0], &base[0], len(base), &o1[0], &o2[0], &pix[0])
}
