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
	// A plan with MaxNod > 0 nods faces instead of turning them: each face
	// with |yaw| ≤ NodYaw and |pitch| ≤ MaxPitch gets a view whose pitch
	// moves by MinNod–MaxNod degrees, up or down at random (a yaw plan adds
	// poses the data lacks; a nod plan adds pitches to every person, the
	// same face at several pitches, which is what tells a nod from a
	// person's proportions).
	MinNod, MaxNod, NodYaw float64
	Seed                   uint64
}

// DefaultPlan makes the faces the detectors and the pose model see least
// of: 60–90°, each turned 10–40° further.
var DefaultPlan = Plan{MinYaw: 60, MaxYaw: 90, MinTurn: 10, MaxTurn: 40, MaxPitch: 40, Seed: 1}

// NodPlan nods the faces the mesh fits well (|yaw| ≤ 60°, |pitch| ≤ 30°)
// by 5–15° up or down: small moves, whose seams stay small.
var NodPlan = Plan{MinNod: 5, MaxNod: 15, NodYaw: 60, MaxPitch: 30, Seed: 1}

// Turns returns, for each sample, the move its view makes, or the zero Move
// for a sample left alone.
func (p Plan) Turns(ss []dataset.Sample) []Move {
	rng := rand.New(rand.NewPCG(p.Seed, 0x9f11e))
	out := make([]Move, len(ss))
	for i, s := range ss {
		// Drawn for every sample, so a sample's move does not depend on
		// the others' (a nod draws its sign too).
		u, v := rng.Float64(), 0.0
		if p.MaxNod > 0 {
			v = rng.Float64()
		}
		if !s.HasYaw || math.Abs(s.Pitch) > p.MaxPitch || !s.InRange {
			continue
		}
		if p.MaxNod > 0 {
			if math.Abs(s.Yaw) > p.NodYaw {
				continue
			}
			d := p.MinNod + u*(p.MaxNod-p.MinNod)
			if v < 0.5 {
				d = -d
			}
			out[i] = Move{Pitch: d}
			continue
		}
		a := math.Abs(s.Yaw)
		lo, hi := math.Max(p.MinYaw, a+p.MinTurn), math.Min(p.MaxYaw, a+p.MaxTurn)
		if lo >= hi {
			continue
		}
		to := lo + u*(hi-lo)
		if s.Yaw < 0 {
			to = -to
		}
		out[i] = Move{Yaw: to - s.Yaw}
	}
	return out
}

// View is one face turned further.
type View struct {
	Image *image.Gray
	// Sample is the view's labels: the source's moved, the box the
	// tight box of the turned landmarks (AFLW2000's convention), MadeFrom
	// the source's set.
	Sample    dataset.Sample
	Landmarks [68][3]float64
}

// Make moves sample s (an AFLW2000-3D face, its .mat beside its picture)
// by d.
func (m *Mesh) Make(s dataset.Sample, d Move) (*View, error) {
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
	out, lm2 := m.Turn(f, img, lm, s.Yaw, s.Pitch, s.Roll, d)
	v := &View{Image: out, Sample: s, Landmarks: lm2}
	v.Sample.Yaw += d.Yaw
	v.Sample.Pitch += d.Pitch
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
