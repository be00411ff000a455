package cascade

import (
	"image"
	"math"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// What posectl detections measures of a detector: the labelled faces it
// finds by |yaw|, the boxes it puts elsewhere on the same photographs, the
// phantoms on face-free frames, and what a scan costs in trees per window.

// YawBins are the |yaw| bins of Counts: 0–15, 15–30, …, 75–90 (and beyond).
var YawBins = [...]float64{0, 15, 30, 45, 60, 75}

// Counts are one detector's counts on one data set: faces found and
// labelled per |yaw| bin, false detections, those overlapping the face,
// and photographs; with a publish check, the false faces posed publishes
// and those overlapping the face.
type Counts struct {
	Found, Total         [len(YawBins)]int
	Falses, Near, Photos int
	PubFalses, PubNear   int
}

// Measure runs detectors on the photographs of set whose part (partOf) is
// measured, each by its part's detector (det(part)): a part is the half
// or fold of the persons a detector was not trained on. published, if not
// nil, says which faces posed would publish of a photograph's detections.
func Measure(det func(part int) *detect.Detector, set string, samples []dataset.Sample, partOf func(dataset.Sample) int, measured func(int) bool,
	published func([]detect.Face, *image.Gray) []feature.Box) (Counts, error) {
	var r Counts
	for _, s := range samples {
		if s.Set != set || !s.HasYaw {
			continue
		}
		part := partOf(s)
		if !measured(part) {
			continue // trained on: not measured
		}
		g, err := dataset.LoadGray(s.Path)
		if err != nil {
			return r, err
		}
		faces := det(part).Detect(g)
		r.count(s, faces, published, g)
	}
	return r, nil
}

// count adds one photograph's detections to r.
func (r *Counts) count(s dataset.Sample, faces []detect.Face, published func([]detect.Face, *image.Gray) []feature.Box, g *image.Gray) {
	b := yawBin(s.Yaw)
	r.Total[b]++
	hit := false
	for _, f := range faces {
		if feature.Finds(f.Box, s.Box) {
			hit = true
		} else {
			r.Falses++
			if Overlaps(f.Box, s.Box) {
				r.Near++
			}
		}
	}
	if hit {
		r.Found[b]++
	}
	if published != nil {
		for _, box := range published(faces, g) {
			if !feature.Finds(box, s.Box) {
				r.PubFalses++
				if Overlaps(box, s.Box) {
					r.PubNear++
				}
			}
		}
	}
	r.Photos++
}

// Phantoms is the mean number of boxes each detector puts on a face-free
// frame, and of faces posed would publish of them (published; 0 if nil).
func Phantoms(dets []*detect.Detector, frames []*image.Gray, published func([]detect.Face, *image.Gray) []feature.Box) (raw, pub float64) {
	n, p := 0, 0
	for _, d := range dets {
		for _, f := range frames {
			faces := d.Detect(f)
			n += len(faces)
			if published != nil {
				p += len(published(faces, f))
			}
		}
	}
	pairs := float64(max(len(dets)*len(frames), 1))
	return float64(n) / pairs, float64(p) / pairs
}

// yawBin is the bin of YawBins holding |yaw|.
func yawBin(yaw float64) int {
	b := 0
	for b+1 < len(YawBins) && math.Abs(yaw) >= YawBins[b+1] {
		b++
	}
	return b
}

// Overlaps reports whether a detection that does not match the face still
// covers part of it (a misplaced box rather than a phantom face).
func Overlaps(det, label feature.Box) bool {
	return det.X < label.X+label.W && label.X < det.X+det.W && det.Y < label.Y+label.H && label.Y < det.Y+det.H
}

// FaceFreeFrames are 640×480 frames of the pictures measured (by name):
// each whole picture scaled to 640×480, and its 640×480 tiles.
func FaceFreeFrames(pics []Picture, measured func(name string) bool) []*image.Gray {
	var out []*image.Gray
	for _, p := range pics {
		if !measured(p.Name) {
			continue
		}
		g := p.Img.Gray()
		out = append(out, ScaleGray(g, 640, 480))
		for y := 0; y+480 <= p.Img.H; y += 480 {
			for x := 0; x+640 <= p.Img.W; x += 640 {
				out = append(out, g.SubImage(image.Rect(x, y, x+640, y+480)).(*image.Gray))
			}
		}
	}
	return out
}

// ScanCost is the trees the views evaluate per window over frames (the
// turned cascade's two views, as the daemon runs them, or facefinder): a
// cascade's cost that no machine's noise moves.
func ScanCost(frames []*image.Gray, p detect.ScanParams, views ...*detect.Cascade) float64 {
	var sc detect.Scanner
	var w []detect.Window
	for _, f := range frames {
		for _, v := range views {
			w = sc.Scan(w[:0], v, f.Pix, f.Stride, f.Rect.Dy(), f.Rect.Dx(), p)
		}
	}
	return float64(sc.TreeEvals()) / float64(max(sc.Windows(), 1))
}

// CountHeldOut is how many of pics are kept out of training (HeldOut).
func CountHeldOut(pics []Picture) int {
	n := 0
	for _, p := range pics {
		if HeldOut(p.Name) {
			n++
		}
	}
	return n
}

// ScaleGray resamples g to w×h, each pixel the mean of the source pixels
// it covers (nearest when enlarging).
func ScaleGray(g *image.Gray, w, h int) *image.Gray {
	out := image.NewGray(image.Rect(0, 0, w, h))
	sw, sh := g.Rect.Dx(), g.Rect.Dy()
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			sum := 0
			for yy := y0; yy < y1; yy++ {
				for xx := x0; xx < x1; xx++ {
					sum += int(g.Pix[yy*g.Stride+xx])
				}
			}
			n := (y1 - y0) * (x1 - x0)
			out.Pix[y*out.Stride+x] = uint8((sum + n/2) / n)
		}
	}
	return out
}
