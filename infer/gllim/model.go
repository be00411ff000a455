package gllim

import (
	"fmt"
	"math"
	"strconv"
)

// Output describes one observed output t_l: its name and unit, and the
// standardisation the model was trained in: t_std = (t − Mean) / Scale.
// Callers of the forward model see natural units.
//
// StdScale, where set, multiplies the model's predictive standard deviation
// of this output so that it matches the errors measured on persons held out
// of training (the mixture's posterior is overconfident in high dimension);
// 0 means 1 (not calibrated).
type Output struct {
	Name     string  `json:"name"`
	Unit     string  `json:"unit"`
	Mean     float64 `json:"mean"`
	Scale    float64 `json:"scale"`
	StdScale float64 `json:"std_scale,omitempty"`
}

// Uncertainty returns the factor on the output's predictive standard
// deviation: StdScale, or 1 where it is not set.
func (o Output) Uncertainty() float64 {
	if o.StdScale == 0 {
		return 1
	}
	return o.StdScale
}

// FeatureRecipe records how the feature vectors y were computed, so that
// run-time features match training. Name identifies the extractor; the other
// fields are its settings (zero when they do not apply).
type FeatureRecipe struct {
	Name     string `json:"name"`               // e.g. "phog"
	Version  int    `json:"version"`            // of the extractor's definition
	Patch    int    `json:"patch,omitempty"`    // side of the square patch in pixels
	Cells    []int  `json:"cells,omitempty"`    // cell sizes in pixels, one HOG level each
	Block    int    `json:"block,omitempty"`    // block side in cells
	Bins     int    `json:"bins,omitempty"`     // orientation bins
	Equalize bool   `json:"equalize,omitempty"` // histogram equalisation of the patch
	Norm     string `json:"norm,omitempty"`     // block normalisation
}

// BoxCalibration maps a detector's box to the box the model was trained on:
// centre += (DX, DY)·side, side ·= Scale (DX, DY in detector box sizes).
type BoxCalibration struct {
	Detector string  `json:"detector"`
	DX       float64 `json:"dx"`
	DY       float64 `json:"dy"`
	Scale    float64 `json:"scale"`
	N        int     `json:"n"` // detections it was learnt from
}

// BoxConvention records how the annotated boxes of one training data set
// were mapped to the canonical face box (the detector's) the model was
// trained on: centre moved by (DX, DY) annotated box sides from the
// annotated square, side multiplied by Scale. A model trained on canonical
// boxes takes detector boxes as they are.
type BoxConvention struct {
	Set   string  `json:"set"`
	DX    float64 `json:"dx"`
	DY    float64 `json:"dy"`
	Scale float64 `json:"scale"`
	N     int     `json:"n"`     // matched detections it was learnt from
	Faces int     `json:"faces"` // faces of the set
}

// Training records how a model was made.
type Training struct {
	Tool string   `json:"tool,omitempty"`
	Data []string `json:"data,omitempty"`
	N    int      `json:"n,omitempty"` // training samples
	// Name, Box and Seed are what programs read back: the recipe's name,
	// the kind of face box it was trained on ("canonical", "square", …)
	// and the first member's EM seed (member i used Seed+i). Files
	// before they existed have them only in Settings: see Recipe.
	Name       string            `json:"name,omitempty"`
	Box        string            `json:"box,omitempty"`
	Seed       uint64            `json:"seed,omitempty"`
	Settings   map[string]string `json:"settings,omitempty"` // every training option, for people
	Date       string            `json:"date,omitempty"`     // RFC 3339
	Iterations int               `json:"iterations,omitempty"`
	LogL       float64           `json:"logl,omitempty"` // final log-likelihood, natural units of t
	BIC        float64           `json:"bic,omitempty"`
}

// Recipe returns the name, box kind and seed, from the typed fields or,
// in files written before them, from the settings.
func (t Training) Recipe() (name, box string, seed uint64) {
	name, box, seed = t.Name, t.Box, t.Seed
	if name == "" {
		name = t.Settings["name"]
	}
	if box == "" {
		box = t.Settings["box"]
	}
	if seed == 0 {
		seed, _ = strconv.ParseUint(t.Settings["seed"], 10, 64)
	}
	return name, box, seed
}

// Model is a trained hybrid GLLiM with what is needed to use it: what its
// outputs mean, how its inputs are made and how it was trained.
type Model struct {
	Params *Params
	// Members are the further members of an ensemble: models of the same
	// size fitted to the same data from other initialisations. The forward
	// model averages the members' predictions (Params is the first member);
	// empty for a single model.
	Members     []*Params
	Outputs     []Output
	Features    FeatureRecipe
	Calibration *BoxCalibration // nil: none
	// Conventions are the training data sets' box conventions, for models
	// trained on canonical boxes (empty otherwise).
	Conventions []BoxConvention
	Training    Training
	// Temperature T ≥ 1 tempers the mixture's posterior weights at
	// prediction: ν_k ∝ π_k p(y | k)^(1/T) (0 means 1, the model's own).
	// With D = 1888 correlated features and diagonal Σ_k, p(y | k) counts
	// the same evidence many times over and the weights are all but
	// one-hot; tempering lets the neighbouring components' regressions
	// share a face that lies between them. log p(y) is not tempered.
	Temperature float64
	// Encoding is how the model's file stores its weights (Float32 if
	// empty); Marshal writes it the same way.
	Encoding Encoding
	// Input, if set, maps the feature vectors before the mixture reads
	// them (Projection): the mixture's D is Input.P(), the features'
	// length Input.In().
	Input *Projection

	fileVersion int // the version it was read from; 0 if made in memory
}

// Description is m without its weights: outputs, features, calibration,
// conventions, training, temperature, encoding and each member's
// dimensions. It is what a caller keeps once the forward model is built
// (NewForward), so that the float64 weights, several times the forward
// model's size, can be collected. It does not validate and cannot predict.
func (m *Model) Description() *Model {
	d := *m
	dims := func(p *Params) *Params {
		return &Params{K: p.K, D: p.D, Lt: p.Lt, Lw: p.Lw, Cov: p.Cov, Shared: p.Shared}
	}
	d.Params = dims(m.Params)
	d.Members = make([]*Params, len(m.Members))
	for i, q := range m.Members {
		d.Members[i] = dims(q)
	}
	if m.Input != nil {
		// The input's length (InputDim) without its weights.
		d.Input = &Projection{Mean: make([]float64, m.Input.In())}
	}
	return &d
}

// Validate checks the parameters and that the outputs match them.
func (m *Model) Validate() error {
	if m.Params == nil {
		return fmt.Errorf("gllim: model has no parameters")
	}
	if err := m.Params.Validate(); err != nil {
		return err
	}
	p := m.Params
	for i, q := range m.Members {
		if q == nil {
			return fmt.Errorf("gllim: ensemble member %d has no parameters", i+2)
		}
		if q.K != p.K || q.D != p.D || q.Lt != p.Lt || q.Lw != p.Lw || q.Cov != p.Cov || q.Shared != p.Shared {
			return fmt.Errorf("gllim: ensemble member %d is K=%d D=%d Lt=%d Lw=%d %s, member 1 is K=%d D=%d Lt=%d Lw=%d %s",
				i+2, q.K, q.D, q.Lt, q.Lw, q.Cov, p.K, p.D, p.Lt, p.Lw, p.Cov)
		}
		if err := q.Validate(); err != nil {
			return fmt.Errorf("gllim: ensemble member %d: %w", i+2, err)
		}
	}
	if t := m.Temperature; t != 0 && !(t >= 1 && t <= MaxTemperature) {
		return fmt.Errorf("gllim: temperature %g not in [1, %g] (0: none)", t, float64(MaxTemperature))
	}
	if m.Input != nil {
		if err := m.Input.validate(p.D); err != nil {
			return err
		}
	}
	if len(m.Outputs) != m.Params.Lt {
		return fmt.Errorf("gllim: %d outputs described, model has Lt=%d", len(m.Outputs), m.Params.Lt)
	}
	for i, o := range m.Outputs {
		if o.Name == "" {
			return fmt.Errorf("gllim: output %d has no name", i)
		}
		if !(o.Scale > 0) || math.IsInf(o.Scale, 0) || math.IsNaN(o.Mean) || math.IsInf(o.Mean, 0) {
			return fmt.Errorf("gllim: output %q: mean %g, scale %g: need a finite mean and a positive scale", o.Name, o.Mean, o.Scale)
		}
		if o.StdScale < 0 || math.IsNaN(o.StdScale) || math.IsInf(o.StdScale, 0) {
			return fmt.Errorf("gllim: output %q: std scale %g: need a finite positive factor (or 0: none)", o.Name, o.StdScale)
		}
	}
	return nil
}

// Ensemble returns the parameters of every member: Params, then Members.
func (m *Model) Ensemble() []*Params {
	return append([]*Params{m.Params}, m.Members...)
}

// OutputIndex returns the index of the output called name, or -1.
func (m *Model) OutputIndex(name string) int {
	for i, o := range m.Outputs {
		if o.Name == name {
			return i
		}
	}
	return -1
}
