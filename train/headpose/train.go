package headpose

import (
	"fmt"
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

// Variant is what t holds (METHOD §5): the angles only ("pose": GLLiM_pose
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
	Flip    bool     // add mirrored faces (yaw, roll and dx change sign)
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
	EM      train.Config
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
	if o.Members < 0 || o.Members > 64 {
		return fmt.Errorf("headpose: %d ensemble members: want 1 to 64 (0 means 1)", o.Members)
	}
	if (o.Variant == VariantPoseBB || o.UseShifted) && b.Shifts == 0 {
		return fmt.Errorf("headpose: variant %s needs moved boxes, the bank has none", o.Variant)
	}
	return nil
}

// TrainingSet assembles t (N×Lt) and y (N×D) from the bank's images idx.
func (o Options) TrainingSet(b *Bank, idx []int) (*mat.Dense, *mat.Dense) {
	names, _ := o.Outputs()
	per := 1 + b.Shifts
	boxes := 1
	if o.Variant == VariantPoseBB || o.UseShifted {
		boxes = per
	}
	flips := 1
	if o.Flip {
		flips = 2
	}
	n := len(idx) * boxes * flips
	t := mat.NewDense(n, len(names), nil)
	y := mat.NewDense(n, feature.Dim, nil)
	perm := feature.MirrorPermutation()
	row := 0
	for _, i := range idx {
		s := b.Samples[i]
		for a := 0; a < boxes; a++ {
			sh := b.Target(i, a)
			f := b.Feat[i*per+a]
			for fl := 0; fl < flips; fl++ {
				sign := 1.0
				if fl == 1 {
					sign = -1
				}
				for j, name := range names {
					var v float64
					switch name {
					case pose.Yaw:
						v = sign * s.Yaw
					case pose.Pitch:
						v = s.Pitch
					case pose.Roll:
						v = sign * s.Roll
					case pose.DX:
						v = sign * sh.DX
					case pose.DY:
						v = sh.DY
					case pose.DS:
						v = sh.DS
					}
					t.Set(row, j, v)
				}
				dst := y.RawRowView(row)
				if fl == 0 {
					for d, v := range f {
						dst[d] = float64(v)
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
	return t, y
}

// Train fits a model on the bank's images idx.
func Train(b *Bank, idx []int, o Options) (*gllim.Model, *train.Result, error) {
	if err := o.Validate(b); err != nil {
		return nil, nil, err
	}
	t, y := o.TrainingSet(b, idx)
	res, err := train.Fit(t, y, o.EM)
	if err != nil {
		return nil, nil, err
	}
	names, units := o.Outputs()
	m := res.Model(names, units)
	for i := 1; i < o.Members; i++ {
		cfg := o.EM
		cfg.Seed += uint64(i)
		r, err := train.Fit(t, y, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("headpose: ensemble member %d: %w", i+1, err)
		}
		m.Members = append(m.Members, r.Params)
	}
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
	m.Training.Tool = "posectl train"
	m.Training.Data = data
	m.Training.Date = time.Now().UTC().Format(time.RFC3339)
	m.Training.Settings = o.Settings(b)
	return m, res, nil
}

// Settings records o as text, for the model file.
func (o Options) Settings(b *Bank) map[string]string {
	c := o.EM
	return map[string]string{
		"variant": string(o.Variant), "name": o.Name(), "angles": strings.Join(o.Angles, ","),
		"k": strconv.Itoa(c.K), "lw": strconv.Itoa(c.Lw), "covariance": string(c.Cov), "shared": strconv.FormatBool(c.Shared),
		"flip": strconv.FormatBool(o.Flip), "box": string(b.Box), "shifts": strconv.Itoa(b.Shifts), "use_shifted": strconv.FormatBool(o.UseShifted),
		"scale": strconv.FormatBool(o.Scale), "starts": strconv.Itoa(c.Starts), "seed": strconv.FormatUint(c.Seed, 10),
		"max_iter": strconv.Itoa(c.MaxIter), "tol": strconv.FormatFloat(c.Tol, 'g', -1, 64),
		"init_pcs": strconv.Itoa(c.InitPCs), "zero_roll": strconv.FormatBool(o.ZeroRoll), "gamma_floor": strconv.FormatFloat(c.GammaFloor, 'g', -1, 64),
		"var_floor": strconv.FormatFloat(c.VarFloor, 'g', -1, 64), "members": strconv.Itoa(max(o.Members, 1)),
	}
}
