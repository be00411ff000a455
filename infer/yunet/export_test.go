package yunet

// UseVectorKernels is useVectorKernels for the external tests.
var UseVectorKernels = useVectorKernels
