package headpose

import (
	"math"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
)

// EncodingCost is what storing a model in an encoding does to its
// answers: the largest and the mean difference of each angle (yaw, pitch,
// roll) in degrees, NaN for an angle the model does not predict, over N
// faces.
type EncodingCost struct {
	Worst, Mean [3]float64
	N           int
}

// EncodingError measures what storing m in encoding enc costs: it encodes
// and decodes m, predicts the faces of images idx (at their face boxes,
// one forward pass) with both, and compares the angles.
//
// profile > 0 says m is a profile expert of faces turned |yaw| ≥ profile
// (Options.Profile): it is measured where the daemon asks it, on those
// faces only, each as the expert sees it (mirrored where its yaw is
// negative). Elsewhere its answers are extrapolations the daemon does not
// use, and they are where the rounding of its weights shows most.
func EncodingError(m *gllim.Model, enc gllim.Encoding, b *Bank, idx []int, profile float64) (EncodingCost, error) {
	var c EncodingCost
	back, err := roundTrip(m, enc)
	if err != nil {
		return c, err
	}
	f1, err := gllim.NewForward(m)
	if err != nil {
		return c, err
	}
	f2, err := gllim.NewForward(back)
	if err != nil {
		return c, err
	}
	out := make([][3]float64, len(idx))
	measured := make([]bool, len(idx))
	perm := feature.MirrorPermutation()
	parallel(len(idx), func() func(int) {
		p1, p2 := f1.NewPredictor(), f2.NewPredictor()
		a, c := f1.NewPrediction(), f2.NewPrediction()
		ym := make([]float32, feature.Dim)
		return func(j int) {
			v := b.Base(idx[j])
			y := v.Feat[0]
			if profile > 0 {
				mirrored, ok := expertCopy(v.Yaw, profile)
				if !v.HasYaw || !ok {
					return
				}
				if mirrored {
					for d, k := range perm {
						ym[d] = y[k]
					}
					y = ym
				}
			}
			measured[j] = true
			p1.Predict(&a, y)
			p2.Predict(&c, y)
			for i, name := range pose.AngleNames {
				if k := m.OutputIndex(name); k >= 0 {
					out[j][i] = math.Abs(a.Mean[k] - c.Mean[k])
				}
			}
		}
	})
	for j, o := range out {
		if !measured[j] {
			continue
		}
		c.N++
		for i := range c.Worst {
			c.Worst[i] = math.Max(c.Worst[i], o[i])
			c.Mean[i] += o[i]
		}
	}
	for i, name := range pose.AngleNames {
		c.Mean[i] /= float64(max(c.N, 1))
		if m.OutputIndex(name) < 0 {
			c.Worst[i], c.Mean[i] = math.NaN(), math.NaN()
		}
	}
	return c, nil
}
