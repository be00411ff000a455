// Package detect finds faces in grey frames with pico cascades (pixel
// intensity comparisons in boosted trees) in pigo's format
// (github.com/esimov/pigo v1.4.6): pigo's frontal facefinder cascade,
// embedded in the binary (see cascade/LICENSE), and cascades for turned
// faces, run by this package's own scanner, which keeps exactly pigo's
// windows (pigo is the reference in the tests).
package detect

import (
	"cmp"
	_ "embed"
	"fmt"
	"image"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
)

//go:embed cascade/facefinder
var facefinder []byte

//go:embed cascade/turned
var turned []byte

// Params configure the detector. The defaults suit 640×480 frames.
type Params struct {
	MinSize  int     // smallest face side in pixels
	MaxSize  int     // largest face side in pixels
	Shift    float64 // window step as a fraction of its size
	Scale    float64 // growth of the window between scales
	IoU      float64 // detections overlapping more than this are merged
	MinScore float64 // clustered detections scoring lower are dropped
	// Nested drops a detection that has at least this share of its box
	// inside the box of a detection of greater weight (mergeViews): the
	// small boxes a cascade puts on an eye or a cheek of a face it also
	// found whole, which pigo's clustering (IoU) leaves apart. 0: kept.
	Nested float64
	// Turned adds the cascade for turned faces (the embedded
	// cascade/turned, as it is and mirrored) to facefinder; TurnedScore is
	// its MinScore.
	Turned      bool
	TurnedScore float64
	// TurnedStages keeps the turned cascade's first stages only (0: all
	// of the embedded cascade's stages): fewer stages find more of the turned faces of
	// persons the cascade never saw, and pass more windows without one.
	TurnedStages int
	// TurnedShift and TurnedScale are the turned cascade's window step
	// and growth between scales: coarser than facefinder's, as it was
	// trained on faces moved by more (0: Shift and Scale).
	TurnedShift, TurnedScale float64
}

// minTurnedStages is the fewest of the turned cascade's stages measured
// (docs/measured.md): cut shorter, it passes so many windows that a frame
// with one face published 3.6 faces at 100 ms a frame.
const minTurnedStages = 20

// DefaultParams are good for 640×480 frames: faces from 60 to 400 pixels.
func DefaultParams() Params {
	return Params{MinSize: 60, MaxSize: 400, Shift: 0.1, Scale: 1.1, IoU: 0.2, MinScore: 2, Nested: 0.5,
		TurnedScore: 2, TurnedShift: 0.1, TurnedScale: 1.2}
}

// Problem is an unusable setting: its name (the configuration's key under
// detect) and why.
type Problem struct{ Field, Why string }

// Problems lists every unusable setting (the configuration's check uses
// them, naming each field).
func (p Params) Problems() []Problem {
	var out []Problem
	bad := func(field, format string, args ...any) {
		out = append(out, Problem{field, fmt.Sprintf(format, args...)})
	}
	if p.MinSize < 8 {
		bad("min_size", "%d is below 8 pixels", p.MinSize)
	}
	if p.MaxSize < p.MinSize {
		bad("max_size", "%d is below min_size %d", p.MaxSize, p.MinSize)
	}
	if !(p.Shift > 0 && p.Shift <= 1) {
		bad("shift", "%g is not in (0, 1]", p.Shift)
	}
	if !(p.Scale > 1 && p.Scale <= 2) {
		bad("scale", "%g is not in (1, 2]", p.Scale)
	}
	if !(p.IoU >= 0 && p.IoU <= 1) {
		bad("iou", "%g is not in [0, 1]", p.IoU)
	}
	if !(p.MinScore > 0) {
		bad("min_score", "%g is not above 0", p.MinScore)
	}
	if !(p.Nested >= 0 && p.Nested <= 1) {
		bad("nested", "%g is not in [0, 1]", p.Nested)
	}
	if p.Turned && !(p.TurnedScore > 0) {
		bad("turned_score", "%g is not above 0", p.TurnedScore)
	}
	if p.TurnedStages != 0 && (p.TurnedStages < minTurnedStages || p.TurnedStages > len(turnedStageEnds)) {
		bad("turned_stages", "%d is not 0 (all) or %d…%d: fewer stages were never measured, and put several phantoms on each frame (docs/measured.md)",
			p.TurnedStages, minTurnedStages, len(turnedStageEnds))
	}
	if !(p.TurnedShift >= 0 && p.TurnedShift <= 1) {
		bad("turned_shift", "%g is not in [0, 1]", p.TurnedShift)
	}
	if !(p.TurnedScale == 0 || p.TurnedScale > 1 && p.TurnedScale <= 2) {
		bad("turned_scale", "%g is not 0 or in (1, 2]", p.TurnedScale)
	}
	return out
}

// Validate returns an error naming the first unusable setting.
func (p Params) Validate() error {
	if ps := p.Problems(); len(ps) > 0 {
		return fmt.Errorf("detect: %s: %s", ps[0].Field, ps[0].Why)
	}
	return nil
}

// View says which cascade found a face: the frontal facefinder, or the
// cascade for turned faces, as trained (faces with yaw > 0, the nose
// towards the image's left) or mirrored (yaw < 0).
type View int8

const (
	Frontal     View = iota
	YawPositive      // turned: nose towards the image's left
	YawNegative      // turned: nose towards the image's right
)

var viewNames = [...]string{"frontal", "yaw+", "yaw-"}

func (v View) String() string {
	if v < 0 || int(v) >= len(viewNames) {
		return fmt.Sprintf("View(%d)", int8(v))
	}
	return viewNames[v]
}

// Face is one detection: a square box, the cascade's score (pigo's: the
// sum of its merged windows' scores) and the view that found it.
type Face struct {
	Box   feature.Box
	Score float64
	View  View
	// Weak: a scan's answer below its threshold, reported only because
	// it lies on a face already tracked (Network.Scan's known).
	Weak bool
}

// ViewCascade is a cascade a detector runs, the view it stands for, the
// smallest score of a face it reports, and its scan's window step and
// growth between scales (0: the detector's Params).
type ViewCascade struct {
	View         View
	Cascade      *Cascade
	MinScore     float64
	Shift, Scale float64
	// Ref, if above 0, is the score the merge measures this view's faces
	// against instead of MinScore (mergeViews): its cascade's scale, so
	// that lowering MinScore to find more faces does not also make the
	// view win more overlaps with other views.
	Ref float64
}

// turnedRef is the turned views' Ref: the score at which their merge with
// facefinder (MinScore 2) was tuned.
const turnedRef = 2

// TurnedViews are the two views of a cascade trained on faces turned one
// way (yaw > 0): as it is and mirrored, scanned with p's turned settings.
func TurnedViews(c *Cascade, p Params) []ViewCascade {
	return []ViewCascade{{YawPositive, c, p.TurnedScore, p.TurnedShift, p.TurnedScale, turnedRef},
		{YawNegative, c.Mirrored(), p.TurnedScore, p.TurnedShift, p.TurnedScale, turnedRef}}
}

// Facefinder returns pigo's frontal cascade, embedded in the binary.
func Facefinder() *Cascade { return facefinderCascade }

var facefinderCascade = mustParse("facefinder", facefinder)

// mustParse parses an embedded cascade: one that does not parse is a
// build problem (a test checks both).
func mustParse(name string, b []byte) *Cascade {
	c, err := ParseCascade(b)
	if err != nil {
		panic("detect: the embedded " + name + " cascade: " + err.Error())
	}
	return c
}

// Turned returns the embedded cascade for turned faces (yaw > 0; see
// cascade/TURNED.md), trained by posectl cascade (make cascade). It is
// parsed on first use: a detector without detect.turned (the default)
// never parses it.
func Turned() *Cascade { return turnedCascade() }

var (
	turnedCascade = sync.OnceValue(func() *Cascade {
		turnedParsed.Store(true)
		return mustParse("turned", turned)
	})
	turnedParsed atomic.Bool // for the test that the default leaves it
)

// turnedStageEnds are the trees in all after each stage of the embedded
// turned cascade, as posectl cascade printed them when it wrote the file
// (make cascade; a test checks that the last is the cascade's size).
var turnedStageEnds = []int{1, 3, 6, 10, 17, 26, 36, 48, 62, 78, 95, 114, 135, 154, 173, 196, 219, 243, 267, 291, 315, 338}

// turnedCut is the embedded turned cascade with its first n stages (0:
// all of them; Params.Problems checks n's range).
func turnedCut(n int) (*Cascade, error) {
	if n == 0 {
		return turnedCascade(), nil
	}
	return turnedCascade().Cut(turnedStageEnds[n-1])
}

// Detector runs its cascades over frames. It is safe for concurrent use:
// the cascades are read-only, buffers belong to callers.
type Detector struct {
	p     Params
	views []ViewCascade
}

// Sees reports whether a detection of region could have found a face
// whose box is box: its centre in region and its side within the sizes
// the detector scans (a fifth either way). A tracker counts a miss
// against a face only where the detector sees it (track.Seer): a face
// smaller than MinSize, found by the network's scan, is not lost because
// the cascades cannot find it.
func (d *Detector) Sees(box feature.Box, region image.Rectangle) bool {
	cx, cy := box.Centre()
	s := math.Sqrt(box.W * box.H)
	return image.Pt(int(cx), int(cy)).In(region) && s >= 0.8*float64(d.p.MinSize) && s <= 1.25*float64(d.p.MaxSize)
}

// New returns a detector with the embedded facefinder cascade and, if
// p.Turned, the embedded cascade for turned faces (its first
// p.TurnedStages stages) in both its views.
func New(p Params) (*Detector, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	views := []ViewCascade{{View: Frontal, Cascade: facefinderCascade, MinScore: p.MinScore}}
	if p.Turned {
		c, err := turnedCut(p.TurnedStages)
		if err != nil {
			return nil, err
		}
		views = append(views, TurnedViews(c, p)...)
	}
	return NewViews(p, views...)
}

// NewViews returns a detector running the given cascades, each face
// reported with its view; a face found in several views is reported once,
// by the view whose score per scan density is the larger multiple of its
// Ref or MinScore (mergeViews).
func NewViews(p Params, views ...ViewCascade) (*Detector, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(views) == 0 {
		return nil, fmt.Errorf("detect: no cascade")
	}
	for _, v := range views {
		if v.Cascade == nil || v.Cascade.check() != nil {
			return nil, fmt.Errorf("detect: view %s: no usable cascade", v.View)
		}
		if !(v.MinScore > 0) {
			return nil, fmt.Errorf("detect: view %s: min score %g: want above 0", v.View, v.MinScore)
		}
		if !(v.Shift >= 0 && v.Shift <= 1) || !(v.Scale == 0 || v.Scale > 1 && v.Scale <= 2) {
			return nil, fmt.Errorf("detect: view %s: shift %g, scale %g: want shift in [0, 1], scale 0 or in (1, 2]", v.View, v.Shift, v.Scale)
		}
	}
	return &Detector{p: p, views: slices.Clone(views)}, nil
}

// Params returns the detector's settings.
func (d *Detector) Params() Params { return d.p }

// Views returns the views the detector runs.
func (d *Detector) Views() []ViewCascade { return slices.Clone(d.views) }

// Detect returns the faces in img, largest first. Box coordinates are img's.
func (d *Detector) Detect(img *image.Gray) []Face {
	return d.DetectInto(nil, img, img.Rect)
}

// Buffers are a caller's reusable storage for DetectInto: with them a
// detection allocates nothing once they have grown. The zero value is
// ready; nil means fresh ones.
type Buffers struct {
	sc       scanner
	raw      []Window
	faces    []Face
	clusters []Window
	merged   []bool
}

// DetectInto looks for faces only inside region (clipped to img), e.g.
// around a face tracked from the previous frame, in the caller's buffers
// (nil: fresh ones). The result lives in b and is overwritten by the next
// call with the same b.
func (d *Detector) DetectInto(b *Buffers, img *image.Gray, region image.Rectangle) []Face {
	if b == nil {
		b = new(Buffers)
	}
	region = region.Intersect(img.Rect)
	w, h := region.Dx(), region.Dy()
	if w < d.p.MinSize || h < d.p.MinSize {
		return b.faces[:0]
	}
	off := (region.Min.Y-img.Rect.Min.Y)*img.Stride + (region.Min.X - img.Rect.Min.X)
	faces := b.faces[:0]
	for _, v := range d.views {
		sp := scanParams{MinSize: d.p.MinSize, MaxSize: min(d.p.MaxSize, w, h), Shift: d.p.Shift, Scale: d.p.Scale}
		if v.Shift > 0 {
			sp.Shift = v.Shift
		}
		if v.Scale > 0 {
			sp.Scale = v.Scale
		}
		b.raw = b.sc.scan(b.raw[:0], v.Cascade, img.Pix[off:], img.Stride, h, w, sp)
		for _, r := range cluster(b.raw, d.p.IoU, b) {
			if float64(r.Q) < v.MinScore {
				continue
			}
			s := float64(r.Scale)
			cx := float64(region.Min.X) + float64(r.Col)
			cy := float64(region.Min.Y) + float64(r.Row)
			faces = append(faces, Face{Box: feature.SquareAt(cx, cy, s), Score: float64(r.Q), View: v.View})
		}
	}
	if len(d.views) > 1 || d.p.Nested > 0 {
		faces = d.mergeViews(faces)
	}
	slices.SortStableFunc(faces, func(a, b Face) int {
		if a.Box.W != b.Box.W {
			return cmp.Compare(b.Box.W, a.Box.W)
		}
		return cmp.Compare(b.Score, a.Score)
	})
	b.faces = faces
	return faces
}

// mergeViews drops a face that overlaps a face of another view by more
// than the IoU setting, or has at least the Nested share of its box
// inside any other face's box, where that other face has the greater
// weight. A face's score is pigo's, the sum over the windows of its
// cluster, so it grows with how densely its view was scanned: windows per
// face ∝ 1/(shift²·ln(growth)). Its weight is that score per scan
// density, as a multiple of its view's Ref, or MinScore (scores of
// different cascades are not on one scale; their thresholds are). Without the
// density, the turned views (growth 1.2) lost profile faces to
// facefinder's worse boxes (growth 1.1) at half the windows. Faces of one
// view were merged by cluster; a box nested in a heavier one of the same
// view is a second cluster on part of one face.
func (d *Detector) mergeViews(faces []Face) []Face {
	rel := func(f Face) float64 {
		for _, v := range d.views {
			if v.View == f.View {
				shift, scale := d.p.Shift, d.p.Scale
				if v.Shift > 0 {
					shift = v.Shift
				}
				if v.Scale > 0 {
					scale = v.Scale
				}
				ref := v.MinScore
				if v.Ref > 0 {
					ref = v.Ref
				}
				return f.Score * shift * shift * math.Log(scale) / ref
			}
		}
		return f.Score
	}
	out := faces[:0]
	for i, f := range faces {
		keep, rf := true, rel(f)
		for j, g := range faces {
			if i == j {
				continue
			}
			merges := f.View != g.View && feature.IoU(f.Box, g.Box) > d.p.IoU
			nested := d.p.Nested > 0 && feature.Inside(f.Box, g.Box) >= d.p.Nested
			if !merges && !nested {
				continue
			}
			if rg := rel(g); rg > rf || (rg == rf && j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

// cluster merges overlapping windows exactly as pigo's ClusterDetections
// does (same order, same IoU, same integer means, scores summed) but with
// b's storage, so that it allocates nothing once b has grown: with the
// windows sorted by ascending score, each window not yet merged seeds a
// cluster of every window (merged or not) overlapping it by more than iou.
func cluster(raw []Window, iou float64, b *Buffers) []Window {
	slices.SortFunc(raw, func(a, b Window) int { return cmp.Compare(a.Q, b.Q) })
	if cap(b.merged) < len(raw) {
		b.merged = make([]bool, len(raw))
	}
	merged := b.merged[:len(raw)]
	clear(merged)
	out := b.clusters[:0]
	for i := range raw {
		if merged[i] {
			continue
		}
		var r, c, s, m int
		var q float32
		for j := range raw {
			if windowIoU(raw[i], raw[j]) > iou {
				merged[j] = true
				r += raw[j].Row
				c += raw[j].Col
				s += raw[j].Scale
				q += raw[j].Q
				m++
			}
		}
		if m > 0 {
			out = append(out, Window{Row: r / m, Col: c / m, Scale: s / m, Q: q})
		}
	}
	b.clusters = out
	return out
}

// windowIoU is pigo's overlap of two square windows (centre, side).
func windowIoU(a, b Window) float64 {
	r1, c1, s1 := float64(a.Row), float64(a.Col), float64(a.Scale)
	r2, c2, s2 := float64(b.Row), float64(b.Col), float64(b.Scale)
	rows := math.Max(0, math.Min(r1+s1/2, r2+s2/2)-math.Max(r1-s1/2, r2-s2/2))
	cols := math.Max(0, math.Min(c1+s1/2, c2+s2/2)-math.Max(c1-s1/2, c2-s2/2))
	return rows * cols / (s1*s1 + s2*s2 - rows*cols)
}

// Calibration maps a detector box to the box a pose model was trained on:
// centre moved by (DX, DY) detector box sizes, side multiplied by Scale.
type Calibration struct{ DX, DY, Scale float64 }

// Identity leaves boxes as they are.
var Identity = Calibration{Scale: 1}

// CalibrationOf returns the calibration a model file records, or Identity
// if it records none.
func CalibrationOf(c *gllim.BoxCalibration) Calibration {
	if c == nil {
		return Identity
	}
	return Calibration{DX: c.DX, DY: c.DY, Scale: c.Scale}
}

// Undo returns the detector box whose calibrated box is b (Apply's
// inverse).
func (c Calibration) Undo(b feature.Box) feature.Box {
	cx, cy := b.Centre()
	s := math.Sqrt(b.W*b.H) / c.Scale
	return feature.SquareAt(cx-c.DX*s, cy-c.DY*s, s)
}

// Apply returns the calibrated box of a detector box.
func (c Calibration) Apply(b feature.Box) feature.Box {
	cx, cy := b.Centre()
	s := math.Sqrt(b.W * b.H)
	return feature.SquareAt(cx+c.DX*s, cy+c.DY*s, s*c.Scale)
}
