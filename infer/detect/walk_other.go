//go:build purego || !amd64

package detect

// No vector tree walk here: the Go one runs.
const vectorWalk = false

// useVectorWalk does nothing here: there is no vector walk.
func useVectorWalk(on bool) bool { return false }

func walkVector(out, base, o1, o2 []int32, pix []byte) {
	panic("detect: no vector walk")
}

func keepVector(cand []int32, score []float32, idx []int32, leaf []float32, thr float32) (n, kept int) {
	return 0, 0
}
