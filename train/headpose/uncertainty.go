package headpose

import (
	"fmt"

	"github.com/edgepose/posed/infer/gllim"
)

// learnStdScales measures how overconfident the predictive standard
// deviations of a model trained with o on the images idx are. It holds out
// a fraction frac of the persons in idx (of every data set, drawn with
// seed), trains on the others, estimates the held-out faces under eo and
// returns, per angle, the ratio of the RMS error to the RMS predicted
// standard deviation (Report.StdRatio), with that evaluation's report.
//
// The ratio is a single factor per angle: it makes the reported σ honest
// on average, not per face. The mixture's posterior is nearly one-hot in
// 1888 dimensions, so the raw σ is mostly one component's noise and is
// several times smaller than the error on persons never seen.
func learnStdScales(b *Bank, idx []int, o Options, eo EvalOptions, frac float64, seed uint64) (map[string]float64, *Report, error) {
	_, scales, rep, err := LearnHeldOut(b, idx, o, eo, frac, seed, nil, "")
	return scales, rep, err
}

// LearnHeldOut is LearnStdScales that also chooses the temperature of the
// mixture weights (gllim.Model.Temperature) among temps: the one with the
// lowest mean MAE over the angles on the held-out persons, at which the
// σ ratios are then measured. With no temps it measures at the model's
// own weights and returns 0. models, if set, keeps the held-out split's
// model as LOPOOptions.Models does.
func LearnHeldOut(b *Bank, idx []int, o Options, eo EvalOptions, frac float64, seed uint64, temps []float64, models string) (float64, map[string]float64, *Report, error) {
	if !(frac > 0 && frac < 1) {
		return 0, nil, nil, fmt.Errorf("headpose: held-out fraction %g not in (0, 1)", frac)
	}
	idx = o.trainable(b, idx) // σ and temperature are measured on faces of the kind it learns from (Sets, MaxPitch)
	if n := persons(b, idx); n < 2 {
		return 0, nil, nil, fmt.Errorf("headpose: %d person(s): calibrating the uncertainty needs at least 2", n)
	}
	trainIdx, testIdx := splitPersons(b, idx, frac, seed, 0x5eed)
	evals := []EvalOptions{eo}
	if len(temps) > 0 {
		evals = nil
		for _, t := range temps {
			e := eo
			e.defaults()
			e.Settings.Temperature = t
			evals = append(evals, e)
		}
	}
	reps, _, err := cachedTrainAndTest(b, trainIdx, testIdx, o, nil, nil, evals, models, "", nil)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("headpose: calibrating on held-out persons: %w", err)
	}
	best := 0
	for i, r := range reps {
		if r.MeanMAE() < reps[best].MeanMAE() {
			best = i
		}
	}
	rep := reps[best]
	temp := 0.0
	if len(temps) > 0 {
		temp = temps[best]
	}
	scales := map[string]float64{}
	for _, a := range rep.Angles() {
		if r := rep.StdRatio(a); r > 0 {
			scales[a] = r
		}
	}
	return temp, scales, rep, nil
}

// SetStdScales records scales (by output name) in m's outputs.
func SetStdScales(m *gllim.Model, scales map[string]float64) {
	for name, s := range scales {
		if k := m.OutputIndex(name); k >= 0 {
			m.Outputs[k].StdScale = s
		}
	}
}
