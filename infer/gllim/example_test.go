package gllim_test

import (
	"fmt"

	"github.com/edgepose/posed/infer/gllim"
)

// Two components map one output t (a yaw, say) to two features y:
// component 0 has t near −30 and y = (t, 1), component 1 has t near +30 and
// y = (t, −1); the second feature tells them apart. The forward model
// inverts the mapping: E[t | y] and its spread, from the mixture (docs/method.md
// §4). Parameters are in standardised output units: here t's mean is 0 and
// its scale 30. With Σ = 4 on y₁ and Γ = 0.05·30² = 45, y₁ = 10 in
// component 1 gives (10/4 + 30/45) / (1/4 + 1/45) = 11.6: the centre's
// prior pulls the answer its way, and σ = 1/√(1/4 + 1/45) = 1.9.
func ExampleForward() {
	p := gllim.NewParams(2, 2, 1, 0)
	for k, c := range []float64{-1, 1} {
		p.Pi[k] = 0.5
		p.C[k] = c                     // c_k, in units of t's scale
		p.GammaK(k)[0] = 0.05          // Γ_k
		p.Ak(k)[0] = 30                // y₁ = 30·t: the feature in degrees
		p.B[2*k+1] = -2*float64(k) + 1 // y₂ = ±1
		p.Sigma[2*k], p.Sigma[2*k+1] = 4, 0.01
	}
	m := &gllim.Model{Params: p, Outputs: []gllim.Output{{Name: "yaw", Unit: "deg", Mean: 0, Scale: 30}}}
	f, err := gllim.NewForward(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	pred := f.NewPrediction()
	pr := f.NewPredictor()
	for _, y := range [][]float32{{-25, 1}, {35, -1}, {10, -1}} {
		pr.Predict(&pred, y)
		fmt.Printf("y = %v: yaw %.1f ± %.1f\n", y, pred.Mean[0], pred.Std(0))
	}
	// Output:
	// y = [-25 1]: yaw -25.4 ± 1.9
	// y = [35 -1]: yaw 34.6 ± 1.9
	// y = [10 -1]: yaw 11.6 ± 1.9
}
