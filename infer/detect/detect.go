// Package detect finds faces in grey frames with pigo's pixel-intensity-
// comparison cascade (github.com/esimov/pigo v1.4.6), whose facefinder
// cascade is embedded in the binary (see cascade/LICENSE).
package detect

import (
	"cmp"
	_ "embed"
	"fmt"
	"image"
	"math"
	"slices"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
)

//go:embed cascade/facefinder
var facefinder []byte

// Params configure the detector. The defaults suit 640×480 frames.
type Params struct {
	MinSize  int     // smallest face side in pixels
	MaxSize  int     // largest face side in pixels
	Shift    float64 // window step as a fraction of its size
	Scale    float64 // growth of the window between scales
	IoU      float64 // detections overlapping more than this are merged
	MinScore float64 // clustered detections scoring lower are dropped
}

// DefaultParams are good for 640×480 frames: faces from 60 to 400 pixels.
func DefaultParams() Params {
	return Params{MinSize: 60, MaxSize: 400, Shift: 0.1, Scale: 1.1, IoU: 0.2, MinScore: 2}
}

// Validate returns an error naming the first unusable setting.
func (p Params) Validate() error {
	switch {
	case p.MinSize < 8:
		return fmt.Errorf("detect: min size %d: want at least 8 pixels", p.MinSize)
	case p.MaxSize < p.MinSize:
		return fmt.Errorf("detect: max size %d is below min size %d", p.MaxSize, p.MinSize)
	case !(p.Shift > 0 && p.Shift <= 1):
		return fmt.Errorf("detect: shift %g not in (0, 1]", p.Shift)
	case !(p.Scale > 1 && p.Scale <= 2):
		return fmt.Errorf("detect: scale %g not in (1, 2]", p.Scale)
	case !(p.IoU >= 0 && p.IoU <= 1):
		return fmt.Errorf("detect: IoU %g not in [0, 1]", p.IoU)
	}
	return nil
}

// Face is one detection: a square box and the cascade's score.
type Face struct {
	Box   feature.Box
	Score float64
}

// Detector runs the cascade. It is safe for concurrent use: the cascade is
// read-only.
type Detector struct {
	p       Params
	cascade *pigo.Pigo
}

// New returns a detector with the embedded facefinder cascade.
func New(p Params) (*Detector, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// pigo's Unpack indexes the packet without checking its length; the
	// cascade is embedded and checked by a test, so a short one is a build
	// problem, but guard anyway rather than panic.
	if len(facefinder) < 16 {
		return nil, fmt.Errorf("detect: embedded cascade is %d bytes", len(facefinder))
	}
	c, err := pigo.NewPigo().Unpack(facefinder)
	if err != nil {
		return nil, fmt.Errorf("detect: unpacking cascade: %w", err)
	}
	return &Detector{p: p, cascade: c}, nil
}

// Params returns the detector's settings.
func (d *Detector) Params() Params { return d.p }

// Detect returns the faces in img, largest first. Box coordinates are img's.
func (d *Detector) Detect(img *image.Gray) []Face {
	return d.DetectInto(nil, img, img.Rect)
}

// DetectIn looks for faces only inside region (clipped to img), e.g. around
// a face tracked from the previous frame.
func (d *Detector) DetectIn(img *image.Gray, region image.Rectangle) []Face {
	return d.DetectInto(nil, img, region)
}

// Buffers are a caller's reusable storage for DetectInto: with them a
// detection allocates only inside pigo's scan (its slice of raw windows,
// which takes no buffer). The zero value is ready; nil means fresh ones.
type Buffers struct {
	faces    []Face
	clusters []pigo.Detection
	merged   []bool
}

// DetectInto is DetectIn with the caller's buffers. The result lives in b
// and is overwritten by the next call with the same b.
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
	maxSize := min(d.p.MaxSize, w, h)
	cp := pigo.CascadeParams{
		MinSize:     d.p.MinSize,
		MaxSize:     maxSize,
		ShiftFactor: d.p.Shift,
		ScaleFactor: d.p.Scale,
		ImageParams: pigo.ImageParams{Pixels: img.Pix[off:], Rows: h, Cols: w, Dim: img.Stride},
	}
	raw := d.cascade.RunCascade(cp, 0)
	faces := b.faces[:0]
	for _, r := range cluster(raw, d.p.IoU, b) {
		if float64(r.Q) < d.p.MinScore {
			continue
		}
		s := float64(r.Scale)
		cx := float64(region.Min.X) + float64(r.Col)
		cy := float64(region.Min.Y) + float64(r.Row)
		faces = append(faces, Face{Box: feature.SquareAt(cx, cy, s), Score: float64(r.Q)})
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

// cluster merges overlapping windows exactly as pigo's ClusterDetections
// does (same order, same IoU, same integer means, scores summed) but with
// b's storage, so that it allocates nothing once b has grown: with the
// windows sorted by ascending score, each window not yet merged seeds a
// cluster of every window (merged or not) overlapping it by more than iou.
func cluster(raw []pigo.Detection, iou float64, b *Buffers) []pigo.Detection {
	slices.SortFunc(raw, func(a, b pigo.Detection) int { return cmp.Compare(a.Q, b.Q) })
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
			out = append(out, pigo.Detection{Row: r / m, Col: c / m, Scale: s / m, Q: q})
		}
	}
	b.clusters = out
	return out
}

// windowIoU is pigo's overlap of two square windows (centre, side).
func windowIoU(a, b pigo.Detection) float64 {
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

// Apply returns the calibrated box of a detector box.
func (c Calibration) Apply(b feature.Box) feature.Box {
	cx, cy := b.Centre()
	s := math.Sqrt(b.W * b.H)
	return feature.SquareAt(cx+c.DX*s, cy+c.DY*s, s*c.Scale)
}
