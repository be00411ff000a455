package feature

// MirrorPermutation returns perm such that the descriptor of a left–right
// mirrored patch is d_mirror[i] = d[perm[i]]: blocks and the cells within
// them swap columns, and orientation bin b becomes 7 − b (θ → π − θ). Used
// to augment training data with flipped faces without re-extracting.
func MirrorPermutation() []int {
	perm := make([]int, 0, Dim)
	off := 0
	for _, cs := range cellSizes {
		c := PatchSize / cs // cells per side; c−1 blocks per side
		nb := c - 1
		for by := 0; by < nb; by++ {
			for bx := 0; bx < nb; bx++ {
				mb := by*nb + (nb - 1 - bx) // mirrored block
				for cell := 0; cell < 4; cell++ {
					cy, cx := cell/2, cell%2
					mc := cy*2 + (1 - cx) // mirrored cell within the block
					for b := 0; b < Bins; b++ {
						perm = append(perm, off+(mb*4+mc)*Bins+(Bins-1-b))
					}
				}
			}
		}
		off += nb * nb * 4 * Bins
	}
	return perm
}
