package headpose

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
)

// Condition is how the test boxes are made (METHOD §6).
type Condition string

const (
	Annotated Condition = "annotated" // the face boxes
	Shifted   Condition = "shifted"   // face boxes moved by seeded Gaussian shifts
	Detected  Condition = "detected"  // the detector's boxes, calibrated
)

// ParseCondition checks a condition name.
func ParseCondition(s string) (Condition, error) {
	switch c := Condition(s); c {
	case Annotated, Shifted, Detected:
		return c, nil
	}
	return "", fmt.Errorf("headpose: condition %q is not annotated, shifted or detected", s)
}

// EvalOptions configure an evaluation.
type EvalOptions struct {
	Condition   Condition
	Seed        uint64  // seeds the shifted boxes (each image its own generator)
	CentreSigma float64 // shifted: σ of the centre move in box sides (default 0.1)
	ScaleSigma  float64 // shifted: σ of the log-scale move (default 0.1)
	Settings    pose.Settings
	Detector    *detect.Detector // detected: the detector
	Calibration detect.Calibration
}

func (o *EvalOptions) defaults() {
	if o.CentreSigma == 0 {
		o.CentreSigma = 0.1
	}
	if o.ScaleSigma == 0 {
		o.ScaleSigma = 0.1
	}
	if o.Settings.MaxIter == 0 {
		o.Settings = pose.DefaultSettings()
	}
}

// Stats are the errors of one angle, in degrees.
type Stats struct {
	MAE  float64 `json:"mae"`
	STD  float64 `json:"std"` // of the absolute error
	RMSE float64 `json:"rmse"`
	N    int     `json:"n"`
}

// Report gathers absolute errors per angle and box statistics.
type Report struct {
	errs      map[string][]float64
	stds      map[string][]float64 // predicted standard deviations, beside errs
	Faces     int                  // test faces
	Found     int                  // faces with a matching detection (detected condition)
	IoUBefore float64              // mean IoU of the test box with the face box
	IoUAfter  float64              // the same after refinement
	boxes     int
}

// NewReport returns an empty report.
func NewReport() *Report {
	return &Report{errs: map[string][]float64{}, stds: map[string][]float64{}}
}

// Merge adds o's errors to r.
func (r *Report) Merge(o *Report) {
	for k, v := range o.errs {
		r.errs[k] = append(r.errs[k], v...)
		r.stds[k] = append(r.stds[k], o.stds[k]...)
	}
	r.IoUBefore = (r.IoUBefore*float64(r.boxes) + o.IoUBefore*float64(o.boxes)) / math.Max(float64(r.boxes+o.boxes), 1)
	r.IoUAfter = (r.IoUAfter*float64(r.boxes) + o.IoUAfter*float64(o.boxes)) / math.Max(float64(r.boxes+o.boxes), 1)
	r.boxes += o.boxes
	r.Faces += o.Faces
	r.Found += o.Found
}

// Stats returns the statistics of angle name (N = 0 if it was not measured).
func (r *Report) Stats(name string) Stats {
	e := r.errs[name]
	if len(e) == 0 {
		return Stats{}
	}
	var s, sq float64
	for _, v := range e {
		s += v
		sq += v * v
	}
	n := float64(len(e))
	mae := s / n
	return Stats{MAE: mae, STD: math.Sqrt(math.Max(sq/n-mae*mae, 0)), RMSE: math.Sqrt(sq / n), N: len(e)}
}

// StdRatio is how much larger the errors of angle name are than the
// predicted standard deviations: sqrt(Σ error² / Σ σ²). 1 is a calibrated
// uncertainty; above 1, an overconfident one. 0 if nothing was measured.
func (r *Report) StdRatio(name string) float64 {
	var e2, s2 float64
	for i, e := range r.errs[name] {
		e2 += e * e
		s2 += r.stds[name][i] * r.stds[name][i]
	}
	if s2 == 0 {
		return 0
	}
	return math.Sqrt(e2 / s2)
}

// Angles lists the measured angles in yaw, pitch, roll order.
func (r *Report) Angles() []string {
	var out []string
	for _, a := range pose.AngleNames {
		if len(r.errs[a]) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// DetectionRate is Found/Faces.
func (r *Report) DetectionRate() float64 {
	if r.Faces == 0 {
		return 0
	}
	return float64(r.Found) / float64(r.Faces)
}

// JSON writes {"yaw":{"mae":…},…} plus the detection rate where measured.
func (r *Report) JSON(w io.Writer, detection bool) error {
	out := map[string]any{}
	for _, a := range r.Angles() {
		out[a] = r.Stats(a)
	}
	if detection {
		out["detection_rate"] = r.DetectionRate()
		out["faces"] = r.Faces
	}
	return json.NewEncoder(w).Encode(out)
}

// Markdown writes a table laid out like the paper's: one row per angle.
func (r *Report) Markdown(w io.Writer, title string) {
	fmt.Fprintf(w, "| %s | MAE | STD | RMSE | n |\n|---|---|---|---|---|\n", title)
	for _, a := range r.Angles() {
		s := r.Stats(a)
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %d |\n", a, s.MAE, s.STD, s.RMSE, s.N)
	}
}

// CSV writes angle,mae,std,rmse,n rows.
func (r *Report) CSV(w io.Writer) {
	fmt.Fprintln(w, "angle,mae,std,rmse,n")
	for _, a := range r.Angles() {
		s := r.Stats(a)
		fmt.Fprintf(w, "%s,%.4f,%.4f,%.4f,%d\n", a, s.MAE, s.STD, s.RMSE, s.N)
	}
}

// Summary is a one-line account, e.g. "yaw 7.61 pitch 8.02 (MAE, n=2790)".
func (r *Report) Summary() string {
	var parts []string
	for _, a := range r.Angles() {
		parts = append(parts, fmt.Sprintf("%s %.2f", a, r.Stats(a).MAE))
	}
	s := strings.Join(parts, " ") + fmt.Sprintf(" (MAE °, %d faces", r.Faces)
	if r.Found != r.Faces {
		s += fmt.Sprintf(", %.1f %% detected", 100*r.DetectionRate())
	}
	if r.boxes > 0 {
		s += fmt.Sprintf(", IoU %.3f → %.3f", r.IoUBefore, r.IoUAfter)
	}
	return s + ")"
}

// Evaluate estimates the pose of the bank's images idx under o and returns
// the errors. Images run in parallel; the result does not depend on how.
func Evaluate(est *pose.Estimator, b *Bank, idx []int, o EvalOptions) (*Report, error) {
	o.defaults()
	if o.Condition == Detected && o.Detector == nil {
		return nil, fmt.Errorf("headpose: the detected condition needs a detector")
	}
	type one struct {
		err, std   [3]float64
		has        [3]bool
		found      bool
		iou0, iou1 float64
	}
	res := make([]one, len(idx))
	parallel(len(idx), func() func(int) {
		wk := est.NewWorker()
		return func(j int) {
			i := idx[j]
			s := b.Samples[i]
			face := b.FaceBox(i)
			var box feature.Box
			switch o.Condition {
			case Annotated:
				box = face
			case Shifted:
				rng := rand.New(rand.NewPCG(o.Seed^0x7e57, uint64(i)))
				box = Jitter(rng, o.CentreSigma, o.ScaleSigma).Apply(face)
			case Detected:
				d, ok := b.Detection(i, o.Detector)
				if !ok {
					return
				}
				box = o.Calibration.Apply(d.Box)
			}
			r := wk.Estimate(b.Images[i], box)
			out := one{found: true, iou0: feature.IoU(box, face), iou1: feature.IoU(r.Box, face)}
			for a, name := range pose.AngleNames {
				truth, ok := s.Angle(name)
				if !ok || !est.HasAngle(a) {
					continue
				}
				out.err[a] = math.Abs(r.Angles[a] - truth)
				out.std[a] = r.Std[a]
				out.has[a] = true
			}
			res[j] = out
		}
	})
	rep := NewReport()
	rep.Faces = len(idx)
	var i0, i1 float64
	for _, r := range res {
		if !r.found {
			continue
		}
		rep.Found++
		i0 += r.iou0
		i1 += r.iou1
		for a, name := range pose.AngleNames {
			if r.has[a] {
				rep.errs[name] = append(rep.errs[name], r.err[a])
				rep.stds[name] = append(rep.stds[name], r.std[a])
			}
		}
	}
	if rep.Found > 0 {
		rep.IoUBefore, rep.IoUAfter, rep.boxes = i0/float64(rep.Found), i1/float64(rep.Found), rep.Found
	}
	return rep, nil
}

// Detection returns the detection that matches image i's face: its centre
// inside the annotated box and IoU ≥ 0.3 with it (METHOD §8), the best by
// IoU. Detections are computed once per image and detector and cached.
func (b *Bank) Detection(i int, d *detect.Detector) (detect.Face, bool) {
	b.detOnce.Do(func() { b.dets = make([][]detect.Face, len(b.Samples)); b.detDone = make([]bool, len(b.Samples)) })
	b.detMu.Lock()
	done := b.detDone[i] && b.detBy == d
	faces := b.dets[i]
	b.detMu.Unlock()
	if !done {
		faces = d.Detect(b.Images[i])
		b.detMu.Lock()
		if b.detBy != d {
			for k := range b.detDone {
				b.detDone[k] = false
			}
			b.detBy = d
		}
		b.dets[i], b.detDone[i] = faces, true
		b.detMu.Unlock()
	}
	ann := b.Samples[i].Box
	best, bestIoU := detect.Face{}, 0.0
	for _, f := range faces {
		cx, cy := f.Box.Centre()
		if cx < ann.X || cx > ann.X+ann.W || cy < ann.Y || cy > ann.Y+ann.H {
			continue
		}
		if iou := feature.IoU(f.Box, ann); iou >= 0.3 && iou > bestIoU {
			best, bestIoU = f, iou
		}
	}
	return best, bestIoU > 0
}

// LearnCalibration finds the mean move from matched detections to the face
// boxes of images idx: centre offset in detector box sides, and the
// geometric mean of the size ratio.
func LearnCalibration(b *Bank, idx []int, d *detect.Detector) (detect.Calibration, int) {
	var dx, dy, ls float64
	n := 0
	found := make([]detect.Face, len(idx))
	ok := make([]bool, len(idx))
	parallel(len(idx), func() func(int) {
		return func(j int) { found[j], ok[j] = b.Detection(idx[j], d) }
	})
	for j, i := range idx {
		if !ok[j] {
			continue
		}
		sh := Back(found[j].Box, b.FaceBox(i))
		dx += sh.DX
		dy += sh.DY
		ls += sh.DS
		n++
	}
	if n == 0 {
		return detect.Identity, 0
	}
	return detect.Calibration{DX: dx / float64(n), DY: dy / float64(n), Scale: math.Exp(ls / float64(n))}, n
}

// Subjects returns the distinct subjects of the bank's samples (restricted
// to idx if non-nil), sorted numerically where they are numbers.
func (b *Bank) Subjects(set string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range b.Samples {
		if (set == "" || s.Set == set) && !seen[s.Subject] {
			seen[s.Subject] = true
			out = append(out, s.Subject)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) < len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}
