//go:build !purego

package detect

import "golang.org/x/sys/cpu"

// vectorWalk says whether the AVX2 tree walk runs (chosen at start from
// the CPU; tests switch it to compare it with the Go walk).
var vectorWalk = cpu.X86.HasAVX2

// useVectorWalk switches the AVX2 tree walk on or off where the CPU has
// it and returns the previous setting.
func useVectorWalk(on bool) bool {
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

//go:noescape
func keepAVX(cand *int32, score *float32, idx *int32, n int, leaf *float32, thr float32, lut *[256][8]int32, kept int) int

// keepLUT[m] lists the lanes set in the 8-bit mask m, in order, then the
// others: the permute that packs a vector's kept lanes first.
var keepLUT = func() (t [256][8]int32) {
	for m := range t {
		k := 0
		for l := range 8 {
			if m>>l&1 == 1 {
				t[m][k] = int32(l)
				k++
			}
		}
		for l := range 8 {
			if m>>l&1 == 0 {
				t[m][k] = int32(l)
				k++
			}
		}
	}
	return t
}()

// keepVector is keepGo for the first len(cand) &^ 7 windows of a tree of
// depth 6, eight at a time (keepAVX) where the CPU has AVX2; it returns how
// many it looked at (none otherwise) and the new kept.
func keepVector(cand []int32, score []float32, idx []int32, leaf []float32, thr float32) (n, kept int) {
	n = len(cand) &^ 7
	if !vectorWalk || n == 0 || len(score) < n || len(idx) < n || len(leaf) != 64 {
		return 0, 0
	}
	return n, keepAVX(&cand[0], &score[0], &idx[0], n, &leaf[0], thr, &keepLUT, 0)
}
