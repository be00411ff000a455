package train

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/gllim"
)

// PrincipalProjection returns the projection of the rows of y (N × D) on
// their p principal directions: μ the mean row, W's rows the unit
// eigenvectors of the rows' covariance with the p largest eigenvalues,
// largest first, each signed so that its largest component is positive
// (the same data give the same file). The mixture is then fitted to, and
// reads, W (y − μ) (gllim.Projection, docs/method.md §4). The
// directions are exact (an eigendecomposition of the covariance), where
// the k-means initialisation's few scores (topDirections) are a subspace
// iteration from random vectors: a model file must not depend on a seed.
func PrincipalProjection(y *mat.Dense, p int) (*gllim.Projection, error) {
	n, d := y.Dims()
	if p < 1 || p > d || n < 2 {
		return nil, fmt.Errorf("train: %d principal directions of %d rows of %d values: want 1 to %d directions and 2 rows at least", p, n, d, d)
	}
	mean := make([]float64, d)
	for r := range n {
		for j, v := range y.RawRowView(r) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	var cov mat.SymDense
	cov.SymOuterK(1/float64(n-1), centred(y, mean).T())
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		return nil, fmt.Errorf("train: the features' covariance (%d × %d) has no eigendecomposition", d, d)
	}
	var vec mat.Dense
	eig.VectorsTo(&vec) // columns, by ascending eigenvalue
	w := make([]float64, p*d)
	for i := range p {
		col := d - 1 - i
		row := w[i*d : (i+1)*d]
		big := 0.0
		for j := range d {
			row[j] = vec.At(j, col)
			if a := row[j]; a*a > big*big {
				big = a
			}
		}
		if big < 0 {
			for j := range row {
				row[j] = -row[j]
			}
		}
	}
	return &gllim.Projection{Mean: mean, Basis: w}, nil
}

// ProjectRows returns the rows of y mapped by pr: W (y − μ) for each (N × P).
func ProjectRows(y *mat.Dense, pr *gllim.Projection) *mat.Dense {
	w := mat.NewDense(pr.P(), pr.In(), pr.Basis)
	var out mat.Dense
	out.Mul(centred(y, pr.Mean), w.T())
	return &out
}

// centred returns a copy of the rows of y less mean.
func centred(y *mat.Dense, mean []float64) *mat.Dense {
	n, d := y.Dims()
	c := mat.NewDense(n, d, nil)
	for r := range n {
		dst, src := c.RawRowView(r), y.RawRowView(r)
		for j := range dst {
			dst[j] = src[j] - mean[j]
		}
	}
	return c
}
