package headpose

import (
	"fmt"
	"time"

	"github.com/edgepose/posed/infer/pose"
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
	total := NewReport()
	var folds []Fold
	for n, subj := range subjects {
		start := time.Now()
		var trainIdx, testIdx []int
		for i, s := range b.Samples {
			if s.Set == o.Set && s.Subject == subj {
				testIdx = append(testIdx, i)
			} else {
				trainIdx = append(trainIdx, i)
			}
		}
		m, res, err := Train(b, trainIdx, o.Train)
		if err != nil {
			return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
		}
		eo := o.Eval
		if eo.Condition == Detected {
			eo.Calibration, _ = LearnCalibration(b, trainIdx, eo.Detector)
		}
		settings := eo.Settings
		if settings.MaxIter == 0 {
			settings = pose.DefaultSettings()
		}
		est, err := pose.New(m, settings)
		if err != nil {
			return nil, nil, fmt.Errorf("headpose: fold %s: %w", subj, err)
		}
		rep, err := Evaluate(est, b, testIdx, eo)
		if err != nil {
			return nil, nil, err
		}
		total.Merge(rep)
		f := Fold{Subject: subj, Report: rep, Iterations: res.Iterations, LogL: res.LogL, BIC: res.BIC, Elapsed: time.Since(start)}
		folds = append(folds, f)
		if o.Progress != nil {
			o.Progress(n+1, len(subjects), f)
		}
	}
	return total, folds, nil
}
