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
	// (canonical box sides), from which training box moves can be drawn.
	Errors []Shift `json:"-"`
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

// LearnConventions learns the convention of each data set in samples from
// the detections matched to its faces (match(i) returns sample i's matched
// detection box, if any). It fails, naming the set, where fewer than 20
// faces of a set were detected.
func LearnConventions(samples []dataset.Sample, match func(i int) (feature.Box, bool)) (map[string]Convention, error) {
	moves := map[string][]Shift{}
	faces := map[string]int{}
	var sets []string
	for i, s := range samples {
		if faces[s.Set] == 0 {
			sets = append(sets, s.Set)
		}
		faces[s.Set]++
		if d, ok := match(i); ok {
			moves[s.Set] = append(moves[s.Set], Back(s.Box.Square(), d))
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
