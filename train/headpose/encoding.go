package headpose

import (
	"fmt"
	"math"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
)

// EncodingError measures what storing m in encoding enc costs: it encodes
// and decodes m, predicts the faces of images idx (at their face boxes,
// one forward pass) with both, and returns the largest difference of each
// angle, in degrees (NaN for an angle the model does not predict), and how
// many faces it measured.
//
// profile > 0 says m is a profile expert of faces turned |yaw| ≥ profile
// (Options.Profile): it is measured where the daemon asks it, on those
// faces only, each as the expert sees it (mirrored where its yaw is
// negative). Elsewhere its answers are extrapolations the daemon does not
// use, and they are where the rounding of its weights shows most.
func EncodingError(m *gllim.Model, enc gllim.Encoding, b *Bank, idx []int, profile float64) (worst [3]float64, n int, err error) {
	data, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: enc})
	if err != nil {
		return worst, 0, err
	}
	back, err := gllim.Parse(data)
	if err != nil {
		return worst, 0, fmt.Errorf("headpose: reading the %s encoding back: %w", enc, err)
	}
	f1, err := gllim.NewForward(m)
	if err != nil {
		return worst, 0, err
	}
	f2, err := gllim.NewForward(back)
	if err != nil {
		return worst, 0, err
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
	for i, name := range pose.AngleNames {
		if m.OutputIndex(name) < 0 {
			worst[i] = math.NaN()
		}
	}
	for j, o := range out {
		if measured[j] {
			n++
		}
		for i := range worst {
			worst[i] = math.Max(worst[i], o[i])
		}
	}
	return worst, n, nil
}
