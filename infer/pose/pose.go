// Package pose estimates head pose and refines the face box with a GLLiM
// forward model (paper Algorithm 1): from the current box it computes the
// p-HOG features, predicts the pose angles and the box shift, moves the box
// and repeats until the shift is small.
package pose

import (
	"fmt"
	"image"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
)

// Output names a model may predict. Angles are in degrees (AFLW2000
// convention: yaw > 0 turns the nose to the image's left, pitch > 0 looks
// up). The shift is the move that brings the current square box onto the
// face: its centre moves by (dx, dy)·side and its side is multiplied by
// exp(ds).
const (
	Yaw, Pitch, Roll = "yaw", "pitch", "roll"
	DX, DY, DS       = "dx", "dy", "ds"
)

// AngleNames lists the angles in the order Result.Angles holds them.
var AngleNames = [3]string{Yaw, Pitch, Roll}

// Settings of the iterative refinement.
type Settings struct {
	MaxIter int     // predictions per face (≥ 1); the paper stops after 2
	Eps     float64 // stop when √(dx² + dy² + ds²) ≤ Eps
	// Mirror also predicts from the mirrored face (its features permuted,
	// no second crop) and averages the two answers, with yaw, roll and dx
	// negated for the mirror: test-time augmentation at the cost of a
	// second forward pass. The model's answer is mirrored, before the
	// profile expert is asked: the expert reads the face turned the way
	// the model's yaw says, for the face and for its mirror alike, so it
	// blends with the averaged answer as it would with either. Estimate
	// mirrors; Step does not (it reads the change since an Estimate from
	// that Estimate's first prediction before the mirror, Result.First).
	Mirror bool
	// Temperature, if set, overrides the model's temperature of the
	// mixture weights (gllim.Model.Temperature).
	Temperature float64
	// Average reports the mean of every iteration's angles (each a crop
	// of its own box) instead of the last one's.
	Average bool
	// Gain scales each predicted box move (0 means 1, the paper's full
	// step): below 1 the refinement damps the prediction's own noise.
	Gain float64
}

// DefaultSettings are the refinement the default model's card measures: at
// most 3 predictions, stopping below a 2 % move, full steps, and the mean
// of the iterations' angles reported (each iteration's crop is another
// view of the face; on AFLW2000 k-fold the mean beats the last
// prediction's angles from detected and from exact boxes alike).
func DefaultSettings() Settings { return Settings{MaxIter: 3, Eps: 0.02, Gain: 1, Average: true} }

// Estimator holds a loaded model. It is safe for concurrent use; each
// goroutine estimates through its own Worker.
type Estimator struct {
	model    *gllim.Model
	fwd      *gllim.Forward
	settings Settings
	angle    [3]int // output index of yaw, pitch, roll; −1 if absent
	shift    [3]int // output index of dx, dy, ds; −1 if absent
	// The profile expert (WithExpert): nil without one.
	expert *gllim.Forward
	gate   float64 // |yaw| from which the expert answers
	// The expert's weight per output (0 where the model answers alone).
	expertW []float64
	// The expert's σ factors over the model's, per output, so that the
	// model's factor applied at the end leaves the expert's.
	expertStd []float64
	// Expert.ByDensity and Expert.Margin.
	byDensity bool
	margin    float64
	// The landmark expert (WithLandmarks): nil without one; lmAngle its
	// output index of yaw, pitch, roll (−1: not fused).
	lm      *gllim.Forward
	lmAngle [3]int
	lmRho   float64
	lmGate  float64 // LandmarkGate; +Inf without one
	// lmBelow: the model's |angle| below which the expert's answer of that
	// angle is fused (LandmarkPitchGate for pitch; +Inf otherwise).
	lmBelow [3]float64
}

// maxMargin bounds Expert.Margin: log-densities of p-HOG features are in
// the thousands of nats, and a margin past this would hand every face, or
// none, to the expert.
const maxMargin = 1000

// Expert is a profile expert (posectl train -profile): a model of the
// same outputs trained on faces with |yaw| ≥ some bound, all mirrored to
// turn one way (yaw > 0).
type Expert struct {
	Model *gllim.Model
	Gate  float64 // the model's |yaw| from which the expert answers
	// Weight of the expert's answer against the model's, in (0, 1]
	// (0 means 1: it replaces the model's).
	Weight float64
	// Outputs the expert answers (nil: all); the model answers the rest.
	Outputs []string
	// ByDensity also hands the expert faces below the gate that it
	// explains about as well as the model does: where log p(y) under the
	// expert, for the face turned the way the model's yaw says (mirrored
	// where it is negative), is at least the model's log p(y) less Margin
	// (nats). It catches the profile faces the model calls frontal, which
	// the gate on its yaw cannot.
	ByDensity bool
	Margin    float64
}

// Settings a profile expert's model file carries in its training record
// (posectl train -profile writes them): the |yaw| of its training faces,
// and how the daemon is to use it.
const (
	ExpertProfile = "profile"         // it is an expert of faces with |yaw| ≥ this
	ExpertGate    = "profile_gate"    // Expert.Gate
	ExpertWeight  = "profile_weight"  // Expert.Weight
	ExpertOutputs = "profile_outputs" // Expert.Outputs, comma-separated ("": all)
	ExpertDensity = "profile_density" // Expert.Margin where Expert.ByDensity ("": off)
	ExpertPool    = "profile_pool"    // "" or "linear" (the mixture): other poolings were tried and not kept
)

// ExpertOf reads how to use x, a profile expert's model, from its own
// training record; a model that is no expert is an error that says so.
func ExpertOf(x *gllim.Model) (Expert, error) {
	s := x.Training.Settings
	if s[ExpertProfile] == "" {
		return Expert{}, fmt.Errorf("pose: the model is not a profile expert (no %q in its training settings)", ExpertProfile)
	}
	xp := Expert{Model: x}
	var err error
	if xp.Gate, err = strconv.ParseFloat(s[ExpertGate], 64); err != nil {
		return Expert{}, fmt.Errorf("pose: profile expert: %s %q: %w", ExpertGate, s[ExpertGate], err)
	}
	if w := s[ExpertWeight]; w != "" {
		if xp.Weight, err = strconv.ParseFloat(w, 64); err != nil {
			return Expert{}, fmt.Errorf("pose: profile expert: %s %q: %w", ExpertWeight, w, err)
		}
	}
	if o := s[ExpertOutputs]; o != "" {
		xp.Outputs = strings.Split(o, ",")
	}
	if m := s[ExpertDensity]; m != "" {
		xp.ByDensity = true
		if xp.Margin, err = strconv.ParseFloat(m, 64); err != nil {
			return Expert{}, fmt.Errorf("pose: profile expert: %s %q: %w", ExpertDensity, m, err)
		}
	}
	if p := s[ExpertPool]; p != "" && p != "linear" {
		return Expert{}, fmt.Errorf("pose: profile expert: %s %q: posed joins the two answers as a mixture (linear); pooling by product was an experiment, not kept: retrain the expert", ExpertPool, p)
	}
	return xp, nil
}

// WithExpert returns a copy of e that hands turned heads to x.Model.
// Where e's model predicts |yaw| ≥ x.Gate, the expert predicts from the
// features — mirrored first if that yaw is negative, its yaw, roll and dx
// then negated back — and its answer is blended into the model's for the
// outputs it answers: a mixture of two experts whose gate is the first
// one's yaw.
func (e *Estimator) WithExpert(xp Expert) (*Estimator, error) {
	x, gate := xp.Model, xp.Gate
	if e.angle[0] < 0 {
		return nil, fmt.Errorf("pose: a profile expert needs a model that predicts yaw")
	}
	if !(gate > 0 && gate < 90) {
		return nil, fmt.Errorf("pose: profile expert gate %g°: want 0 < gate < 90", gate)
	}
	if !(xp.Weight >= 0 && xp.Weight <= 1) {
		return nil, fmt.Errorf("pose: profile expert weight %g: want 0 < w ≤ 1", xp.Weight)
	}
	if xp.ByDensity && !(math.Abs(xp.Margin) <= maxMargin) {
		return nil, fmt.Errorf("pose: profile expert density margin %g nats: want |margin| ≤ %g", xp.Margin, float64(maxMargin))
	}
	if x.InputDim() != e.model.InputDim() || len(x.Outputs) != len(e.model.Outputs) {
		return nil, fmt.Errorf("pose: profile expert reads %d features and has %d outputs, the model %d and %d", x.InputDim(), len(x.Outputs), e.model.InputDim(), len(e.model.Outputs))
	}
	for i, o := range x.Outputs {
		if o.Name != e.model.Outputs[i].Name {
			return nil, fmt.Errorf("pose: profile expert output %d is %q, the model's %q", i, o.Name, e.model.Outputs[i].Name)
		}
	}
	w := xp.Weight
	if w == 0 {
		w = 1
	}
	weights := make([]float64, len(x.Outputs))
	for i, o := range x.Outputs {
		if xp.Outputs == nil || slices.Contains(xp.Outputs, o.Name) {
			weights[i] = w
		}
	}
	for _, n := range xp.Outputs {
		if x.OutputIndex(n) < 0 {
			return nil, fmt.Errorf("pose: profile expert asked for %q, which the model does not predict", n)
		}
	}
	if err := feature.CheckRecipe(x.Features); err != nil {
		return nil, fmt.Errorf("pose: profile expert: %w", err)
	}
	f, err := gllim.NewForward(x)
	if err != nil {
		return nil, fmt.Errorf("pose: profile expert: %w", err)
	}
	if e.settings.Temperature != 0 {
		if f, err = f.WithTemperature(e.settings.Temperature); err != nil {
			return nil, err
		}
	}
	c := *e
	c.expert, c.gate, c.expertW = f, gate, weights
	c.byDensity, c.margin = xp.ByDensity, xp.Margin
	c.expertStd = make([]float64, len(x.Outputs))
	for i, o := range x.Outputs {
		c.expertStd[i] = o.Uncertainty() / e.model.Outputs[i].Uncertainty()
	}
	return &c, nil
}

// The settings a landmark expert's model file carries in its training
// record (posectl train -landmarks writes them).
const (
	// LandmarkOutputs lists the angles the expert's answer is fused into,
	// comma-separated ("": all it predicts).
	LandmarkOutputs = "landmark_outputs"
	// LandmarkRho is the correlation of the model's and the expert's
	// errors, each in units of its σ, measured on held-out persons ("":
	// 0, independent): the fused σ counts it (Worker.Fuse).
	LandmarkRho = "landmark_rho"
	// LandmarkGate is the model's |yaw| (degrees) below which the
	// expert's answer is fused ("": at any yaw): past it the network
	// places the far side's points by guess, and the geometry misleads.
	LandmarkGate = "landmark_gate"
	// LandmarkPitchGate is the model's |pitch| (degrees) below which the
	// expert's pitch is fused ("": at any pitch): the pitches it learnt
	// from, past which five points read a nod by extrapolation, short of
	// it, with a σ that does not say so (posectl -landmark-pitch-range
	// sets it at the |pitch| that holds a share of its training faces).
	LandmarkPitchGate = "landmark_pitch_gate"
)

// WithLandmarks returns a copy of e that also reads each face's angles
// from the face network's five landmarks with m, a model of the angles on
// feature.LandmarkFeatures (posectl train -landmarks), and fuses the two
// answers (Worker.Fuse).
func (e *Estimator) WithLandmarks(m *gllim.Model) (*Estimator, error) {
	if err := feature.CheckLandmarkRecipe(m.Features); err != nil {
		return nil, fmt.Errorf("pose: landmark expert: %w", err)
	}
	if m.InputDim() != feature.LandmarkDim {
		return nil, fmt.Errorf("pose: landmark expert reads %d features, the landmarks %d", m.InputDim(), feature.LandmarkDim)
	}
	var only []string
	if o := m.Training.Settings[LandmarkOutputs]; o != "" {
		only = strings.Split(o, ",")
	}
	c := *e
	if r := m.Training.Settings[LandmarkRho]; r != "" {
		var err error
		if c.lmRho, err = strconv.ParseFloat(r, 64); err != nil || !(c.lmRho > -1 && c.lmRho < 1) {
			return nil, fmt.Errorf("pose: landmark expert: %s %q: want a correlation in (−1, 1)", LandmarkRho, r)
		}
	}
	// A gate is an angle of the model's, in degrees, below which the
	// expert is fused (+Inf without one).
	gate := func(key, what string) (float64, error) {
		g := m.Training.Settings[key]
		if g == "" {
			return math.Inf(1), nil
		}
		v, err := strconv.ParseFloat(g, 64)
		if err != nil || !(v > 0 && v <= 90) {
			return 0, fmt.Errorf("pose: landmark expert: %s %q: want a %s in (0, 90] degrees", key, g, what)
		}
		return v, nil
	}
	var err error
	if c.lmGate, err = gate(LandmarkGate, "|yaw|"); err != nil {
		return nil, err
	}
	for i := range c.lmBelow {
		c.lmBelow[i] = math.Inf(1)
	}
	if c.lmBelow[1], err = gate(LandmarkPitchGate, "|pitch|"); err != nil { // AngleNames[1]
		return nil, err
	}
	any := false
	for i, n := range AngleNames {
		c.lmAngle[i] = m.OutputIndex(n)
		if c.lmAngle[i] >= 0 && (e.angle[i] < 0 || only != nil && !slices.Contains(only, n)) {
			c.lmAngle[i] = -1
		}
		any = any || c.lmAngle[i] >= 0
	}
	for _, n := range only {
		if !slices.Contains(AngleNames[:], n) || m.OutputIndex(n) < 0 {
			return nil, fmt.Errorf("pose: landmark expert: %s names %q, which it does not predict", LandmarkOutputs, n)
		}
	}
	if !any {
		return nil, fmt.Errorf("pose: landmark expert predicts none of the model's angles (outputs %v)", m.Outputs)
	}
	f, err := gllim.NewForward(m)
	if err != nil {
		return nil, fmt.Errorf("pose: landmark expert: %w", err)
	}
	c.lm = f
	return &c, nil
}

// HasLandmarks reports whether e has a landmark expert.
func (e *Estimator) HasLandmarks() bool { return e.lm != nil }

// New prepares an estimator. It fails if the model was trained on other
// features than this build computes or predicts no angle.
func New(m *gllim.Model, s Settings) (*Estimator, error) {
	if err := feature.CheckRecipe(m.Features); err != nil {
		return nil, err
	}
	if m.InputDim() != feature.Dim {
		return nil, fmt.Errorf("pose: model reads %d features, p-HOG has %d", m.InputDim(), feature.Dim)
	}
	if s.MaxIter < 1 {
		return nil, fmt.Errorf("pose: max iterations %d: want at least 1", s.MaxIter)
	}
	f, err := gllim.NewForward(m)
	if err != nil {
		return nil, err
	}
	if s.Temperature != 0 {
		if f, err = f.WithTemperature(s.Temperature); err != nil {
			return nil, err
		}
	}
	// Keep the description, not the float64 weights: the forward model
	// holds what prediction needs, and a small board should not carry both.
	e := &Estimator{model: m.Description(), fwd: f, settings: s}
	any := false
	for i, n := range AngleNames {
		e.angle[i] = m.OutputIndex(n)
		any = any || e.angle[i] >= 0
	}
	if !any {
		return nil, fmt.Errorf("pose: model predicts none of yaw, pitch, roll (outputs %v)", m.Outputs)
	}
	for i, n := range []string{DX, DY, DS} {
		e.shift[i] = m.OutputIndex(n)
	}
	if (e.shift[0] >= 0) != (e.shift[1] >= 0) {
		return nil, fmt.Errorf("pose: model predicts only one of dx, dy")
	}
	return e, nil
}

// Refines reports whether the model predicts a box shift.
func (e *Estimator) Refines() bool { return e.shift[0] >= 0 }

// HasAngle reports whether the model predicts angle i (0 yaw, 1 pitch, 2 roll).
func (e *Estimator) HasAngle(i int) bool { return e.angle[i] >= 0 }

// Result is the estimate for one face.
type Result struct {
	Box        feature.Box // the refined box
	Angles     [3]float64  // yaw, pitch, roll in degrees (0 where absent)
	Std        [3]float64  // their predictive standard deviations (calibrated where the model says how)
	Iterations int         // predictions made
	Shift      float64     // size of the last predicted move (0 without refinement)
	LogDensity float64     // log p(y) of the last features under the model
	// Landmarks: Fuse took the landmark expert's answer into the angles.
	Landmarks bool
	// First, FirstStd and FirstBox are the first prediction's angles,
	// their σ (uncalibrated) and the box it moved to, before any mirror
	// (Settings.Mirror): what Step answers from the same start (a tracker
	// compares the next frame's Step with them, track.Config.RefineEvery).
	First, FirstStd [3]float64
	FirstBox        feature.Box
	// ExpertGap is the smallest margin (nats) by which the profile
	// expert lost a density test of this estimate (Expert.ByDensity: the
	// model's log p(y) less Margin less the expert's), +Inf where none
	// ran; Step skips the test after a refinement it lost by far.
	ExpertGap float64
	// Heavy are the model's components that carried the first
	// prediction's weight (gllim.Prediction.Heavy at heavyShare) on a
	// full refinement: Step from the same start reads them alone.
	Heavy gllim.Components
}

// heavyShare is the weight, relative to its member's largest, from which a
// component of the first prediction is among Result.Heavy: the ones left
// out hold at most K·heavyShare of a member's weight (5·10⁻⁸ with K = 50),
// and on AFLW2000's faces the set holds a median of 3 of a member's 50
// components, 12 at the 90th percentile (docs/method.md §4;
// docs/measured.md, "The cost").
const heavyShare = 1e-9

// Worker holds one goroutine's buffers.
type Worker struct {
	e      *Estimator
	ex     feature.Extractor
	pr     *gllim.Predictor
	pred   gllim.Prediction
	mpred  gllim.Prediction // the mirrored face's prediction
	plain  gllim.Prediction // the model's answer before the mirror (Settings.Mirror)
	y, ym  []float32        // features, and mirrored features
	perm   []int
	negate []bool           // outputs that change sign under mirroring
	xpr    *gllim.Predictor // the profile expert's
	xpred  gllim.Prediction
	// The landmark expert's predictor, answer and features.
	lpr   *gllim.Predictor
	lpred gllim.Prediction
	ly    []float32
	// The density test's smallest gap over this estimate's predictions
	// (Result.ExpertGap).
	gap float64
	// The angles to report and their standard deviations.
	kept, keptStd [3]float64
	sum, sumStd   [3]float64 // over the iterations (Settings.Average)
}

// NewWorker returns a Worker; it is not safe for concurrent use.
func (e *Estimator) NewWorker() *Worker {
	w := &Worker{e: e, pr: e.fwd.NewPredictor(), pred: e.fwd.NewPrediction(), y: make([]float32, feature.Dim)}
	if e.settings.Mirror || e.expert != nil {
		w.mpred = e.fwd.NewPrediction()
		if e.settings.Mirror {
			w.plain = e.fwd.NewPrediction()
		}
		w.ym = make([]float32, feature.Dim)
		w.perm = feature.MirrorPermutation()
		w.negate = make([]bool, len(e.model.Outputs))
		for i, o := range e.model.Outputs {
			w.negate[i] = o.Name == Yaw || o.Name == Roll || o.Name == DX
		}
	}
	if e.expert != nil {
		w.xpr, w.xpred = e.expert.NewPredictor(), e.expert.NewPrediction()
	}
	if e.lm != nil {
		w.lpr, w.lpred, w.ly = e.lm.NewPredictor(), e.lm.NewPrediction(), make([]float32, feature.LandmarkDim)
	}
	return w
}

// Fuse folds the landmark expert's reading of a face into r, the model's
// estimate of it: box and l are the face network's box and landmarks on
// the face. Each fused angle is the mean of the two answers weighted by
// their inverse variances, w = σ²_l/(σ²_m + σ²_l) on the model's: two
// readings of different evidence, texture and geometry, where the more
// certain weighs more (docs/method.md §8). Its σ is that mean's, with
// the two errors correlated by ρ (LandmarkRho; ρ = 0 gives 1/σ² =
// 1/σ²_m + 1/σ²_l): σ² = w²σ²_m + (1−w)²σ²_l + 2w(1−w)ρσ_mσ_l. It
// reports whether it fused: not without a landmark expert, nor where the
// model's |yaw| is past the expert's gate (LandmarkGate); its pitch is
// not fused where the model's |pitch| is past LandmarkPitchGate. It
// allocates nothing.
func (w *Worker) Fuse(r *Result, box feature.Box, l *feature.Landmarks) bool {
	e := w.e
	if e.lm == nil || !(math.Abs(r.Angles[0]) < e.lmGate) {
		return false
	}
	feature.LandmarkFeatures(w.ly, box, l)
	w.lpr.Predict(&w.lpred, w.ly)
	for i, k := range e.lmAngle {
		if k < 0 || !(math.Abs(r.Angles[i]) < e.lmBelow[i]) {
			continue
		}
		m, s := w.lpred.Mean[k], w.lpred.Std(k)*e.lm.Outputs()[k].Uncertainty()
		if !(s > 0) || math.IsNaN(m) || !(r.Std[i] > 0) {
			continue
		}
		s0 := r.Std[i]
		w := s * s / (s0*s0 + s*s)
		r.Angles[i] = w*r.Angles[i] + (1-w)*m
		r.Std[i] = math.Sqrt(w*w*s0*s0 + (1-w)*(1-w)*s*s + 2*w*(1-w)*e.lmRho*s0*s)
		r.Landmarks = true
	}
	return r.Landmarks
}

// ask has the profile expert answer into w.pred as askExpert says, if
// there is one.
func (w *Worker) ask(noDensity bool) {
	if w.e.expert != nil {
		w.askExpert(noDensity)
	}
}

// copyPrediction copies src's mean, covariance and density into dst.
func copyPrediction(dst, src *gllim.Prediction) {
	copy(dst.Mean, src.Mean)
	copy(dst.Cov, src.Cov)
	dst.LogDensity = src.LogDensity
}

// average averages w.pred with the mirrored face's prediction
// (Settings.Mirror). The variances are averaged too (the two answers are
// far from independent, so this does not shrink them).
func (w *Worker) average() {
	w.mirror()
	w.pr.Predict(&w.mpred, w.ym)
	n := len(w.pred.Mean)
	for i := range w.pred.Mean {
		m := w.mpred.Mean[i]
		if w.negate[i] {
			m = -m
		}
		w.pred.Mean[i] = 0.5 * (w.pred.Mean[i] + m)
		w.pred.Cov[i*n+i] = 0.5 * (w.pred.Cov[i*n+i] + w.mpred.Cov[i*n+i])
	}
	w.pred.LogDensity = 0.5 * (w.pred.LogDensity + w.mpred.LogDensity)
}

// mirror fills w.ym with the mirrored face's features.
func (w *Worker) mirror() {
	for d, j := range w.perm {
		w.ym[d] = w.y[j]
	}
}

// askExpert replaces w.pred by the profile expert's answer where the
// model's yaw is past the gate, and below it where it explains the
// features about as well (Expert.ByDensity; not tested where noDensity).
// The expert knows faces turned one way
// (yaw > 0): a face turned the other way is mirrored for it and its answer
// mirrored back. It returns the side the expert answered for (+1, or −1
// for a mirrored face), 0 where the model answers alone.
func (w *Worker) askExpert(noDensity bool) float64 {
	e := w.e
	yaw := w.pred.Mean[e.angle[0]]
	gated := math.Abs(yaw) >= e.gate
	if !gated && (!e.byDensity || noDensity) {
		return 0
	}
	// The expert reads the face turned the way the model's yaw says.
	y := w.y
	if yaw < 0 {
		w.mirror()
		y = w.ym
	}
	w.xpr.Predict(&w.xpred, y)
	// Below the gate: does the expert explain the features better than
	// the model (log p(y), docs/method.md §4)? Asking it about the face
	// turned the other way too (twice the cost) changed no published
	// figure (docs/measured.md, "A tracked frame's cost").
	if !gated {
		gap := w.pred.LogDensity - e.margin - w.xpred.LogDensity
		w.gap = min(w.gap, gap)
		if gap > 0 {
			return 0
		}
	}
	n := len(w.pred.Mean)
	// The blend of the two answers, output by output: mean and variance of
	// the mixture (1 − a)·model + a·expert; covariances across outputs of
	// different weights are dropped (the angles' σ is what is reported).
	for i, m := range w.xpred.Mean {
		a := e.expertW[i]
		if a == 0 {
			continue
		}
		if yaw < 0 && w.negate[i] {
			m = -m
		}
		f := e.expertStd[i]
		v := w.xpred.Cov[i*n+i] * f * f
		m0, v0 := w.pred.Mean[i], w.pred.Cov[i*n+i]
		mean := (1-a)*m0 + a*m
		w.pred.Mean[i] = mean
		w.pred.Cov[i*n+i] = (1-a)*(v0+(m0-mean)*(m0-mean)) + a*(v+(m-mean)*(m-mean))
		for j := range n {
			if j == i {
				continue
			}
			if e.expertW[j] == a && a == 1 {
				c := w.xpred.Cov[i*n+j] * f * e.expertStd[j]
				if yaw < 0 && w.negate[i] != w.negate[j] {
					c = -c
				}
				w.pred.Cov[i*n+j] = c
			} else {
				w.pred.Cov[i*n+j], w.pred.Cov[j*n+i] = 0, 0
			}
		}
	}
	if e.expertW[e.angle[0]] == 1 {
		w.pred.LogDensity = w.xpred.LogDensity
	}
	return math.Copysign(1, yaw)
}

// Refines reports whether the worker's model predicts a box shift.
func (w *Worker) Refines() bool { return w.e.Refines() }

// HasAngle reports whether the worker's model predicts angle i.
func (w *Worker) HasAngle(i int) bool { return w.e.HasAngle(i) }

// Move returns b with its centre moved by (dx, dy) box sizes and both
// sides multiplied by exp(ds), where the size of a box is √(W·H) (its side
// when square): the box shift the models predict.
func Move(b feature.Box, dx, dy, ds float64) feature.Box {
	cx, cy := b.Centre()
	s := math.Sqrt(b.W * b.H)
	k := math.Exp(ds)
	w, h := b.W*k, b.H*k
	return feature.Box{X: cx + dx*s - w/2, Y: cy + dy*s - h/2, W: w, H: h}
}

// Estimate runs Algorithm 1 from box on img. It allocates nothing.
func (w *Worker) Estimate(img *image.Gray, box feature.Box) Result {
	return w.estimate(img, box, w.e.settings.MaxIter, false, w.e.settings.Mirror, nil)
}

// expertClear is the gap (nats) past the density margin by which the
// profile expert must have lost every density test of a face's last full
// refinement for Step to skip the test: a face it lost by that much (the
// median loss is 347 nats on faces at |yaw| 0–15°, 134 at 15–30°,
// docs/measured.md "A gate by density") is not won by a small move.
const expertClear = 100

// Step is Estimate's first prediction alone: the angles read at box and
// the box moved once (Result.First and FirstBox of an Estimate from
// box, without the mirror), at a third of its cost with three iterations
// (a sixth with the mirror). With last, the
// last full refinement of the same face, it skips the profile expert's
// density test where that refinement's expert lost it by expertClear
// nats or more (Result.ExpertGap): it then answers as the model alone
// would, as that refinement's first prediction did. It allocates nothing.
func (w *Worker) Step(img *image.Gray, box feature.Box, last *Result) Result {
	if last == nil {
		return w.estimate(img, box, 1, false, false, nil)
	}
	return w.estimate(img, box, 1, last.ExpertGap >= expertClear, false, &last.Heavy)
}

// estimate is Estimate with at most n predictions, without the profile
// expert's density test where noDensity, the model's answers averaged with
// the mirrored face's before the expert blends where mirror, the first
// prediction on the model's components in alone where in is not nil
// (Result.Heavy of a refinement from the same start).
func (w *Worker) estimate(img *image.Gray, box feature.Box, n int, noDensity, mirror bool, in *gllim.Components) Result {
	e := w.e
	b := box
	r := Result{FirstBox: box}
	w.sum, w.sumStd = [3]float64{}, [3]float64{}
	w.gap = math.Inf(1)
	gain := e.settings.Gain
	if gain == 0 {
		gain = 1
	}
	for it := 1; it <= n; it++ {
		w.ex.Extract(w.y, img, b)
		w.pr.PredictIn(&w.pred, w.y, in)
		in = nil // the later predictions read moved boxes: every component
		if it == 1 && n > 1 {
			r.Heavy = w.pred.Heavy(heavyShare)
		}
		r.Iterations = it
		if it == 1 {
			// What Step reads: the answer without the mirror.
			if mirror {
				copyPrediction(&w.plain, &w.pred)
			}
			w.ask(noDensity)
			w.keep()
			r.First, r.FirstStd = w.kept, w.keptStd
			if e.Refines() {
				r.FirstBox, _ = w.moved(b, gain)
			}
			if mirror {
				copyPrediction(&w.pred, &w.plain)
			}
		}
		if mirror {
			w.average()
			w.ask(noDensity)
			w.keep()
		} else if it > 1 {
			w.ask(noDensity)
			w.keep()
		}
		for i, k := range e.angle {
			if k >= 0 {
				w.sum[i] += w.pred.Mean[k]
				w.sumStd[i] += w.pred.Std(k)
			}
		}
		if !e.Refines() {
			break
		}
		// Move the box even after the last prediction: like Algorithm 1,
		// return the last pose with the box updated by the last shift.
		b, r.Shift = w.moved(b, gain)
		if r.Shift <= e.settings.Eps {
			break
		}
	}
	r.Box = b
	r.LogDensity = w.pred.LogDensity
	r.ExpertGap = w.gap
	for i, k := range e.angle {
		if k < 0 {
			continue
		}
		r.Angles[i], r.Std[i] = w.kept[i], w.keptStd[i]
		if e.settings.Average {
			n := float64(r.Iterations)
			r.Angles[i], r.Std[i] = w.sum[i]/n, w.sumStd[i]/n
		}
		r.Std[i] *= e.model.Outputs[k].Uncertainty()
	}
	return r
}

// moved returns box b moved by w.pred's shift, scaled by gain, and the
// move's size. A wild prediction (features unlike any face) must not throw
// the box off the frame: the move is clamped to one box size per step.
func (w *Worker) moved(b feature.Box, gain float64) (feature.Box, float64) {
	e := w.e
	dx, dy := w.pred.Mean[e.shift[0]], w.pred.Mean[e.shift[1]]
	ds := 0.0
	if e.shift[2] >= 0 {
		ds = w.pred.Mean[e.shift[2]]
	}
	dx, dy, ds = clamp(gain*dx, 1), clamp(gain*dy, 1), clamp(gain*ds, 0.7)
	return Move(b, dx, dy, ds), math.Sqrt(dx*dx + dy*dy + ds*ds)
}

// keep records the angles of the last prediction as the ones to report.
func (w *Worker) keep() {
	for i, k := range w.e.angle {
		if k >= 0 {
			w.kept[i], w.keptStd[i] = w.pred.Mean[k], w.pred.Std(k)
		}
	}
}

func clamp(v, lim float64) float64 { return math.Max(-lim, math.Min(lim, v)) }
