//go:build !amd64

package train

const haveKernel = false

func kernel6x8(kc int, a, b, c *float64, ldc int) {
	panic("train: no GEMM kernel on this architecture")
}
