package gllim

import (
	"fmt"
	"math"
)

// Projection is a model's input map: the mixture is fitted to, and reads,
// z = W (y − μ), the feature vector y (In values) projected on P
// directions (the rows of W), in place of y itself. With the principal
// directions of the training features (headpose, -pca), the mixture's
// diagonal Σ_k describes decorrelated values: on 1888 p-HOG values, which
// are strongly correlated, the densities of the untouched features count
// the same evidence many times over (docs/method.md §4).
type Projection struct {
	Mean  []float64 // μ: In
	Basis []float64 // W: P × In, row after row
}

// In is the length of the feature vectors the projection maps.
func (p *Projection) In() int { return len(p.Mean) }

// P is the number of directions.
func (p *Projection) P() int {
	if len(p.Mean) == 0 {
		return 0
	}
	return len(p.Basis) / len(p.Mean)
}

// validate checks the projection's sizes against the mixture's D and its
// values.
func (p *Projection) validate(d int) error {
	if len(p.Mean) == 0 || len(p.Basis) != d*len(p.Mean) {
		return fmt.Errorf("gllim: input projection of %d means and %d weights: want In ≥ 1 means and D×In = %d×In weights", len(p.Mean), len(p.Basis), d)
	}
	for _, v := range p.Mean {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gllim: input projection: mean %g is not finite", v)
		}
	}
	for _, v := range p.Basis {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gllim: input projection: weight %g is not finite", v)
		}
	}
	return nil
}

// Apply returns W (y − μ) in float64: the reference the forward model's
// float32 projection is tested against, and what a trainer fits the
// mixture to.
func (p *Projection) Apply(y []float64) []float64 {
	n := p.In()
	out := make([]float64, p.P())
	for j := range out {
		w := p.Basis[j*n : (j+1)*n]
		s := 0.0
		for d, v := range y[:n] {
			s += w[d] * (v - p.Mean[d])
		}
		out[j] = s
	}
	return out
}

// InputDim is the length of the feature vectors m reads: its projection's
// In, or D without one.
func (m *Model) InputDim() int {
	if m.Input != nil {
		return m.Input.In()
	}
	return m.Params.D
}
