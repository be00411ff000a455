package headpose

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/train/dataset"
)

// Condition is how the test boxes are made (docs/method.md §6).
type Condition string

const (
	Annotated Condition = "annotated" // the face boxes
	Shifted   Condition = "shifted"   // face boxes moved by seeded Gaussian shifts
	Detected  Condition = "detected"  // the detector's boxes, calibrated
	// Published: what posed publishes on the picture as the first frame
	// of a scene (EvalOptions.Frames: the daemon's frame path); the face
	// is found where a published face is its, and its angles are the
	// published ones.
	Published Condition = "published"
	// Turning: a head turning in video. Each tested person's series of
	// Pointing'04 pictures at pitch 0, ordered by yaw from −90° to 90° and
	// back, is replayed through the daemon's frame path (EvalOptions.Frames)
	// as one scene, each picture held EvalOptions.Hold frames at 15 frames
	// a second; every frame is a test face (its picture's label against
	// what posed publishes on it). EvalOptions.Alone shows each frame as a
	// scene of its own: the frames one by one.
	Turning Condition = "turning"
)

// Frames is a frame path as the daemon runs it (track.Tracker), set back
// to a scene's first frame by Reset.
type Frames interface {
	Process(img *image.Gray) []track.Face
	ProcessAt(img *image.Gray, at time.Time) []track.Face
	Reset()
}

// ParseCondition checks a condition name.
func ParseCondition(s string) (Condition, error) {
	switch c := Condition(s); c {
	case Annotated, Shifted, Detected, Published, Turning:
		return c, nil
	}
	return "", fmt.Errorf("headpose: condition %q is not annotated, shifted, detected, published or turning", s)
}

// EvalOptions configure an evaluation.
type EvalOptions struct {
	Condition   Condition
	Seed        uint64  // seeds the shifted boxes (each image its own generator)
	CentreSigma float64 // shifted: σ of the centre move in box sides (default 0.1)
	ScaleSigma  float64 // shifted: σ of the log-scale move (default 0.1)
	Settings    pose.Settings
	Detector    *detect.Detector // detected: the detector
	// DetectorFor, if set, picks each image's detector instead (e.g. the
	// turned-face cascade trained without the image's person).
	DetectorFor func(dataset.Sample) *detect.Detector
	Calibration detect.Calibration
	// NoExpert measures the model alone where a profile expert is
	// trained beside it (LOPOOptions.Expert): both in one run.
	NoExpert bool
	// NoLandmarks measures the model without the landmark expert trained
	// beside it (LOPOOptions.Landmarks).
	NoLandmarks bool
	// Frames makes, for a worker, the daemon's frame path around an
	// estimator and the calibration of its model's boxes: published.
	Frames func(est *pose.Estimator, calib detect.Calibration) (Frames, error)
	// FramesPerPicture: published: the picture is shown this many frames
	// (a still scene) and the last frame's faces count; 0 or 1: the first
	// frame alone.
	FramesPerPicture int
	// Hold: turning: the frames each picture is held (0: 1); Alone: each
	// frame a scene of its own, the tracker reset before it.
	Hold  int
	Alone bool
	// Noise: turning: the σ, in grey levels, of the sensor-like noise
	// added to every frame, each frame its own draw (seeded by Seed, the
	// sequence and the frame, so that the frames one by one (Alone) see
	// the same frames as the video): a camera's held head is never the
	// same picture twice. 0: the pictures as they are.
	Noise float64
	// StartStd, if above 0, checks detections as posed's tracker does
	// (track.Config.Refuses): a face whose yaw std from its detection
	// exceeds it is not found.
	StartStd float64
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

// Name says what the case measures, e.g. "detected, 3 iterations".
func (o EvalOptions) Name() string {
	o.defaults()
	it := "iterations"
	if o.Settings.MaxIter == 1 {
		it = "iteration"
	}
	name := fmt.Sprintf("%s, %d %s", o.Condition, o.Settings.MaxIter, it)
	if t := o.Settings.Temperature; t != 0 {
		name += fmt.Sprintf(", T %g", t)
	}
	if g := o.Settings.Gain; g != 0 && g != 1 {
		name += fmt.Sprintf(", gain %g", g)
	}
	if o.Settings.Average {
		name += ", averaged"
	}
	if o.Settings.Mirror {
		name += ", mirrored"
	}
	if o.NoExpert {
		name += ", no expert"
	}
	if o.NoLandmarks {
		name += ", no landmarks"
	}
	if o.Condition == Detected && o.StartStd > 0 {
		name += fmt.Sprintf(", started at yaw σ ≤ %g°", o.StartStd)
	}
	if o.Condition == Turning {
		name += fmt.Sprintf(", %d frames a pose", max(o.Hold, 1))
		if o.Noise > 0 {
			name += fmt.Sprintf(", noise σ %g", o.Noise)
		}
		if o.Alone {
			name += ", frames one by one"
		}
	}
	if o.Condition == Published && o.FramesPerPicture > 1 {
		name += fmt.Sprintf(", frame %d of a still scene", o.FramesPerPicture)
	}
	return name
}

// Stats are the errors of one angle, in degrees.
type Stats struct {
	MAE  float64 `json:"mae"`
	STD  float64 `json:"std"` // of the absolute error
	RMSE float64 `json:"rmse"`
	N    int     `json:"n"`
}

// FaceResult is the outcome for one test face.
type FaceResult struct {
	Sample  int    // index in the bank
	Fold    string // the fold that tested it
	Found   bool   // detected condition: a detection matched it (always true otherwise)
	Truth   [3]float64
	Has     [3]bool // which angles are labelled (and predicted by the model)
	Pred    [3]float64
	Std     [3]float64  // predicted standard deviations (calibrated where the model says)
	Face    feature.Box // the face box (the bank's kind)
	Test    feature.Box // the box the estimate started from
	Refined feature.Box // the box after refinement
	IoU     [2]float64  // of Test and of Refined with Face
	Iter    int         // predictions made
	View    detect.View // detected condition: the view of the detection (frontal, or turned one way)
	// Others: published condition: the faces published on the picture
	// that are not this one (phantoms where every face is labelled).
	Others int
	// Unread: published condition: found, but published without angles
	// (track.Config.Unread): counted as found, left out of every error.
	Unread bool
	// Turn: turning condition: the sign of the head's turn at this frame
	// (+1 toward positive yaw, −1 back; 0 at either end).
	Turn float64
}

// Err returns the absolute error of angle a (0 yaw, 1 pitch, 2 roll).
func (f *FaceResult) Err(a int) float64 { return math.Abs(f.Pred[a] - f.Truth[a]) }

// RotationErr returns the angle of the rotation between the true and the
// estimated head poses, in degrees, and whether the face has all three
// angles: θ = arccos((tr(Tᵀ·P) − 1)/2) for the rotations T and P of the
// angles (rotation.Head; the angular distance on SO(3) of Hartley et al.,
// "Rotation Averaging", IJCV 2013), an error no convention of angles
// moves. Past 60° of yaw the data sets' angles lose it: R = Rx(p)·Ry(y)·Rz(−r)
// is Rx(p − r)·Ry(90°) at y = 90°, so that pitch and roll errors of 20°
// each can be one of a few degrees (docs/measured.md).
func (f *FaceResult) RotationErr() (float64, bool) {
	if !f.Has[0] || !f.Has[1] || !f.Has[2] {
		return 0, false
	}
	t := rotation.Head(f.Truth[0], f.Truth[1], f.Truth[2])
	p := rotation.Head(f.Pred[0], f.Pred[1], f.Pred[2])
	d := t.T().Mul(p)
	c := (d[0][0] + d[1][1] + d[2][2] - 1) / 2
	return math.Acos(math.Max(-1, math.Min(1, c))) * 180 / math.Pi, true
}

// rotationMAE is the mean RotationErr of the faces read (found, with
// angles) that keep says, and how many there are.
func (r *Report) rotationMAE(keep func(*FaceResult) bool) (float64, int) {
	var s float64
	n := 0
	for i := range r.Faces {
		f := &r.Faces[i]
		if !f.Found || f.Unread || (keep != nil && !keep(f)) {
			continue
		}
		if e, ok := f.RotationErr(); ok {
			s += e
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return s / float64(n), n
}

// Report gathers the results of every test face of one evaluation case.
type Report struct {
	Case  string // what was measured, e.g. "annotated, 3 iterations"
	Faces []FaceResult
}

// NewReport returns an empty report.
func NewReport() *Report { return &Report{} }

// Merge adds o's faces to r.
func (r *Report) Merge(o *Report) {
	if r.Case == "" {
		r.Case = o.Case
	}
	r.Faces = append(r.Faces, o.Faces...)
}

// Found is the number of faces estimated (matched by a detection under the
// detected condition).
func (r *Report) Found() int {
	n := 0
	for i := range r.Faces {
		if r.Faces[i].Found {
			n++
		}
	}
	return n
}

// Unread is the number of faces found but published without angles.
func (r *Report) Unread() int {
	n := 0
	for i := range r.Faces {
		if r.Faces[i].Found && r.Faces[i].Unread {
			n++
		}
	}
	return n
}

// IoU returns the mean IoU of the test boxes and of the refined boxes with
// the face boxes, over the faces found.
func (r *Report) IoU() (before, after float64) {
	n := 0
	for i := range r.Faces {
		if f := &r.Faces[i]; f.Found {
			before += f.IoU[0]
			after += f.IoU[1]
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return before / float64(n), after / float64(n)
}

// stats computes the statistics of angle a over the faces keep accepts.
func (r *Report) stats(a int, keep func(*FaceResult) bool) Stats {
	var s, sq float64
	n := 0
	for i := range r.Faces {
		f := &r.Faces[i]
		if !f.Found || f.Unread || !f.Has[a] || (keep != nil && !keep(f)) {
			continue
		}
		e := f.Err(a)
		s += e
		sq += e * e
		n++
	}
	if n == 0 {
		return Stats{}
	}
	mae := s / float64(n)
	return Stats{MAE: mae, STD: math.Sqrt(math.Max(sq/float64(n)-mae*mae, 0)), RMSE: math.Sqrt(sq / float64(n)), N: n}
}

func angleIndex(name string) int {
	for a, n := range pose.AngleNames {
		if n == name {
			return a
		}
	}
	return -1
}

// Stats returns the statistics of angle name (N = 0 if it was not
// measured: unlabelled angles are not errors).
func (r *Report) Stats(name string) Stats {
	a := angleIndex(name)
	if a < 0 {
		return Stats{}
	}
	return r.stats(a, nil)
}

// MeanMAE is the mean of the measured angles' MAEs.
func (r *Report) MeanMAE() float64 {
	s, n := 0.0, 0
	for _, a := range r.Angles() {
		s += r.Stats(a).MAE
		n++
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// StdRatio is how much larger the errors of angle name are than the
// predicted standard deviations: sqrt(Σ error² / Σ σ²). 1 is a calibrated
// uncertainty; above 1, an overconfident one. 0 if nothing was measured.
func (r *Report) StdRatio(name string) float64 {
	a := angleIndex(name)
	var e2, s2 float64
	for i := range r.Faces {
		f := &r.Faces[i]
		if a < 0 || !f.Found || f.Unread || !f.Has[a] {
			continue
		}
		e2 += f.Err(a) * f.Err(a)
		s2 += f.Std[a] * f.Std[a]
	}
	if s2 == 0 {
		return 0
	}
	return math.Sqrt(e2 / s2)
}

// Angles lists the measured angles in yaw, pitch, roll order.
func (r *Report) Angles() []string {
	var out []string
	for a, name := range pose.AngleNames {
		if r.stats(a, nil).N > 0 {
			out = append(out, name)
		}
	}
	return out
}

// DetectionRate is Found/Faces.
func (r *Report) DetectionRate() float64 {
	if len(r.Faces) == 0 {
		return 0
	}
	return float64(r.Found()) / float64(len(r.Faces))
}

// OthersPerPicture is the faces published per picture that are not the
// labelled face (published condition): phantoms where every face of a
// picture is labelled (Pointing'04), and unlabelled faces too elsewhere.
func (r *Report) OthersPerPicture() float64 {
	if len(r.Faces) == 0 {
		return 0
	}
	n := 0
	for i := range r.Faces {
		n += r.Faces[i].Others
	}
	return float64(n) / float64(len(r.Faces))
}

// JSON writes {"yaw":{"mae":…},…} plus the detection rate where measured.
func (r *Report) JSON(w io.Writer, detection bool) error {
	out := map[string]any{"case": r.Case, "mean_mae": r.MeanMAE()}
	for _, a := range r.Angles() {
		out[a] = r.Stats(a)
	}
	if detection {
		out["detection_rate"] = r.DetectionRate()
		out["faces"] = len(r.Faces)
	}
	if strings.HasPrefix(r.Case, string(Published)) {
		out["others_per_picture"] = r.OthersPerPicture()
		out["found_without_angles"] = r.Unread()
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
	if len(r.Angles()) > 1 {
		fmt.Fprintf(w, "| mean | %.2f | | | |\n", r.MeanMAE())
	}
}

// yawBins are the edges of the |yaw| bins of YawTable, in degrees.
var yawBins = []float64{0, 15, 30, 45, 60, 75, 90}

// YawTable writes the errors by bin of true |yaw|: where the error is. Under
// the detected condition it says how many faces of each bin were found.
func (r *Report) YawTable(w io.Writer) { r.binTable(w, 0) }

// PitchTable is YawTable by bin of true |pitch|: a face nodded far up or
// down is found and read apart from a turned one.
func (r *Report) PitchTable(w io.Writer) { r.binTable(w, 1) }

// binTable writes the errors and the faces found by 15° bin of the true
// |angle| of index by (0 yaw, 1 pitch).
func (r *Report) binTable(w io.Writer, by int) {
	angles := r.Angles()
	_, rot := r.rotationMAE(nil) // a column where faces have all three angles
	fmt.Fprintf(w, "| true \\|%s\\| | faces | found |", pose.AngleNames[by])
	for _, a := range angles {
		fmt.Fprintf(w, " %s MAE |", a)
	}
	cols := len(angles)
	if rot > 0 {
		fmt.Fprintf(w, " rotation error |")
		cols++
	}
	fmt.Fprintf(w, "\n|---|---|---|%s\n", strings.Repeat("---|", cols))
	row := func(label string, in func(*FaceResult) bool) {
		faces, found, unread := 0, 0, 0
		for i := range r.Faces {
			if f := &r.Faces[i]; in(f) {
				faces++
				if f.Found {
					found++
				}
				if f.Found && f.Unread {
					unread++
				}
			}
		}
		if faces == 0 {
			return
		}
		fmt.Fprintf(w, "| %s | %d | %.0f %%", label, faces, 100*float64(found)/float64(faces))
		if unread > 0 {
			fmt.Fprintf(w, " (%d without angles)", unread)
		}
		fmt.Fprint(w, " |")
		for _, a := range angles {
			if s := r.stats(angleIndex(a), in); s.N > 0 {
				fmt.Fprintf(w, " %.2f |", s.MAE)
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		if rot > 0 {
			if e, n := r.rotationMAE(in); n > 0 {
				fmt.Fprintf(w, " %.2f |", e)
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		fmt.Fprintln(w)
	}
	for i := 0; i < len(yawBins); i++ {
		lo := yawBins[i]
		if i+1 < len(yawBins) {
			hi := yawBins[i+1]
			row(fmt.Sprintf("%g–%g°", lo, hi), func(f *FaceResult) bool {
				y := math.Abs(f.Truth[by])
				return f.Has[by] && y >= lo && (y < hi || (hi == 90 && y == 90))
			})
		} else {
			row(fmt.Sprintf("> %g°", lo), func(f *FaceResult) bool { return f.Has[by] && math.Abs(f.Truth[by]) > lo })
		}
	}
	row(pose.AngleNames[by]+" unlabelled", func(f *FaceResult) bool { return !f.Has[by] })
}

// CSV writes angle,mae,std,rmse,n rows.
func (r *Report) CSV(w io.Writer) {
	fmt.Fprintln(w, "angle,mae,std,rmse,n")
	for _, a := range r.Angles() {
		s := r.Stats(a)
		fmt.Fprintf(w, "%s,%.4f,%.4f,%.4f,%d\n", a, s.MAE, s.STD, s.RMSE, s.N)
	}
}

// PerFaceHeader is the header of the rows PerFace writes.
const PerFaceHeader = "case,fold,set,subject,path,found,yaw_true,pitch_true,roll_true,yaw,pitch,roll,yaw_std,pitch_std,roll_std," +
	"face_x,face_y,face_w,face_h,test_x,test_y,test_w,test_h,refined_x,refined_y,refined_w,refined_h,iou_before,iou_after,iterations,view"

// PerFace writes one CSV row per test face (PerFaceHeader's columns; a
// cell is empty where an angle is unlabelled or a face was not found).
func (r *Report) PerFace(w io.Writer, b *Bank) {
	cw := csv.NewWriter(w)
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	box := func(x feature.Box, ok bool) []string {
		return []string{num(x.X, ok), num(x.Y, ok), num(x.W, ok), num(x.H, ok)}
	}
	detected := strings.HasPrefix(r.Case, string(Detected)) || strings.HasPrefix(r.Case, string(Published))
	for i := range r.Faces {
		f := &r.Faces[i]
		s := b.Samples[f.Sample]
		rec := []string{r.Case, f.Fold, s.Set, s.Subject, s.Path, strconv.FormatBool(f.Found)}
		for a := range 3 {
			v, ok := s.Angle(pose.AngleNames[a])
			rec = append(rec, num(v, ok))
		}
		for a := range 3 {
			rec = append(rec, num(f.Pred[a], f.Found && !f.Unread && f.Has[a]))
		}
		for a := range 3 {
			rec = append(rec, num(f.Std[a], f.Found && !f.Unread && f.Has[a]))
		}
		rec = append(rec, box(f.Face, true)...)
		rec = append(rec, box(f.Test, f.Found)...)
		rec = append(rec, box(f.Refined, f.Found)...)
		rec = append(rec, num(f.IoU[0], f.Found), num(f.IoU[1], f.Found), strconv.Itoa(f.Iter))
		view := ""
		if f.Found && detected {
			view = f.View.String()
		}
		rec = append(rec, view)
		cw.Write(rec)
	}
	cw.Flush()
}

// Summary is a one-line account, e.g. "yaw 7.61 pitch 8.02 (MAE °, 2790
// faces, IoU 0.712 → 0.858)".
func (r *Report) Summary() string {
	var parts []string
	for _, a := range r.Angles() {
		parts = append(parts, fmt.Sprintf("%s %.2f", a, r.Stats(a).MAE))
	}
	if len(parts) > 1 {
		parts = append(parts, fmt.Sprintf("mean %.2f", r.MeanMAE()))
	}
	s := strings.Join(parts, " ") + fmt.Sprintf(" (MAE °, %d faces", len(r.Faces))
	if found := r.Found(); found != len(r.Faces) {
		s += fmt.Sprintf(", %.1f %% detected", 100*r.DetectionRate())
	}
	if n := r.Unread(); n > 0 {
		s += fmt.Sprintf(", %d of them without angles", n)
	}
	if strings.HasPrefix(r.Case, string(Turning)) {
		lag, n := r.Lag()
		s += fmt.Sprintf(", %d of %d frames found, yaw %.2f° behind the turn on the %d turning", r.Found(), len(r.Faces), lag, n)
	} else if strings.HasPrefix(r.Case, string(Published)) {
		s += fmt.Sprintf(", %.3f other faces published per picture", r.OthersPerPicture())
	} else if r.Found() > 0 {
		i0, i1 := r.IoU()
		s += fmt.Sprintf(", IoU %.3f → %.3f", i0, i1)
	}
	return s + ")"
}

// Evaluate estimates the pose of the bank's images idx under o and returns
// the results. Images run in parallel; the result does not depend on how.
func Evaluate(est *pose.Estimator, b *Bank, idx []int, o EvalOptions) (*Report, error) {
	o.defaults()
	if o.Condition == Detected && o.Detector == nil && o.DetectorFor == nil {
		return nil, fmt.Errorf("headpose: the detected condition needs a detector")
	}
	switch o.Condition {
	case Published:
		return published(est, b, idx, o)
	case Turning:
		return turning(est, b, idx, o)
	}
	res := make([]FaceResult, len(idx))
	parallel(len(idx), func() func(int) {
		wk := est.NewWorker()
		return func(j int) {
			i := idx[j]
			face := b.FaceBox(i)
			out := b.result(est, i, face)
			var box feature.Box
			switch o.Condition {
			case Annotated:
				box = face
			case Shifted:
				rng := rand.New(rand.NewPCG(o.Seed^0x7e57, uint64(i)))
				box = Jitter(rng, o.CentreSigma, o.ScaleSigma).Apply(face)
			case Detected:
				det := o.Detector
				if o.DetectorFor != nil {
					det = o.DetectorFor(b.Samples[i])
				}
				d, ok := b.Detection(i, det)
				if !ok {
					res[j] = out
					return
				}
				box = o.Calibration.Apply(d.Box)
				out.View = d.View
			}
			r := wk.Estimate(b.Images[i], box)
			if o.Condition == Detected && est.HasAngle(0) && (track.Config{StartStd: o.StartStd}).Refuses(r.Std[0]) {
				res[j] = out // posed would not start a track on it
				return
			}
			out.Found, out.Test, out.Refined, out.Iter = true, box, r.Box, r.Iterations
			out.IoU = [2]float64{feature.IoU(box, face), feature.IoU(r.Box, face)}
			out.Pred, out.Std = r.Angles, r.Std
			res[j] = out
		}
	})
	return &Report{Case: o.Name(), Faces: res}, nil
}

// result is image i's result before its estimate: its face box and the
// labels of the angles est predicts.
func (b *Bank) result(est *pose.Estimator, i int, face feature.Box) FaceResult {
	out := FaceResult{Sample: i, Face: face}
	v := b.Base(i)
	for a, name := range pose.AngleNames {
		if truth, ok := v.Angle(name); ok && est.HasAngle(a) {
			out.Truth[a], out.Has[a] = truth, true
		}
	}
	return out
}

// Still shows img to fr as a still scene of frames frames (at least one)
// from its first, hands each frame's faces to each (if not nil), and
// returns the faces of the last.
func Still(fr Frames, img *image.Gray, frames int, each func([]track.Face)) []track.Face {
	return NoisyStill(fr, img, frames, 0, 0, each)
}

// NoisyStill is Still with sensor-like noise of σ sigma grey levels
// added to every frame, each frame's its own (drawn from seed): a still
// scene as a camera delivers it. sigma 0 is Still.
func NoisyStill(fr Frames, img *image.Gray, frames int, sigma float64, seed uint64, each func([]track.Face)) []track.Face {
	fr.Reset()
	var faces []track.Face
	var noisy *image.Gray
	for frame := range max(frames, 1) {
		shown := img
		if sigma > 0 {
			noisy = addNoise(noisy, img, sigma, rand.New(rand.NewPCG(seed, uint64(frame))))
			shown = noisy
		}
		faces = fr.Process(shown)
		if each != nil {
			each(faces)
		}
	}
	return faces
}

// StillScene is what a frame path published over a still scene
// (NoisyStill): the frames that showed a face, the tracks (face ids) that
// did, and the last frame's faces.
type StillScene struct {
	Shown, Tracks int
	Last          []track.Face
}

// StillScenes shows each of imgs as a still scene of n frames, with
// noise of σ sigma (NoisyStill), to a frame path of frames (around est)
// of its own, as many scenes at once as there are cores.
func StillScenes(imgs []*image.Gray, est *pose.Estimator, frames func(*pose.Estimator, detect.Calibration) (Frames, error), calib detect.Calibration, n int, sigma float64, seed uint64) ([]StillScene, error) {
	out := make([]StillScene, len(imgs))
	err := onFrames(len(imgs), est, EvalOptions{Frames: frames, Calibration: calib}, func(fr Frames) func(int) {
		ids := map[uint64]bool{}
		return func(i int) {
			clear(ids)
			s := &out[i]
			last := NoisyStill(fr, imgs[i], n, sigma, seed, func(faces []track.Face) {
				if len(faces) > 0 {
					s.Shown++
				}
				for _, f := range faces {
					ids[f.ID] = true
				}
			})
			s.Tracks, s.Last = len(ids), slices.Clone(last)
		}
	})
	return out, err
}

// onFrames runs work on n items in parallel, each worker with a frame
// path of its own (o.Frames around est); it returns the first error
// making one.
func onFrames(n int, est *pose.Estimator, o EvalOptions, work func(Frames) func(int)) error {
	var ferr error
	var mu sync.Mutex
	parallel(n, func() func(int) {
		fr, err := o.Frames(est, o.Calibration)
		if err != nil {
			mu.Lock()
			ferr = err
			mu.Unlock()
			return func(int) {}
		}
		return work(fr)
	})
	return ferr
}

// published is Evaluate under the published condition: each picture the
// first frame of a scene of the daemon's frame path.
func published(est *pose.Estimator, b *Bank, idx []int, o EvalOptions) (*Report, error) {
	if o.Frames == nil {
		return nil, fmt.Errorf("headpose: the published condition needs the daemon's frame path")
	}
	res := make([]FaceResult, len(idx))
	ferr := onFrames(len(idx), est, o, func(fr Frames) func(int) {
		return func(j int) {
			i := idx[j]
			face := b.FaceBox(i)
			out := b.result(est, i, face)
			label := b.Samples[i].Box
			for _, f := range Still(fr, b.Images[i], o.FramesPerPicture, nil) {
				if !out.Found && feature.Finds(f.Box, label) {
					out.Found, out.Refined, out.View = true, f.Box, f.View
					out.Test = f.Box
					out.IoU = [2]float64{feature.IoU(f.Box, face), feature.IoU(f.Box, face)}
					out.Pred, out.Std, out.Unread = f.Angles, f.Std, !f.Has[0]
					continue
				}
				out.Others++
			}
			res[j] = out
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	return &Report{Case: o.Name(), Faces: res}, nil
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

// turningFPS is the frame rate turning sequences are replayed at.
const turningFPS = 15

// Turns returns the turning sequences of the bank's faces idx: per person
// and series of Pointing'04, the pictures at pitch 0 ordered by yaw from
// its least to its greatest and back (each end once), with the sign of
// the turn at each.
func (b *Bank) Turns(idx []int) (seqs [][]int, turns [][]float64) {
	type key struct {
		subject string
		series  int
	}
	by := map[key][]int{}
	var keys []key
	for _, i := range idx {
		s := b.Samples[i]
		if s.Set != "pointing04" || s.Pitch != 0 || !s.HasYaw {
			continue
		}
		k := key{s.Subject, s.Series}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], i)
	}
	for _, k := range keys {
		v := by[k]
		sort.SliceStable(v, func(x, y int) bool { return b.Samples[v[x]].Yaw < b.Samples[v[y]].Yaw })
		if len(v) < 2 {
			continue
		}
		seq := slices.Clone(v)
		turn := make([]float64, 0, 2*len(v)-1)
		for j := range v {
			turn = append(turn, 1)
			if j == len(v)-1 {
				turn[j] = 0
			}
		}
		turn[0] = 0
		for j := len(v) - 2; j >= 0; j-- {
			seq = append(seq, v[j])
			turn = append(turn, -1)
		}
		turn[len(turn)-1] = 0
		seqs, turns = append(seqs, seq), append(turns, turn)
	}
	return seqs, turns
}

// turning is Evaluate under the turning condition.
func turning(est *pose.Estimator, b *Bank, idx []int, o EvalOptions) (*Report, error) {
	if o.Frames == nil {
		return nil, fmt.Errorf("headpose: the turning condition needs the daemon's frame path")
	}
	seqs, turns := b.Turns(idx)
	hold := max(o.Hold, 1)
	res := make([][]FaceResult, len(seqs))
	ferr := onFrames(len(seqs), est, o, func(fr Frames) func(int) {
		var noisy *image.Gray
		return func(j int) {
			fr.Reset()
			at := time.Unix(0, 0)
			frame := 0
			for n, i := range seqs[j] {
				for range hold {
					at = at.Add(time.Second / turningFPS)
					if o.Alone {
						fr.Reset()
					}
					img := b.Images[i]
					if o.Noise > 0 {
						noisy = addNoise(noisy, img, o.Noise, rand.New(rand.NewPCG(o.Seed, uint64(j)<<32|uint64(frame))))
						img = noisy
					}
					frame++
					out := b.result(est, i, b.FaceBox(i))
					out.Turn = turns[j][n]
					label := b.Samples[i].Box
					for _, f := range fr.ProcessAt(img, at) {
						if !out.Found && feature.Finds(f.Box, label) {
							out.Found, out.Refined, out.Test, out.View = true, f.Box, f.Box, f.View
							out.Pred, out.Std, out.Unread = f.Angles, f.Std, !f.Has[0]
							continue
						}
						out.Others++
					}
					res[j] = append(res[j], out)
				}
			}
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	return &Report{Case: o.Name(), Faces: slices.Concat(res...)}, nil
}

// addNoise returns img with the augmentation's sensor noise of σ grey
// levels (addGaussian) on every pixel, in dst (made when it does not fit).
func addNoise(dst, img *image.Gray, sigma float64, rng *rand.Rand) *image.Gray {
	if dst == nil || dst.Rect != img.Rect {
		dst = image.NewGray(img.Rect)
	}
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		w := img.Rect.Dx()
		addGaussian(dst.Pix[dst.PixOffset(img.Rect.Min.X, y):][:w], img.Pix[img.PixOffset(img.Rect.Min.X, y):][:w], sigma, rng)
	}
	return dst
}

// Lag is the mean signed yaw error along the head's turn over the found
// frames of a turning report that turn (FaceResult.Turn): how far behind
// the turn, in degrees, the published yaw runs (negative: ahead of it).
func (r *Report) Lag() (float64, int) {
	s, n := 0.0, 0
	for i := range r.Faces {
		f := &r.Faces[i]
		if f.Found && !f.Unread && f.Has[0] && f.Turn != 0 {
			s -= f.Turn * (f.Pred[0] - f.Truth[0])
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return s / float64(n), n
}
