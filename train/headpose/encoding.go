package headpose

import (
	"fmt"
	"math"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
)

// EncodingError measures what storing m in encoding enc costs: it encodes
// and decodes m, predicts the faces of images idx (at their face boxes,
// one forward pass) with both, and returns the largest difference of each
// angle, in degrees (NaN for an angle the model does not predict).
func EncodingError(m *gllim.Model, enc gllim.Encoding, b *Bank, idx []int) ([3]float64, error) {
	var worst [3]float64
	data, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: enc})
	if err != nil {
		return worst, err
	}
	back, err := gllim.Parse(data)
	if err != nil {
		return worst, fmt.Errorf("headpose: reading the %s encoding back: %w", enc, err)
	}
	f1, err := gllim.NewForward(m)
	if err != nil {
		return worst, err
	}
	f2, err := gllim.NewForward(back)
	if err != nil {
		return worst, err
	}
	out := make([][3]float64, len(idx))
	parallel(len(idx), func() func(int) {
		p1, p2 := f1.NewPredictor(), f2.NewPredictor()
		a, c := f1.NewPrediction(), f2.NewPrediction()
		return func(j int) {
			y := b.Base(idx[j]).Feat[0]
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
	for _, o := range out {
		for i := range worst {
			worst[i] = math.Max(worst[i], o[i])
		}
	}
	return worst, nil
}
