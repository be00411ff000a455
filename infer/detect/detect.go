// Package detect finds faces in grey frames with pigo's pixel-intensity-
// comparison cascade (github.com/esimov/pigo v1.4.6), whose facefinder
// cascade is embedded in the binary (see cascade/LICENSE).
package detect

import (
	_ "embed"
	"fmt"
	"image"
	"math"
	"sort"

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
	return d.DetectIn(img, img.Rect)
}

// DetectIn looks for faces only inside region (clipped to img), e.g. around
// a face tracked from the previous frame.
func (d *Detector) DetectIn(img *image.Gray, region image.Rectangle) []Face {
	region = region.Intersect(img.Rect)
	w, h := region.Dx(), region.Dy()
	if w < d.p.MinSize || h < d.p.MinSize {
		return nil
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
	raw = d.cascade.ClusterDetections(raw, d.p.IoU)
	faces := make([]Face, 0, len(raw))
	for _, r := range raw {
		if float64(r.Q) < d.p.MinScore {
			continue
		}
		s := float64(r.Scale)
		cx := float64(region.Min.X) + float64(r.Col)
		cy := float64(region.Min.Y) + float64(r.Row)
		faces = append(faces, Face{Box: feature.SquareAt(cx, cy, s), Score: float64(r.Q)})
	}
	sort.SliceStable(faces, func(i, j int) bool {
		if faces[i].Box.W != faces[j].Box.W {
			return faces[i].Box.W > faces[j].Box.W
		}
		return faces[i].Score > faces[j].Score
	})
	return faces
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
