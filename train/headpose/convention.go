package headpose

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// Convention is how one data set's annotated face boxes sit against the
// canonical face box: the box the detector gives (pigo's square, which the
// daemon uses as it is). Pointing'04's annotators boxed the head from the
// eyebrows down; AFLW2000's boxes are tight around the 68 landmarks: each
// set frames faces its own way, and a model trained on their union with
// one mapping learns the average of two framings. The canonical box of a
// sample is its annotated square moved by Move; Move is learnt per data
// set from the set's own matched detections, and uses no pose label, so a
// new data set (a user's own labelled folder) gets its convention the same
// way.
type Convention struct {
	Set string `json:"set"`
	// Move takes the annotated square (centre of the annotated box, side
	// √(w·h)) to the canonical box: the median over matched detections of
	// Back(annotated square, detection), per component.
	Move Shift `json:"move"`
	// Spread is the detector's own error about the canonical box: the
	// robust standard deviation (1.4826 × median absolute deviation) of the
	// matched detections' moves from it, in canonical box sides.
	Spread Shift `json:"spread"`
	N      int   `json:"n"`     // matched detections it was learnt from
	Faces  int   `json:"faces"` // faces of the set
	// Errors are the matched detections' moves from their canonical box
	// (canonical box sides), from which training box moves can be drawn;
	// ErrorYaws are their faces' yaws.
	Errors    []Shift   `json:"-"`
	ErrorYaws []float64 `json:"-"`
	// ByYaw is the mean of Errors as a function of the face's yaw, at
	// yaw −90°, −85°, …, 90° (nil where the set labels no yaw): where the
	// detector puts its box on a turned head, which an annotation need not
	// follow. AFLW2000's landmark boxes sit 0.17 box sides towards the
	// nose's side of pigo's box beyond ±30° of yaw, for instance.
	ByYaw []Shift `json:"-"`
}

// yawStep is the spacing of ByYaw's grid, in degrees; yawKernel the σ of
// the Gaussian kernel that averages the detections into it.
const yawStep, yawKernel = 5.0, 10.0

// AtYaw returns the mean move of the detections from the canonical box of
// a face with this yaw (zero without a ByYaw curve), interpolated linearly
// on the grid and held constant beyond ±90°.
func (c Convention) AtYaw(yaw float64) Shift {
	if len(c.ByYaw) == 0 {
		return Shift{}
	}
	f := (math.Max(-90, math.Min(90, yaw)) + 90) / yawStep
	i := min(int(f), len(c.ByYaw)-2)
	w := f - float64(i)
	a, b := c.ByYaw[i], c.ByYaw[i+1]
	return Shift{DX: a.DX + w*(b.DX-a.DX), DY: a.DY + w*(b.DY-a.DY), DS: a.DS + w*(b.DS-a.DS)}
}

// PoseError returns the i-th matched detection's move from its face's
// yaw-placed canonical box (PoseBox), in that box's sides: the detector's
// own error once the yaw's systematic move is taken out.
func (c Convention) PoseError(i int) Shift {
	if len(c.ErrorYaws) == 0 {
		return c.Errors[i]
	}
	return relative(c.AtYaw(c.ErrorYaws[i]), c.Errors[i])
}

// PoseBox returns the canonical box of a face annotated with box ann and
// turned by yaw: the label-free canonical box moved to where the detector
// puts its box on faces of that yaw (Apply's box where c has no ByYaw).
func (c Convention) PoseBox(ann feature.Box, yaw float64) feature.Box {
	return c.AtYaw(yaw).Apply(c.Apply(ann))
}

// byYaw is the Nadaraya–Watson average of the moves errs of faces with the
// given yaws, on ByYaw's grid. Each face counts once as it is and once
// mirrored (yaw and dx negated), so that the curve is odd in dx and even
// in dy and ds, as a mirrored face's box must be.
func byYaw(errs []Shift, yaws []float64) []Shift {
	n := int(180/yawStep) + 1
	out := make([]Shift, n)
	for g := range out {
		at := -90 + float64(g)*yawStep
		var sw float64
		var acc Shift
		for i, e := range errs {
			for _, m := range []float64{1, -1} {
				d := (at - m*yaws[i]) / yawKernel
				w := math.Exp(-0.5 * d * d)
				sw += w
				acc.DX += w * m * e.DX
				acc.DY += w * e.DY
				acc.DS += w * e.DS
			}
		}
		if sw > 0 {
			out[g] = Shift{DX: acc.DX / sw, DY: acc.DY / sw, DS: acc.DS / sw}
		}
	}
	return out
}

// Apply returns the canonical box of a face annotated with box ann.
func (c Convention) Apply(ann feature.Box) feature.Box { return c.Move.Apply(ann.Square()) }

// String describes c for logs and model cards.
func (c Convention) String() string {
	return fmt.Sprintf("%s: centre %+.3f, %+.3f box sides, size ×%.3f from the annotated square (%d of %d faces detected; detector spread %.3f, %.3f, %.3f)",
		c.Set, c.Move.DX, c.Move.DY, math.Exp(c.Move.DS), c.N, c.Faces, c.Spread.DX, c.Spread.DY, c.Spread.DS)
}

// minConventionFaces is the fewest matched detections a convention is
// learnt from: with fewer, the medians are too uncertain to frame a set by.
const minConventionFaces = 20

// LearnConventions learns the convention of each data set in samples (a
// picture made from another set's, dataset.Sample.MadeFrom, counting with
// that set) from
// the detections matched to its faces (match(i) returns sample i's matched
// detection box, if any). It fails, naming the set, where fewer than 20
// faces of a set were detected.
func LearnConventions(samples []dataset.Sample, match func(i int) (feature.Box, bool)) (map[string]Convention, error) {
	moves := map[string][]Shift{}
	yaws := map[string][]float64{}
	unlabelled := map[string]bool{}
	faces := map[string]int{}
	var sets []string
	for i, s := range samples {
		set := s.Origin() // a made picture is framed as its source set
		if faces[set] == 0 {
			sets = append(sets, set)
		}
		faces[set]++
		if d, ok := match(i); ok {
			moves[set] = append(moves[set], Back(s.Box.Square(), d))
			yaws[set] = append(yaws[set], s.Yaw)
			unlabelled[set] = unlabelled[set] || !s.HasYaw
		}
	}
	out := map[string]Convention{}
	for _, set := range sets {
		m := moves[set]
		if len(m) < minConventionFaces {
			return nil, fmt.Errorf("headpose: data set %s: %d of its %d faces detected, at least %d are needed to learn how it frames faces",
				set, len(m), faces[set], minConventionFaces)
		}
		c := Convention{Set: set, N: len(m), Faces: faces[set]}
		c.Move = Shift{
			DX: median(m, func(s Shift) float64 { return s.DX }),
			DY: median(m, func(s Shift) float64 { return s.DY }),
			DS: median(m, func(s Shift) float64 { return s.DS }),
		}
		// The detection seen from the canonical box: Back(canonical, det).
		for _, s := range m {
			c.Errors = append(c.Errors, relative(c.Move, s))
		}
		mad := func(f func(Shift) float64) float64 {
			return 1.4826 * median(c.Errors, func(s Shift) float64 { return math.Abs(f(s)) })
		}
		c.Spread = Shift{
			DX: mad(func(s Shift) float64 { return s.DX }),
			DY: mad(func(s Shift) float64 { return s.DY }),
			DS: mad(func(s Shift) float64 { return s.DS }),
		}
		if !unlabelled[set] {
			c.ByYaw = byYaw(c.Errors, yaws[set])
			c.ErrorYaws = yaws[set]
		}
		out[set] = c
	}
	return out, nil
}

// relative returns the shift that takes the box a.Apply(f) to b.Apply(f),
// in units of a.Apply(f), for any square f: both moves start from f.
func relative(a, b Shift) Shift {
	f := feature.Box{W: 1, H: 1}
	return Back(a.Apply(f), b.Apply(f))
}

func median(v []Shift, f func(Shift) float64) float64 {
	x := make([]float64, len(v))
	for i, s := range v {
		x[i] = f(s)
	}
	sort.Float64s(x)
	n := len(x)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// ConventionSets lists the sets of cs in name order.
func ConventionSets(cs map[string]Convention) []string {
	var out []string
	for s := range cs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
