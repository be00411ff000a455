package gllim

// What the external tests switch and ask about the kernels.
var (
	UseVectorKernels = useVectorKernels // switches the vector kernels, returns the previous setting
	VectorKernels    = vectorKernels    // "avx2+fma", "neon" or "go"
)

// HalfWeightsSupported reports whether this CPU and build keep the
// weights of half-encoded models as halves.
func HalfWeightsSupported() bool { return halfWeights }

// HalfWeights reports whether f keeps its weights as halves.
func (f *Forward) HalfWeights() bool { return f.keepsHalves() }
