package train

import "golang.org/x/sys/cpu"

var haveKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x8 adds to the 6×8 block of C at c (row stride ldc) the product
// of a packed 6-row panel a and a packed 8-column panel b, both kc deep:
//
//	c[i][j] += Σ_p a[6p+i] · b[8p+j],  i < 6, j < 8
//
// with the 48 sums in twelve 4-double AVX2 registers, one fused
// multiply-add per register and step p.
//
//go:noescape
func kernel6x8(kc int, a, b, c *float64, ldc int)
