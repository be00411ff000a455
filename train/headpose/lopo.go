package headpose

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train"
	"github.com/edgepose/posed/train/dataset"
)

// Fold is the outcome of one fold: one model trained without some persons
// and tested on them.
type Fold struct {
	Subject     string
	Reports     []*Report // one per evaluation case
	Temperature float64   // learnt on the fold's held-out persons (LOPOOptions.Temperatures)
	// StdScales multiply the fold's predictive σ (by output name), learnt
	// with the temperature: the σ its tests, and the daemon's σ gates
	// there, see.
	StdScales  map[string]float64
	Iterations int
	LogL, BIC  float64
	Elapsed    time.Duration
}

// LOPOOptions configure a cross-validation: leave one person out, k-fold
// or hold-out. Each fold trains one model and measures it under every
// evaluation case (conditions, refinement settings).
type LOPOOptions struct {
	Train Options
	Evals []EvalOptions
	Set   string // the data set whose persons are left out in turn (e.g. "pointing04")
	Folds int    // run only the first Folds folds (0: all)
	// Models, if set, is a folder where each fold's trained model is kept,
	// keyed by the training settings and images, so that measuring other
	// test-time settings (iterations, temperature) does not train again.
	Models string
	// Temperatures, if set, makes each fold choose its models' temperature
	// as posectl train does: among these, the most accurate on 20 % of the
	// fold's training persons held out of a second training. Evaluation
	// cases without a temperature of their own use it.
	Temperatures []float64
	// Expert, if set, trains a profile expert beside each fold's model and
	// measures the two together (pose.Estimator.WithExpert).
	Expert *Expert
	// Landmarks, if set, trains a landmark expert beside each fold's
	// model and measures them together (pose.Estimator.WithLandmarks),
	// where a case does not say NoLandmarks.
	Landmarks *LandmarkOptions
	// Encoding, if set, writes each fold's model and expert in this file
	// encoding and reads them back before they are measured, as the
	// daemon would load a file written so.
	Encoding gllim.Encoding
	// Progress, when set, is called after each fold.
	Progress func(done, total int, f Fold)
}

// Expert is a profile expert trained beside a model: Train.Profile > 0.
type Expert struct {
	Train Options
	Use   pose.Expert // how the estimator uses it (its Model is set per fold)
}

// LOPO trains one model per person of Set on every other image of the bank
// (other data sets included) and tests it on that person's images. Under
// the detected condition the calibration is learnt on the training images
// of each fold. It returns one report per evaluation case.
func LOPO(b *Bank, o LOPOOptions) ([]*Report, []Fold, error) {
	subjects := b.Subjects(o.Set)
	if len(subjects) < 2 {
		return nil, nil, fmt.Errorf("headpose: %d persons in %q: leave-one-person-out needs at least 2", len(subjects), o.Set)
	}
	if o.Folds > 0 && o.Folds < len(subjects) {
		subjects = subjects[:o.Folds]
	}
	groups := make([][]string, len(subjects))
	for i, s := range subjects {
		groups[i] = []string{s}
	}
	return crossValidate(b, o, groups)
}

// KFold splits the persons of Set into k groups of near-equal size (drawn
// with seed) and trains one model per group on every other image of the
// bank, other data sets included: e.g. AFLW2000 in 5 folds with
// Pointing'04 always in training. Every person of Set is tested once.
func KFold(b *Bank, o LOPOOptions, k int, seed uint64) ([]*Report, []Fold, error) {
	subjects := b.Subjects(o.Set)
	if k < 2 || k > len(subjects) {
		return nil, nil, fmt.Errorf("headpose: %d folds of the %d persons of %q: want 2 to %d", k, len(subjects), o.Set, len(subjects))
	}
	groups := kfoldGroups(subjects, k, seed)
	if o.Folds > 0 && o.Folds < k {
		groups = groups[:o.Folds]
	}
	return crossValidate(b, o, groups)
}

// kfoldGroups shuffles subjects with seed and deals them into k groups.
func kfoldGroups(subjects []string, k int, seed uint64) [][]string {
	subjects = slices.Clone(subjects)
	rng := rand.New(rand.NewPCG(seed, 0xf01d))
	rng.Shuffle(len(subjects), func(i, j int) { subjects[i], subjects[j] = subjects[j], subjects[i] })
	groups := make([][]string, k)
	for i, s := range subjects {
		groups[i%k] = append(groups[i%k], s)
	}
	return groups
}

// Holdout keeps n persons of Set, drawn with seed, for testing and trains
// one model on every other image of the bank (other data sets included):
// e.g. 300 of AFLW2000's faces held out, the rest and Pointing'04 trained on.
func Holdout(b *Bank, o LOPOOptions, n int, seed uint64) ([]*Report, []Fold, error) {
	subjects := b.Subjects(o.Set)
	if n < 1 || n >= len(subjects) {
		return nil, nil, fmt.Errorf("headpose: holding out %d of the %d persons of %q", n, len(subjects), o.Set)
	}
	rng := rand.New(rand.NewPCG(seed, 0x401d))
	rng.Shuffle(len(subjects), func(i, j int) { subjects[i], subjects[j] = subjects[j], subjects[i] })
	return crossValidate(b, o, [][]string{subjects[:n]})
}

// crossValidate trains and tests one model per group of held-out persons.
func crossValidate(b *Bank, o LOPOOptions, groups [][]string) ([]*Report, []Fold, error) {
	if len(o.Evals) == 0 {
		return nil, nil, fmt.Errorf("headpose: nothing to evaluate")
	}
	totals := make([]*Report, len(o.Evals))
	for i := range totals {
		totals[i] = NewReport()
	}
	var folds []Fold
	for n, group := range groups {
		start := time.Now()
		held := map[string]bool{}
		for _, s := range group {
			held[s] = true
		}
		subj := strings.Join(group, ",")
		if len(group) > 3 {
			subj = fmt.Sprintf("%d persons", len(group))
		} else {
			subj = "person " + subj
		}
		trainIdx, testIdx := foldSplit(b.Samples, o.Set, held)
		evals, temp := o.Evals, 0.0
		var scales map[string]float64
		if len(o.Temperatures) > 0 {
			// The shipped recipe's calibration (posectl train
			// -calibrate-std): the temperature and the σ scales measured
			// on persons held out of the fold's training. The σ scales
			// matter beyond the σ: the daemon's start check and its other
			// σ gates compare the calibrated σ.
			var err error
			if temp, scales, _, err = LearnHeldOut(b, trainIdx, o.Train, HeldOutCondition(o.Train), 0.2, o.Train.EM.Seed, o.Temperatures, o.Models); err != nil {
				return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
			}
			evals = slices.Clone(o.Evals)
			for i := range evals {
				if evals[i].Settings.Temperature == 0 {
					evals[i].defaults()
					evals[i].Settings.Temperature = temp
				}
			}
		}
		var lm *gllim.Model
		if o.Landmarks != nil {
			var err error
			if lm, err = TrainLandmarks(b, trainIdx, *o.Landmarks); err != nil {
				return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
			}
		}
		reps, res, err := cachedTrainAndTest(b, trainIdx, testIdx, o.Train, o.Expert, lm, evals, o.Models, o.Encoding, scales)
		if err != nil {
			return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
		}
		for i, r := range reps {
			if o.Evals[i].Settings.Temperature == 0 && temp != 0 {
				r.Case = o.Evals[i].Name() + ", T learnt"
			}
		}
		name := fmt.Sprintf("%d", n+1)
		for i, r := range reps {
			for j := range r.Faces {
				r.Faces[j].Fold = name
			}
			totals[i].Merge(r)
		}
		f := Fold{Subject: subj, Reports: reps, Temperature: temp, StdScales: scales, Elapsed: time.Since(start)}
		if res != nil {
			f.Iterations, f.LogL, f.BIC = res.Iterations, res.LogL, res.BIC
		}
		folds = append(folds, f)
		if o.Progress != nil {
			o.Progress(n+1, len(groups), f)
		}
	}
	return totals, folds, nil
}

// foldSplit returns the faces a fold trains on and those it tests: the held-out
// persons of set are tested; every other face is trained on, except the
// pictures made from a held-out person's (dataset.Sample.MadeFrom), which
// are neither: a turned view of a tested face would let the fold see it.
func foldSplit(samples []dataset.Sample, set string, held map[string]bool) (train, test []int) {
	for i, s := range samples {
		switch {
		case s.Set == set && held[s.Subject]:
			test = append(test, i)
		case s.MadeFrom == set && held[s.Subject]:
		default:
			train = append(train, i)
		}
	}
	return train, test
}

// HeldOutCondition is where a model's temperature and σ are measured: on
// moved and refined boxes for models that refine, on the face boxes
// otherwise.
func HeldOutCondition(o Options) EvalOptions {
	if o.Variant == VariantPoseBB {
		return EvalOptions{Condition: Shifted, Seed: 11}
	}
	return EvalOptions{Condition: Annotated, Seed: 11}
}

// modelCacheVersion changes whenever training changes what it makes from
// the same settings and images, so that kept models are not reused.
const modelCacheVersion = 1

// cachedTrainAndTest is trainAndTest with the fold's model read from, or
// kept in, the folder models ("" keeps nothing). A model read back has no
// training result (nil).
func cachedTrainAndTest(b *Bank, trainIdx, testIdx []int, o Options, x *Expert, lm *gllim.Model, evals []EvalOptions, models string, enc gllim.Encoding, scales map[string]float64) ([]*Report, *train.Result, error) {
	if models == "" {
		return trainAndTest(b, trainIdx, testIdx, o, x, lm, evals, enc, scales)
	}
	m, first, err := cachedEnsemble(b, trainIdx, o, models)
	if err != nil {
		return nil, nil, err
	}
	var xm *gllim.Model
	if x != nil {
		if xm, _, err = cachedEnsemble(b, trainIdx, x.Train, models); err != nil {
			return nil, nil, fmt.Errorf("profile expert: %w", err)
		}
	}
	reps, err := testEncoded(b, scaled(m, scales), scaled(xm, scales), x, lm, trainIdx, testIdx, evals, enc)
	return reps, first, err
}

// scaled returns m with its outputs' σ scaled by scales (by output name;
// nil: m as it is), as posectl train -calibrate-std writes the model and
// its expert. m itself, which a cache may share, is not changed.
func scaled(m *gllim.Model, scales map[string]float64) *gllim.Model {
	if m == nil || len(scales) == 0 {
		return m
	}
	c := *m
	c.Outputs = slices.Clone(m.Outputs)
	SetStdScales(&c, scales)
	return &c
}

// cachedEnsemble returns the model (an ensemble if o.Members > 1) that o
// trains on trainIdx, each member read from, or kept in, the folder models.
func cachedEnsemble(b *Bank, trainIdx []int, o Options, models string) (*gllim.Model, *train.Result, error) {
	// An ensemble's members are the single models of consecutive seeds
	// (train.FitEnsemble): keep each alone, so that ensembles of other
	// sizes share them.
	var m *gllim.Model
	var first *train.Result
	for i := range max(o.Members, 1) {
		one := o
		one.Members = 1
		one.EM.Seed = o.EM.Seed + uint64(i)
		mi, res, err := cachedModel(b, trainIdx, one, models)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			m, first = mi, res
			continue
		}
		if !slices.Equal(mi.Outputs, m.Outputs) {
			return nil, nil, fmt.Errorf("headpose: ensemble member %d was trained on other outputs", i+1)
		}
		m.Members = append(m.Members, mi.Params)
	}
	if o.Members > 1 {
		o.record(&m.Training, b)
	}
	return m, first, nil
}

// modelKey names the model o trains on trainIdx: the recipe, the
// settings and each training picture (its absolute path, so that -data
// given relative or absolute finds the same models) with its box and
// its labels.
func modelKey(b *Bank, trainIdx []int, o Options) string {
	h := sha256.New()
	settings := o.Settings(b)
	keys := slices.Sorted(maps.Keys(settings))
	fmt.Fprintf(h, "v%d %+v\n", modelCacheVersion, feature.Recipe())
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, settings[k])
	}
	for _, i := range o.trainable(b, trainIdx) { // what it learns from: folds that differ in other sets share it
		s := b.Samples[i]
		p, err := filepath.Abs(s.Path)
		if err != nil {
			p = s.Path
		}
		fmt.Fprintf(h, "%s %v %v %v %v %v %v %v\n", p, b.FaceBox(i), s.Yaw, s.Pitch, s.Roll, s.HasYaw, s.HasPitch, s.HasRoll)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// cachedModel returns the model o trains on trainIdx, read from the folder
// models if it was kept there, else trained and kept; res is nil for a
// model read back.
func cachedModel(b *Bank, trainIdx []int, o Options, models string) (*gllim.Model, *train.Result, error) {
	path := filepath.Join(models, "fold-"+modelKey(b, trainIdx, o)+".gllim")
	if m, err := gllim.ReadFile(path); err == nil {
		return m, nil, nil
	}
	m, res, err := Train(b, trainIdx, o)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(models, 0o755); err != nil {
		return nil, nil, err
	}
	if err := gllim.WriteFile(path, m); err != nil {
		return nil, nil, err
	}
	return m, res, nil
}

// trainAndTest trains on trainIdx and evaluates on testIdx under each of
// evals; under the detected condition the calibration is learnt on the
// training images.
func trainAndTest(b *Bank, trainIdx, testIdx []int, o Options, x *Expert, lm *gllim.Model, evals []EvalOptions, enc gllim.Encoding, scales map[string]float64) ([]*Report, *train.Result, error) {
	m, res, err := Train(b, trainIdx, o)
	if err != nil {
		return nil, nil, err
	}
	var xm *gllim.Model
	if x != nil {
		if xm, _, err = Train(b, trainIdx, x.Train); err != nil {
			return nil, nil, fmt.Errorf("profile expert: %w", err)
		}
	}
	reps, err := testEncoded(b, scaled(m, scales), scaled(xm, scales), x, lm, trainIdx, testIdx, evals, enc)
	return reps, res, err
}

// testEncoded is testModel with m and xm first written in encoding enc
// and read back (enc "": as they are).
func testEncoded(b *Bank, m, xm *gllim.Model, x *Expert, lm *gllim.Model, trainIdx, testIdx []int, evals []EvalOptions, enc gllim.Encoding) ([]*Report, error) {
	if enc != "" {
		var err error
		if m, err = roundTrip(m, enc); err != nil {
			return nil, err
		}
		if xm != nil {
			if xm, err = roundTrip(xm, enc); err != nil {
				return nil, fmt.Errorf("profile expert: %w", err)
			}
		}
	}
	return testModel(b, m, xm, x, lm, trainIdx, testIdx, evals)
}

// roundTrip returns m as a file written in encoding enc reads back.
func roundTrip(m *gllim.Model, enc gllim.Encoding) (*gllim.Model, error) {
	data, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: enc})
	if err != nil {
		return nil, err
	}
	back, err := gllim.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("headpose: reading the %s encoding back: %w", enc, err)
	}
	return back, nil
}

// testModel evaluates m (with the profile expert xm if x is set) on testIdx
// under each of evals; under the detected condition the calibration is
// learnt on the training images.
func testModel(b *Bank, m, xm *gllim.Model, x *Expert, lm *gllim.Model, trainIdx, testIdx []int, evals []EvalOptions) ([]*Report, error) {
	var reps []*Report
	for _, eo := range evals {
		if eo.Condition == Detected || eo.Condition == Published || eo.Condition == Turning {
			eo.Calibration = b.Calibration(trainIdx, eo.Detector)
		}
		settings := eo.Settings
		if settings.MaxIter == 0 {
			settings = pose.DefaultSettings()
		}
		est, err := pose.New(m, settings)
		if err != nil {
			return nil, err
		}
		if x != nil && !eo.NoExpert {
			xp := x.Use
			xp.Model = xm
			if est, err = est.WithExpert(xp); err != nil {
				return nil, err
			}
		}
		if lm != nil && !eo.NoLandmarks {
			if est, err = est.WithLandmarks(lm); err != nil {
				return nil, err
			}
		}
		rep, err := Evaluate(est, b, testIdx, eo)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
	}
	return reps, nil
}
