package headpose

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train"
)

// Variant is what t holds (docs/method.md §5): the angles only ("pose": GLLiM_pose
// with Lw = 0, hGLLiM_pose-d with Lw = d) or the angles and the box shift
// ("pose-bb": GLLiM_pose&bb, hGLLiM_pose&bb-d).
type Variant string

const (
	VariantPose   Variant = "pose"
	VariantPoseBB Variant = "pose-bb"
)

// Options of a training run.
type Options struct {
	Variant Variant
	Angles  []string // a subset of yaw, pitch, roll, in that order
	Scale   bool     // pose-bb: predict the scale correction ds too (beyond the paper)
	// Flip adds the mirrored faces of these data sets ("all": every set):
	// yaw, roll and dx change sign. Per set, because mirroring only helps
	// where the lighting has no side (AFLW2000's, not Pointing'04's).
	Flip []string
	// UseShifted trains on the bank's moved boxes as well as the face boxes.
	// pose-bb always does (it must see moves to learn them back); for pose
	// it is off in the paper's protocol.
	UseShifted bool
	// ZeroRoll labels faces without a roll (Pointing'04: upright heads by
	// the capture protocol) with roll 0, so they can train a model that
	// predicts roll alongside data sets that label it.
	ZeroRoll bool
	// Members > 1 fits that many models from seeds EM.Seed, EM.Seed+1, …
	// and ships them as one ensemble, whose prediction is their average:
	// EM's local optima differ from seed to seed, and averaging them
	// removes much of that variance.
	Members int
	// Profile > 0 trains a profile expert (pose.Estimator.WithExpert): only
	// faces with |yaw| ≥ Profile degrees, each mirrored where its yaw is
	// negative so that every row turns the same way (yaw ≥ Profile). The
	// model then spends all its components on turned heads of one side and
	// sees each of them from both sides' faces.
	Profile float64
	// Repeat weighs a data set's rows: each of its faces' rows appears
	// that many times (EM then counts them that much; 0 or absent: once).
	Repeat map[string]int
	// Sets, if any, are the data sets the model learns from, and whose
	// persons calibrate its σ and temperature (LearnHeldOut); the bank's
	// others are tested on only. A set whose labels are looser than the
	// rest's (Pointing'04's are the directions its persons were asked to
	// face, which their heads follow loosely) can so be left to the
	// profile expert, whose turned heads it has most of.
	Sets []string
	// MaxPitch, by data set, keeps the model to that set's faces whose
	// |pitch| label is at most this (degrees): Pointing'04's ±60° and ±90°
	// marks ask more of the head than it gives, the eyes doing the rest.
	// The held-out calibration keeps to the same faces.
	MaxPitch map[string]float64
	// PCA > 0 fits the mixture to the training features projected on
	// their PCA principal directions (train.PrincipalProjection), and the
	// model reads every face through that projection (gllim.Projection);
	// a profile expert fits its own on its own rows. 0: the features as
	// they are.
	PCA int
	EM  train.Config
}

// setValues writes a per-set setting as the flags take it: set=value,…
// by set name.
func setValues[V any](m map[string]V, format func(V) string) string {
	var r []string
	for _, set := range slices.Sorted(maps.Keys(m)) {
		r = append(r, set+"="+format(m[set]))
	}
	return strings.Join(r, ",")
}

// trainable returns the images of idx the model learns from (Sets,
// MaxPitch).
func (o Options) trainable(b *Bank, idx []int) []int {
	if len(o.Sets) == 0 && len(o.MaxPitch) == 0 {
		return idx
	}
	var out []int
	for _, i := range idx {
		s := &b.Samples[i]
		if len(o.Sets) > 0 && !slices.Contains(o.Sets, s.Set) {
			continue
		}
		if m, ok := o.MaxPitch[s.Set]; ok && s.HasPitch && math.Abs(s.Pitch) > m {
			continue
		}
		out = append(out, i)
	}
	return out
}

// Name is the paper's name of the variant, e.g. hGLLiM_pose&bb-4.
func (o Options) Name() string {
	n := "GLLiM_pose"
	if o.EM.Lw > 0 {
		n = "hGLLiM_pose"
	}
	if o.Variant == VariantPoseBB {
		n += "&bb"
	}
	if o.EM.Lw > 0 {
		n += "-" + strconv.Itoa(o.EM.Lw)
	}
	return n
}

// Outputs returns the names and units of t for o.
func (o Options) Outputs() (names, units []string) {
	for _, a := range pose.AngleNames {
		if slices.Contains(o.Angles, a) {
			names, units = append(names, a), append(units, "deg")
		}
	}
	if o.Variant == VariantPoseBB {
		names, units = append(names, pose.DX, pose.DY), append(units, "box", "box")
		if o.Scale {
			names, units = append(names, pose.DS), append(units, "log")
		}
	}
	return names, units
}

// Validate checks the options against the bank's samples.
func (o Options) Validate(b *Bank) error {
	switch o.Variant {
	case VariantPose, VariantPoseBB:
	default:
		return fmt.Errorf("headpose: variant %q is not %q or %q", o.Variant, VariantPose, VariantPoseBB)
	}
	if len(o.Angles) == 0 {
		return fmt.Errorf("headpose: no angle to predict")
	}
	for _, a := range o.Angles {
		if !slices.Contains(pose.AngleNames[:], a) {
			return fmt.Errorf("headpose: angle %q is not yaw, pitch or roll", a)
		}
		for _, s := range b.Samples {
			if _, ok := s.Angle(a); !ok && !(a == pose.Roll && o.ZeroRoll) {
				return fmt.Errorf("headpose: %s has no %s label (%s): leave %s out", s.Set, a, s.Path, a)
			}
		}
	}
	if o.Profile < 0 || o.Profile >= 90 {
		return fmt.Errorf("headpose: profile expert from |yaw| ≥ %g°: want 0 (none) to below 90", o.Profile)
	}
	if o.Members < 0 || o.Members > 64 {
		return fmt.Errorf("headpose: %d ensemble members: want 1 to 64 (0 means 1)", o.Members)
	}
	if o.PCA < 0 || o.PCA > feature.Dim {
		return fmt.Errorf("headpose: %d principal directions of the %d p-HOG values: want 0 (none) to %d", o.PCA, feature.Dim, feature.Dim)
	}
	for _, s := range o.Flip {
		if s != "all" && !b.holds(s) {
			return fmt.Errorf("headpose: mirroring data set %q, which the bank does not hold", s)
		}
	}
	for s := range o.MaxPitch {
		if !b.holds(s) {
			return fmt.Errorf("headpose: bounding the pitch of data set %q, which the bank does not hold", s)
		}
	}
	for _, s := range o.Sets {
		if !b.holds(s) {
			return fmt.Errorf("headpose: learning from data set %q, which the bank does not hold", s)
		}
	}
	for s, n := range o.Repeat {
		if n < 1 {
			return fmt.Errorf("headpose: repeating data set %q %d times: want 1 or more", s, n)
		}
		if !b.holds(s) {
			return fmt.Errorf("headpose: repeating data set %q, which the bank does not hold", s)
		}
	}
	if (o.Variant == VariantPoseBB || o.UseShifted) && b.Shifts == 0 {
		return fmt.Errorf("headpose: variant %s needs moved boxes, the bank has none", o.Variant)
	}
	return nil
}

// flips reports whether the faces of data set set are mirrored too.
func (o Options) flips(set string) bool {
	return slices.Contains(o.Flip, "all") || slices.Contains(o.Flip, set)
}

// TrainingSet assembles t (N×Lt) and y (N×D) from every view of the bank's
// images idx (augmented views included), each at its face box and, for
// pose-bb or UseShifted, at its moved boxes, and mirrored where o.Flip says.
// A profile expert (o.Profile > 0) keeps the turned faces only, each in the
// copy (as it is or mirrored) whose yaw is ≥ o.Profile.
func (o Options) TrainingSet(b *Bank, idx []int) (*mat.Dense, *mat.Dense) {
	names, _ := o.Outputs()
	boxes := 1
	if o.Variant == VariantPoseBB || o.UseShifted {
		boxes = 1 + b.Shifts
	}
	flips := func(i int) int {
		if o.Profile > 0 || o.flips(b.Samples[i].Set) {
			return 2
		}
		return 1
	}
	// keep says whether the copy of view v mirrored (fl = 1) or not is a row.
	keep := func(v *View, fl int) bool {
		if o.Profile == 0 {
			return !v.ExpertOnly
		}
		mirrored, ok := expertCopy(v.Yaw, o.Profile)
		return ok && mirrored == (fl == 1)
	}
	reps := func(i int) int { return max(o.Repeat[b.Samples[i].Set], 1) }
	n := 0
	for _, i := range idx {
		for _, k := range b.ViewsOf[i] {
			for fl := range flips(i) {
				if keep(&b.Views[k], fl) {
					n += boxes * reps(i)
				}
			}
		}
	}
	if n == 0 {
		return nil, nil
	}
	t := mat.NewDense(n, len(names), nil)
	y := mat.NewDense(n, feature.Dim, nil)
	perm := feature.MirrorPermutation()
	row := 0
	for _, i := range idx {
		first := row
		for _, k := range b.ViewsOf[i] {
			v := &b.Views[k]
			for a := 0; a < boxes; a++ {
				sh := v.Target(a)
				f := v.Feat[a]
				for fl := range flips(i) {
					if !keep(v, fl) {
						continue
					}
					mirrored := fl == 1
					for j, name := range names {
						t.Set(row, j, output(name, v, sh, mirrored))
					}
					dst := y.RawRowView(row)
					if fl == 0 {
						for d, x := range f {
							dst[d] = float64(x)
						}
					} else {
						for d := range dst {
							dst[d] = float64(f[perm[d]])
						}
					}
					row++
				}
			}
		}
		// A repeated face's rows again, as many times as its set is weighed.
		last := row
		for range reps(i) - 1 {
			for r := first; r < last; r++ {
				copy(t.RawRowView(row), t.RawRowView(r))
				copy(y.RawRowView(row), y.RawRowView(r))
				row++
			}
		}
	}
	return t, y
}

// expertCopy says whether a face of yaw (degrees) is one a profile expert
// of faces turned |yaw| ≥ profile answers, and in which copy it sees it:
// mirrored where its yaw is negative, so that every face it sees turns the
// same way (yaw ≥ profile). The daemon asks the expert the same way
// (pose.Estimator.WithExpert); training and EncodingError both choose by it.
func expertCopy(yaw, profile float64) (mirrored, ok bool) {
	return yaw < 0, math.Abs(yaw) >= profile
}

// output is the value of output name for view v at box move sh, for the
// mirrored face if mirrored: yaw, roll and dx change sign.
func output(name string, v *View, sh Shift, mirrored bool) float64 {
	sign := 1.0
	if mirrored {
		sign = -1
	}
	switch name {
	case pose.Yaw:
		return sign * v.Yaw
	case pose.Pitch:
		return v.Pitch
	case pose.Roll:
		return sign * v.Roll // 0 where unlabelled: ZeroRoll
	case pose.DX:
		return sign * sh.DX
	case pose.DY:
		return sh.DY
	case pose.DS:
		return sh.DS
	}
	return 0
}

// Train fits a model on the bank's images idx.
func Train(b *Bank, idx []int, o Options) (*gllim.Model, *train.Result, error) {
	if err := o.Validate(b); err != nil {
		return nil, nil, err
	}
	idx = o.trainable(b, idx)
	t, y := o.TrainingSet(b, idx)
	if t == nil && o.Profile > 0 {
		return nil, nil, fmt.Errorf("headpose: no training face has |yaw| ≥ %g° (the profile expert's range)", o.Profile)
	}
	if t == nil {
		return nil, nil, fmt.Errorf("headpose: no training face")
	}
	var input *gllim.Projection
	if o.PCA > 0 {
		var err error
		if input, err = train.PrincipalProjection(y, o.PCA); err != nil {
			return nil, nil, fmt.Errorf("headpose: %w", err)
		}
		y = train.ProjectRows(y, input)
	}
	rs, err := train.FitEnsemble(t, y, o.EM, max(o.Members, 1))
	if err != nil {
		return nil, nil, err
	}
	res := rs[0]
	names, units := o.Outputs()
	m := res.Model(names, units)
	for _, r := range rs[1:] {
		m.Members = append(m.Members, r.Params)
	}
	m.Input = input
	m.Features = feature.Recipe()
	sets := map[string]bool{}
	for _, i := range idx {
		sets[b.Samples[i].Set] = true
	}
	var data []string
	for s := range sets {
		data = append(data, s)
	}
	slices.Sort(data)
	if b.Box == CanonicalBox {
		n := 0
		for _, set := range ConventionSets(b.Conventions) {
			c := b.Conventions[set]
			m.Conventions = append(m.Conventions, gllim.BoxConvention{
				Set: set, DX: c.Move.DX, DY: c.Move.DY, Scale: math.Exp(c.Move.DS), N: c.N, Faces: c.Faces})
			n += c.N
		}
		// Canonical boxes are the detector's: it needs no calibration.
		m.Calibration = &gllim.BoxCalibration{Detector: "pigo-facefinder", Scale: 1, N: n}
	}
	m.Training.Tool = "posectl train"
	m.Training.Data = data
	m.Training.Date = time.Now().UTC().Format(time.RFC3339)
	o.record(&m.Training, b)
	return m, res, nil
}

// Settings records o and the bank's boxes as text, for the model file.
// record writes the recipe into a model's training record: its name, box
// kind and seed as typed fields, every option in the settings.
func (o Options) record(t *gllim.Training, b *Bank) {
	t.Name, t.Box, t.Seed = o.Name(), string(b.Box), o.EM.Seed
	t.Settings = o.Settings(b)
}

func (o Options) Settings(b *Bank) map[string]string {
	c := o.EM
	bo := b.Options
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	s := map[string]string{
		"variant": string(o.Variant), "name": o.Name(), "angles": strings.Join(o.Angles, ","),
		"k": strconv.Itoa(c.K), "lw": strconv.Itoa(c.Lw), "covariance": string(c.Cov), "shared": strconv.FormatBool(c.Shared),
		"flip": strings.Join(o.Flip, ","), "box": string(b.Box), "shifts": strconv.Itoa(b.Shifts), "use_shifted": strconv.FormatBool(o.UseShifted),
		"scale": strconv.FormatBool(o.Scale), "starts": strconv.Itoa(c.Starts), "seed": strconv.FormatUint(c.Seed, 10),
		"max_iter": strconv.Itoa(c.MaxIter), "tol": f(c.Tol),
		"init_pcs": strconv.Itoa(c.InitPCs), "zero_roll": strconv.FormatBool(o.ZeroRoll), "gamma_floor": f(c.GammaFloor),
		"var_floor": f(c.VarFloor), "members": strconv.Itoa(max(o.Members, 1)),
		"yaw_boxes": strconv.FormatBool(bo.YawBoxes), "moves": string(bo.Moves), "augment": joinAugmentations(bo.Augment), "augment_sets": strings.Join(bo.AugmentSets, ","),
	}
	if o.Profile > 0 {
		s["profile"] = f(o.Profile)
		if len(bo.ExpertAugment) > 0 {
			s["expert_augment"], s["expert_augment_sets"] = joinAugmentations(bo.ExpertAugment), strings.Join(bo.ExpertAugmentSets, ",")
		}
	}
	if len(o.Sets) > 0 {
		s["sets"] = strings.Join(o.Sets, ",")
	}
	if len(o.MaxPitch) > 0 {
		s["max_pitch"] = setValues(o.MaxPitch, f)
	}
	if o.PCA > 0 {
		s["pca"] = strconv.Itoa(o.PCA)
	}
	if len(o.Repeat) > 0 {
		s["repeat"] = setValues(o.Repeat, strconv.Itoa)
	}
	if bo.Moves == DetectorMoves {
		s["move_scale"] = f(bo.MoveScale)
	} else {
		s["centre_sigma"], s["scale_sigma"] = f(bo.CentreSigma), f(bo.ScaleSigma)
	}
	return s
}

// joinAugmentations writes augmentations as -augment takes them.
func joinAugmentations(augs []Augmentation) string {
	out := make([]string, len(augs))
	for i, a := range augs {
		out[i] = a.String()
	}
	return strings.Join(out, ",")
}
