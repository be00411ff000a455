package headpose

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train"
)

// Fold is the outcome of one leave-one-person-out fold.
type Fold struct {
	Subject    string
	Report     *Report
	Iterations int
	LogL, BIC  float64
	Elapsed    time.Duration
}

// LOPOOptions configure a leave-one-person-out evaluation.
type LOPOOptions struct {
	Train Options
	Eval  EvalOptions
	Set   string // the data set whose persons are left out in turn (e.g. "pointing04")
	Folds int    // run only the first Folds folds (0: all)
	// Progress, when set, is called after each fold.
	Progress func(done, total int, f Fold)
}

// LOPO trains one model per person of Set on every other image of the bank
// (other data sets included) and tests it on that person's images. Under
// the detected condition the calibration is learnt on the training images
// of each fold.
func LOPO(b *Bank, o LOPOOptions) (*Report, []Fold, error) {
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

// Holdout keeps n persons of Set, drawn with seed, for testing and trains
// one model on every other image of the bank (other data sets included):
// e.g. 300 of AFLW2000's faces held out, the rest and Pointing'04 trained on.
func Holdout(b *Bank, o LOPOOptions, n int, seed uint64) (*Report, []Fold, error) {
	subjects := b.Subjects(o.Set)
	if n < 1 || n >= len(subjects) {
		return nil, nil, fmt.Errorf("headpose: holding out %d of the %d persons of %q", n, len(subjects), o.Set)
	}
	rng := rand.New(rand.NewPCG(seed, 0x401d))
	rng.Shuffle(len(subjects), func(i, j int) { subjects[i], subjects[j] = subjects[j], subjects[i] })
	return crossValidate(b, o, [][]string{subjects[:n]})
}

// crossValidate trains and tests one model per group of held-out persons.
func crossValidate(b *Bank, o LOPOOptions, groups [][]string) (*Report, []Fold, error) {
	total := NewReport()
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
		var trainIdx, testIdx []int
		for i, s := range b.Samples {
			if s.Set == o.Set && held[s.Subject] {
				testIdx = append(testIdx, i)
			} else {
				trainIdx = append(trainIdx, i)
			}
		}
		rep, res, err := trainAndTest(b, trainIdx, testIdx, o.Train, o.Eval)
		if err != nil {
			return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
		}
		total.Merge(rep)
		f := Fold{Subject: subj, Report: rep, Iterations: res.Iterations, LogL: res.LogL, BIC: res.BIC, Elapsed: time.Since(start)}
		folds = append(folds, f)
		if o.Progress != nil {
			o.Progress(n+1, len(groups), f)
		}
	}
	return total, folds, nil
}

// trainAndTest trains on trainIdx and evaluates on testIdx under eo; under
// the detected condition the calibration is learnt on the training images.
func trainAndTest(b *Bank, trainIdx, testIdx []int, o Options, eo EvalOptions) (*Report, *train.Result, error) {
	m, res, err := Train(b, trainIdx, o)
	if err != nil {
		return nil, nil, err
	}
	if eo.Condition == Detected {
		eo.Calibration, _ = LearnCalibration(b, trainIdx, eo.Detector)
	}
	settings := eo.Settings
	if settings.MaxIter == 0 {
		settings = pose.DefaultSettings()
	}
	est, err := pose.New(m, settings)
	if err != nil {
		return nil, nil, err
	}
	rep, err := Evaluate(est, b, testIdx, eo)
	return rep, res, err
}
