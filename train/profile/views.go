package profile

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// Plan says which faces are turned, and how far.
type Plan struct {
	// Views turn faces to a |yaw| drawn uniformly in [MinYaw, MaxYaw]°,
	// away from the camera (the sign of the face's own yaw), by at least
	// MinTurn and at most MaxTurn degrees: a face at 50° may become one at
	// 60–90°, a frontal face none (its other side would be invented).
	MinYaw, MaxYaw   float64
	MinTurn, MaxTurn float64
	// MaxPitch skips faces looking up or down more than this: their mesh
	// fits worst, and a further turn makes a pose no data set labels.
	MaxPitch float64
	Seed     uint64
}

// DefaultPlan makes the faces the detectors and the pose model see least
// of: 60–90°, each turned 10–40° further.
var DefaultPlan = Plan{MinYaw: 60, MaxYaw: 90, MinTurn: 10, MaxTurn: 40, MaxPitch: 40, Seed: 1}

// Turns returns, for each sample, the yaw (degrees, signed) its view is
// turned by, or 0 for a sample left alone.
func (p Plan) Turns(ss []dataset.Sample) []float64 {
	rng := rand.New(rand.NewPCG(p.Seed, 0x9f11e))
	out := make([]float64, len(ss))
	for i, s := range ss {
		a := math.Abs(s.Yaw)
		lo, hi := math.Max(p.MinYaw, a+p.MinTurn), math.Min(p.MaxYaw, a+p.MaxTurn)
		u := rng.Float64() // drawn for every sample, so a sample's turn does not depend on the others'
		if !s.HasYaw || math.Abs(s.Pitch) > p.MaxPitch || !s.InRange || lo >= hi {
			continue
		}
		to := lo + u*(hi-lo)
		if s.Yaw < 0 {
			to = -to
		}
		out[i] = to - s.Yaw
	}
	return out
}

// View is one face turned further.
type View struct {
	Image *image.Gray
	// Sample is the view's labels: the source's with yaw+turn, the box the
	// tight box of the turned landmarks (AFLW2000's convention), MadeFrom
	// the source's set.
	Sample    dataset.Sample
	Landmarks [68][3]float64
}

// Make turns sample s (an AFLW2000-3D face, its .mat beside its picture)
// by turn degrees of yaw.
func (m *Mesh) Make(s dataset.Sample, turn float64) (*View, error) {
	lm, err := dataset.Landmarks3D(strings.TrimSuffix(s.Path, ".jpg") + ".mat")
	if err != nil {
		return nil, err
	}
	img, err := dataset.LoadGray(s.Path)
	if err != nil {
		return nil, err
	}
	f, err := m.Fit(lm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	out, lm2 := m.Turn(f, img, lm, s.Yaw, s.Pitch, s.Roll, turn)
	v := &View{Image: out, Sample: s, Landmarks: lm2}
	v.Sample.Yaw += turn
	v.Sample.MadeFrom = s.Origin()
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range lm2 {
		minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
		minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
	}
	v.Sample.Box = feature.Box{X: minX, Y: minY, W: maxX - minX, H: maxY - minY}
	v.Sample.InRange = math.Abs(v.Sample.Yaw) <= 99 && math.Abs(v.Sample.Pitch) <= 99 && math.Abs(v.Sample.Roll) <= 99
	return v, nil
}
