package pose

import (
	"image"
	"math"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
)

func TestMove(t *testing.T) {
	b := feature.Box{X: 10, Y: 20, W: 80, H: 120} // size √(80·120) ≈ 97.98
	m := Move(b, 0.1, -0.2, math.Log(2))
	s := math.Sqrt(80 * 120)
	cx, cy := m.Centre()
	if math.Abs(cx-(50+0.1*s)) > 1e-9 || math.Abs(cy-(80-0.2*s)) > 1e-9 || math.Abs(m.W-160) > 1e-9 || math.Abs(m.H-240) > 1e-9 {
		t.Errorf("moved box %v", m)
	}
}

func model(outputs ...string) *gllim.Model {
	p := gllim.NewParams(1, feature.Dim, len(outputs), 0)
	p.Pi[0] = 1
	for i := 0; i < len(outputs); i++ {
		p.GammaK(0)[i*len(outputs)+i] = 1
	}
	for i := range p.Sigma {
		p.Sigma[i] = 1
	}
	m := &gllim.Model{Params: p, Features: feature.Recipe()}
	for _, o := range outputs {
		m.Outputs = append(m.Outputs, gllim.Output{Name: o, Scale: 1})
	}
	return m
}

func TestNewRejectsUnusableModels(t *testing.T) {
	if _, err := New(model(Yaw, DX, DY), DefaultSettings()); err != nil {
		t.Fatalf("good model rejected: %v", err)
	}
	other := model(Yaw)
	other.Features.Cells = []int{16, 8}
	for name, m := range map[string]*gllim.Model{
		"other features": other,
		"no angle":       model(DX, DY),
		"dx without dy":  model(Yaw, DX),
	} {
		if _, err := New(m, DefaultSettings()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(model(Yaw), Settings{MaxIter: 0}); err == nil {
		t.Error("zero iterations accepted")
	}
}

// A worker estimates without allocating.
func TestEstimateDoesNotAllocate(t *testing.T) {
	e, err := New(model(Yaw, Pitch, DX, DY, DS), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	img := image.NewGray(image.Rect(0, 0, 200, 160))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	w := e.NewWorker()
	box := feature.Box{X: 40, Y: 30, W: 90, H: 90}
	if a := testing.AllocsPerRun(20, func() { w.Estimate(img, box) }); a != 0 {
		t.Errorf("Estimate allocates %.0f times", a)
	}
}

// constant returns a one-component model of the outputs whose forward
// prediction is c whatever the features (A = 0), and, with slope ≠ 0, whose
// first output also grows with feature d (the inverse model y_d = slope·t₀).
func constant(names []string, c []float64, d int, slope float64) *gllim.Model {
	m := model(names...)
	copy(m.Params.C, c)
	m.Params.A[d*len(names)] = slope
	m.Params.B[d] = slope * c[0]
	return m
}

// predictOn is f's prediction for features y, from a predictor of its own.
func predictOn(f *gllim.Forward, y []float32) gllim.Prediction {
	p := f.NewPrediction()
	f.NewPredictor().Predict(&p, y)
	return p
}

// mirrorFixture is a textured image, a face box on it, the box's features
// y and mirrored features ym, and a feature d that mirroring changes (an
// expert whose yaw depends on it tells the face from its mirror).
func mirrorFixture() (img *image.Gray, box feature.Box, y, ym []float32, d int) {
	img = image.NewGray(image.Rect(0, 0, 200, 160))
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7 + i/200*13)
	}
	box = feature.Box{X: 40, Y: 30, W: 90, H: 90}
	var ex feature.Extractor
	y = make([]float32, feature.Dim)
	ex.Extract(y, img, box)
	perm := feature.MirrorPermutation()
	ym = make([]float32, feature.Dim)
	for i, j := range perm {
		ym[i] = y[j]
	}
	for d = range y {
		if y[d] != y[perm[d]] {
			break
		}
	}
	return img, box, y, ym, d
}

// The profile expert answers where the model's yaw is past the gate, from
// the mirrored face's features when that yaw is negative (its yaw, roll and
// dx negated back), and the model answers below the gate.
func TestProfileExpert(t *testing.T) {
	names := []string{Yaw, Roll, DX, DY}
	img, box, y, ym, d := mirrorFixture()
	expert := constant(names, []float64{70, 5, 0.1, 0.02}, d, 0.01)
	xf, err := gllim.NewForward(expert)
	if err != nil {
		t.Fatal(err)
	}
	direct, mirrored := predictOn(xf, y), predictOn(xf, ym)
	if direct.Mean[0] == mirrored.Mean[0] {
		t.Fatal("the test's expert does not tell the face from its mirror")
	}
	for _, c := range []struct {
		yaw  float64
		want []float64
	}{
		{50, direct.Mean},
		{-50, []float64{-mirrored.Mean[0], -mirrored.Mean[1], -mirrored.Mean[2], mirrored.Mean[3]}},
		{20, []float64{20, 1, 0, 0}},
		{-39.9, []float64{-39.9, 1, 0, 0}},
	} {
		e, err := New(constant(names, []float64{c.yaw, 1, 0, 0}, 0, 0), Settings{MaxIter: 1})
		if err != nil {
			t.Fatal(err)
		}
		if e, err = e.WithExpert(Expert{Model: expert, Gate: 40}); err != nil {
			t.Fatal(err)
		}
		r := e.NewWorker().Estimate(img, box)
		if math.Abs(r.Angles[0]-c.want[0]) > 1e-4 || math.Abs(r.Angles[2]-c.want[1]) > 1e-4 {
			t.Errorf("model yaw %g: yaw, roll %.4f, %.4f, want %.4f, %.4f", c.yaw, r.Angles[0], r.Angles[2], c.want[0], c.want[1])
		}
		want := Move(box, c.want[2], c.want[3], 0)
		if math.Abs(r.Box.X-want.X) > 1e-3 || math.Abs(r.Box.Y-want.Y) > 1e-3 {
			t.Errorf("model yaw %g: box %v, want %v", c.yaw, r.Box, want)
		}
	}
	// Half the weight, and the yaw alone: the model keeps the roll.
	e, err := New(constant(names, []float64{50, 1, 0, 0}, 0, 0), Settings{MaxIter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e, err = e.WithExpert(Expert{Model: expert, Gate: 40, Weight: 0.5, Outputs: []string{Yaw}}); err != nil {
		t.Fatal(err)
	}
	r := e.NewWorker().Estimate(img, box)
	if want := 0.5*50 + 0.5*direct.Mean[0]; math.Abs(r.Angles[0]-want) > 1e-4 || r.Angles[2] != 1 {
		t.Errorf("half-weight yaw-only expert: yaw, roll %.4f, %.4f, want %.4f, 1", r.Angles[0], r.Angles[2], want)
	}
	if _, err := e.WithExpert(Expert{Model: expert, Gate: 40, Outputs: []string{"nose"}}); err == nil {
		t.Error("an expert for an output the model lacks accepted")
	}
	e, _ = New(model(Yaw, Pitch), DefaultSettings())
	for name, x := range map[string]*gllim.Model{"other outputs": model(Yaw, Roll), "fewer outputs": model(Yaw)} {
		if _, err := e.WithExpert(Expert{Model: x, Gate: 40}); err == nil {
			t.Errorf("expert with %s accepted", name)
		}
	}
	if _, err := e.WithExpert(Expert{Model: model(Yaw, Pitch), Gate: 95}); err == nil {
		t.Error("gate 95° accepted")
	}
}

// Below the gate, an expert used by density answers where its log p(y) of
// the face turned the way the model's yaw says (the features, or the
// mirrored features for a negative yaw) is within the margin of the
// model's; past the margin, or without ByDensity, the model answers. The
// densities are the forward models' own.
func TestProfileExpertByDensity(t *testing.T) {
	names := []string{Yaw, Roll, DX, DY}
	img, box, y, ym, d := mirrorFixture()
	ask := func(m *gllim.Model, f []float32) gllim.Prediction {
		fw, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		p := fw.NewPrediction()
		fw.NewPredictor().Predict(&p, f)
		return p
	}
	// The expert reads the face turned the way the model's yaw says: as
	// it is for a positive yaw, mirrored (its answer mirrored back) for a
	// negative one; the slope makes the two readings differ.
	expert := constant(names, []float64{70, 5, 0.1, 0.02}, d, 0.01)
	for _, yaw := range []float64{20, -20} {
		mod := constant(names, []float64{yaw, 1, 0, 0}, 0, 0)
		lm := ask(mod, y).LogDensity
		side := ask(expert, y)
		want := []float64{side.Mean[0], side.Mean[1], side.Mean[2], side.Mean[3]}
		if yaw < 0 {
			side = ask(expert, ym)
			want = []float64{-side.Mean[0], -side.Mean[1], -side.Mean[2], side.Mean[3]}
		}
		if ask(expert, y).Mean[0] == ask(expert, ym).Mean[0] {
			t.Fatal("the test's expert does not tell the face from its mirror")
		}
		gap := lm - side.LogDensity
		for _, c := range []struct {
			name string
			xp   Expert
			want []float64
		}{
			{"within the margin", Expert{Model: expert, Gate: 40, ByDensity: true, Margin: gap + 0.01}, want},
			{"past the margin", Expert{Model: expert, Gate: 40, ByDensity: true, Margin: gap - 0.01}, []float64{yaw, 1, 0, 0}},
			{"the gate alone", Expert{Model: expert, Gate: 40, Margin: gap + 0.01}, []float64{yaw, 1, 0, 0}},
		} {
			e, err := New(mod, Settings{MaxIter: 1})
			if err != nil {
				t.Fatal(err)
			}
			if e, err = e.WithExpert(c.xp); err != nil {
				t.Fatal(err)
			}
			r := e.NewWorker().Estimate(img, box)
			if math.Abs(r.Angles[0]-c.want[0]) > 1e-4 || math.Abs(r.Angles[2]-c.want[1]) > 1e-4 {
				t.Errorf("model yaw %g, %s (margin %.3f): yaw, roll %.4f, %.4f, want %.4f, %.4f", yaw, c.name, c.xp.Margin, r.Angles[0], r.Angles[2], c.want[0], c.want[1])
			}
			if w := Move(box, c.want[2], c.want[3], 0); math.Abs(r.Box.X-w.X) > 1e-3 || math.Abs(r.Box.Y-w.Y) > 1e-3 {
				t.Errorf("model yaw %g, %s: box %v, want %v", yaw, c.name, r.Box, w)
			}
			// The gap it lost by: 0.01 nats past the margin, −0.01 (it
			// won) within it; none without the test.
			wantGap := map[string]float64{"within the margin": -0.01, "past the margin": 0.01, "the gate alone": math.Inf(1)}[c.name]
			if g := r.ExpertGap; math.Abs(g-wantGap) > 1e-6 && g != wantGap {
				t.Errorf("model yaw %g, %s: expert gap %g, want %g", yaw, c.name, g, wantGap)
			}
			// Step after a refinement the expert lost by far skips the
			// test (the model answers here even where the expert would
			// win); without one, or after a close one, it asks.
			w := e.NewWorker()
			far, close := Result{ExpertGap: expertClear}, Result{ExpertGap: expertClear - 1}
			if s := w.Step(img, box, &far); s.Angles[0] != yaw {
				t.Errorf("model yaw %g, %s: Step after a far loss read yaw %g", yaw, c.name, s.Angles[0])
			}
			for _, last := range []*Result{nil, &close} {
				if s := w.Step(img, box, last); math.Abs(s.Angles[0]-c.want[0]) > 1e-4 {
					t.Errorf("model yaw %g, %s: Step after %v read yaw %g, want %g", yaw, c.name, last, s.Angles[0], c.want[0])
				}
			}
		}
	}
	mod := constant(names, []float64{20, 1, 0, 0}, 0, 0)
	e, _ := New(mod, DefaultSettings())
	if _, err := e.WithExpert(Expert{Model: constant(names, []float64{70, 5, 0, 0}, 0, 0), Gate: 40, ByDensity: true, Margin: math.NaN()}); err == nil {
		t.Error("a NaN density margin accepted")
	}
	if _, err := e.WithExpert(Expert{Model: constant(names, []float64{70, 5, 0, 0}, 0, 0), Gate: 40, ByDensity: true, Margin: 5000}); err == nil {
		t.Error("a density margin of 5000 nats accepted")
	}
}

// An expert's file says whether it answers by density, and with which
// margin; a margin that is no number is an error naming the setting.
func TestExpertOfDensity(t *testing.T) {
	x := model(Yaw)
	x.Training.Settings = map[string]string{ExpertProfile: "30", ExpertGate: "40", ExpertDensity: "20"}
	xp, err := ExpertOf(x)
	if err != nil || !xp.ByDensity || xp.Margin != 20 || xp.Gate != 40 {
		t.Errorf("ExpertOf: %+v, %v; want by density, margin 20, gate 40", xp, err)
	}
	delete(x.Training.Settings, ExpertDensity)
	if xp, err = ExpertOf(x); err != nil || xp.ByDensity {
		t.Errorf("without %s: %+v, %v; want the gate alone", ExpertDensity, xp, err)
	}
	x.Training.Settings[ExpertDensity] = "lots"
	if _, err := ExpertOf(x); err == nil || !strings.Contains(err.Error(), ExpertDensity) {
		t.Errorf("margin %q: error %v, want one naming %s", "lots", err, ExpertDensity)
	}
}

// Past the gate the expert's answer joins the model's as a mixture of
// weight 0.7: the model at ±50° with variance 4, the expert at ±70° with
// variance 1 give the yaw 50 + 20·0.7 and the mixture's σ. The pooling is
// read from the expert's file: linear (or unset) only; the product pooling
// that was tried is refused with a reason.
func TestProfileExpertMixture(t *testing.T) {
	names := []string{Yaw, Roll, DX, DY}
	img, box, _, _, _ := mirrorFixture()
	x := constant(names, []float64{70, 5, 0, 0}, 0, 0)
	for _, yaw := range []float64{50, -50} {
		m := constant(names, []float64{yaw, 1, 0, 0}, 0, 0)
		m.Params.GammaK(0)[0] = 4 // yaw's variance
		e, err := New(m, Settings{MaxIter: 1})
		if err != nil {
			t.Fatal(err)
		}
		if e, err = e.WithExpert(Expert{Model: x, Gate: 40, Weight: 0.7}); err != nil {
			t.Fatal(err)
		}
		r := e.NewWorker().Estimate(img, box)
		mean := 50 + 20*0.7
		v := 0.3*(4+(50-mean)*(50-mean)) + 0.7*(1+(70-mean)*(70-mean))
		want := [3]float64{math.Copysign(mean, yaw), 0, 0.3*1 + 0.7*math.Copysign(5, yaw)}
		if math.Abs(r.Angles[0]-want[0]) > 1e-4 || math.Abs(r.Angles[2]-want[2]) > 1e-4 || math.Abs(r.Std[0]-math.Sqrt(v)) > 1e-4 {
			t.Errorf("model yaw %g: yaw %.5f σ %.5f, roll %.5f; want %.5f σ %.5f, %.5f", yaw, r.Angles[0], r.Std[0], r.Angles[2], want[0], math.Sqrt(v), want[2])
		}
	}
	x.Training.Settings = map[string]string{ExpertProfile: "30", ExpertGate: "40"}
	for _, pool := range []string{"", "linear"} {
		x.Training.Settings[ExpertPool] = pool
		if _, err := ExpertOf(x); err != nil {
			t.Errorf("%s %q: %v", ExpertPool, pool, err)
		}
	}
	for _, pool := range []string{"product", "geometric"} {
		x.Training.Settings[ExpertPool] = pool
		if _, err := ExpertOf(x); err == nil || !strings.Contains(err.Error(), ExpertPool) || !strings.Contains(err.Error(), "retrain") {
			t.Errorf("%s %q: error %v, want one naming %s and what to do", ExpertPool, pool, err, ExpertPool)
		}
	}
}

// landmarkModel is a one-component landmark expert whose answer is c
// whatever the landmarks, with σ std on every angle: A = 0, so that
// p(t | y) is the component's prior N(c, std²).
func landmarkModel(c [3]float64, std float64, only string) *gllim.Model {
	p := gllim.NewParams(1, feature.LandmarkDim, 3, 0)
	p.Pi[0] = 1
	for i := range 3 {
		p.GammaK(0)[i*3+i] = std * std
		p.C[i] = c[i]
	}
	for i := range p.Sigma {
		p.Sigma[i] = 1
	}
	m := &gllim.Model{Params: p, Features: feature.LandmarkRecipe()}
	for _, o := range AngleNames {
		m.Outputs = append(m.Outputs, gllim.Output{Name: o, Scale: 1})
	}
	m.Training.Settings = map[string]string{LandmarkRho: "0.25"}
	if only != "" {
		m.Training.Settings[LandmarkOutputs] = only
	}
	return m
}

// fuseCase is a model of the angles and the box, a face's box and its
// landmarks, for Fuse (landmarkModel answers whatever the points).
func fuseCase(t *testing.T) (*Estimator, feature.Box, feature.Landmarks) {
	t.Helper()
	e, err := New(model(Yaw, Pitch, Roll, DX, DY), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	return e, feature.Box{X: 10, Y: 10, W: 50, H: 50}, feature.Landmarks{}
}

// Fuse weighs the model's and the landmarks' answers by their inverse
// variances, angle by angle, only for the angles the expert is told to
// answer, and allocates nothing; without an expert it changes nothing.
func TestFuseLandmarks(t *testing.T) {
	e, box, l := fuseCase(t)
	r := Result{Angles: [3]float64{30, -10, 5}, Std: [3]float64{8, 4, 6}}
	if got := r; e.NewWorker().Fuse(&got, box, &l) || got != r {
		t.Fatalf("no expert: Fuse changed %+v to %+v", r, got)
	}
	lm := [3]float64{20, 0, -5}
	const lmStd = 6.0
	for _, only := range []string{"", "yaw"} {
		le, err := e.WithLandmarks(landmarkModel(lm, lmStd, only))
		if err != nil {
			t.Fatal(err)
		}
		w := le.NewWorker()
		got := r
		if !w.Fuse(&got, box, &l) || !got.Landmarks {
			t.Fatalf("%q: not fused", only)
		}
		for a := range 3 {
			want, wantStd := r.Angles[a], r.Std[a]
			if only == "" || a == 0 {
				// The inverse-variance mean; its variance as the
				// covariance of the two errors says, [w 1−w] C [w 1−w]ᵀ.
				v0, v1 := r.Std[a]*r.Std[a], lmStd*lmStd
				want = (r.Angles[a]/v0 + lm[a]/v1) / (1/v0 + 1/v1)
				c := 0.25 * r.Std[a] * lmStd
				w := [2]float64{(1 / v0) / (1/v0 + 1/v1), (1 / v1) / (1/v0 + 1/v1)}
				wantStd = math.Sqrt(w[0]*w[0]*v0 + w[1]*w[1]*v1 + 2*w[0]*w[1]*c)
			}
			if math.Abs(got.Angles[a]-want) > 1e-9 || math.Abs(got.Std[a]-wantStd) > 1e-9 {
				t.Errorf("%q: angle %d fused to %g ± %g, want %g ± %g", only, a, got.Angles[a], got.Std[a], want, wantStd)
			}
		}
		if a := testing.AllocsPerRun(20, func() { g := r; w.Fuse(&g, box, &l) }); a != 0 {
			t.Errorf("Fuse allocates %.0f times", a)
		}
	}
	bad := landmarkModel(lm, lmStd, "")
	bad.Features = feature.Recipe()
	if _, err := e.WithLandmarks(bad); err == nil {
		t.Error("a p-HOG model taken for a landmark expert")
	}
	if _, err := e.WithLandmarks(landmarkModel(lm, lmStd, "nose")); err == nil || !strings.Contains(err.Error(), "nose") {
		t.Errorf("an expert told to answer %q: %v", "nose", err)
	}
	corr := landmarkModel(lm, lmStd, "")
	corr.Training.Settings[LandmarkRho] = "1.5"
	if _, err := e.WithLandmarks(corr); err == nil {
		t.Error("a correlation of 1.5 accepted")
	}
}

// A landmark expert with a pitch gate fuses its pitch only where the
// model's |pitch| is below it (the pitches it learnt from); its yaw is
// fused either way, and a gate that is no |pitch| is refused by name.
func TestFuseLandmarksPitchGate(t *testing.T) {
	e, box, l := fuseCase(t)
	m := landmarkModel([3]float64{20, 0, -5}, 6, "yaw,pitch")
	m.Training.Settings[LandmarkPitchGate] = "35"
	le, err := e.WithLandmarks(m)
	if err != nil {
		t.Fatal(err)
	}
	w := le.NewWorker()
	for _, c := range []struct {
		pitch float64
		fused bool
	}{{-10, true}, {34.9, true}, {-35, false}, {50, false}} {
		r := Result{Angles: [3]float64{30, c.pitch, 5}, Std: [3]float64{8, 4, 6}}
		got := r
		if !w.Fuse(&got, box, &l) {
			t.Fatalf("pitch %g: nothing fused", c.pitch)
		}
		if got.Angles[0] == r.Angles[0] {
			t.Errorf("pitch %g: yaw not fused", c.pitch)
		}
		if fused := got.Angles[1] != r.Angles[1] || got.Std[1] != r.Std[1]; fused != c.fused {
			t.Errorf("model pitch %g, gate 35: pitch fused %v (%g ± %g), want %v", c.pitch, fused, got.Angles[1], got.Std[1], c.fused)
		}
		if got.Angles[2] != r.Angles[2] {
			t.Errorf("pitch %g: roll fused, the expert was told yaw and pitch", c.pitch)
		}
	}
	for _, bad := range []string{"steep", "0", "-20", "91", "NaN"} {
		m.Training.Settings[LandmarkPitchGate] = bad
		if _, err := e.WithLandmarks(m); err == nil || !strings.Contains(err.Error(), LandmarkPitchGate) {
			t.Errorf("pitch gate %q: %v", bad, err)
		}
	}
}

// Step is the first prediction of Estimate from the same box: its angles,
// σ and box are Estimate's First, FirstStd and FirstBox, and it allocates
// nothing.
func TestStepIsEstimatesFirst(t *testing.T) {
	img, box, _, _, d := mirrorFixture()
	names := []string{Yaw, Pitch, DX, DY, DS}
	m := constant(names, []float64{10, 5, 0.05, -0.03, 0.02}, d, 0.02)
	e, err := New(m, DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	w := e.NewWorker()
	full, step := w.Estimate(img, box), w.Step(img, box, nil)
	if full.Iterations < 2 || step.Iterations != 1 {
		t.Fatalf("Estimate made %d predictions, Step %d", full.Iterations, step.Iterations)
	}
	u := m.Outputs[0].Uncertainty()
	if step.Angles != full.First || step.Box != full.FirstBox || step.Std[0] != full.FirstStd[0]*u || step.First != full.First {
		t.Errorf("Step %v %v σ %v; Estimate's first %v %v σ %v", step.Angles, step.Box, step.Std, full.First, full.FirstBox, full.FirstStd)
	}
	if full.Box == full.FirstBox || full.Angles == full.First {
		t.Error("the test's refinement does not move past its first step")
	}
	if a := testing.AllocsPerRun(20, func() { w.Step(img, box, &full) }); a != 0 {
		t.Errorf("Step allocates %.0f times", a)
	}
}

// With Settings.Mirror, Estimate averages the model's answers for the face
// and its mirror (yaw, roll and dx negated back); its First and FirstBox
// stay the unmirrored first prediction's, which is what Step reads. (With
// a profile expert: TestMirrorWithExpert.)
func TestMirror(t *testing.T) {
	img, box, y, ym, d := mirrorFixture()
	names := []string{Yaw, Pitch, DX, DY}
	m := constant(names, []float64{10, 5, 0.05, -0.03}, d, 0.02)
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	direct, mirrored := predictOn(f, y), predictOn(f, ym)
	if direct.Mean[0] == mirrored.Mean[0] {
		t.Fatal("the test's model does not tell the face from its mirror")
	}
	s := Settings{MaxIter: 1, Mirror: true}
	e, err := New(m, s)
	if err != nil {
		t.Fatal(err)
	}
	w := e.NewWorker()
	r := w.Estimate(img, box)
	want := [2]float64{(direct.Mean[0] - mirrored.Mean[0]) / 2, (direct.Mean[1] + mirrored.Mean[1]) / 2}
	if math.Abs(r.Angles[0]-want[0]) > 1e-9 || math.Abs(r.Angles[1]-want[1]) > 1e-9 {
		t.Errorf("mirrored yaw, pitch %.6f, %.6f, want %.6f, %.6f", r.Angles[0], r.Angles[1], want[0], want[1])
	}
	if b := Move(box, (direct.Mean[2]-mirrored.Mean[2])/2, (direct.Mean[3]+mirrored.Mean[3])/2, 0); math.Abs(r.Box.X-b.X) > 1e-9 || math.Abs(r.Box.Y-b.Y) > 1e-9 {
		t.Errorf("mirrored box %v, want %v", r.Box, b)
	}
	if r.First[0] != direct.Mean[0] || r.First[1] != direct.Mean[1] {
		t.Errorf("First %v, want the unmirrored %v", r.First, direct.Mean[:2])
	}
	if b := Move(box, direct.Mean[2], direct.Mean[3], 0); r.FirstBox != b {
		t.Errorf("FirstBox %v, want the unmirrored move %v", r.FirstBox, b)
	}
	if st := w.Step(img, box, nil); st.Angles != r.First || st.Box != r.FirstBox {
		t.Errorf("Step %v %v, want Estimate's first %v %v", st.Angles, st.Box, r.First, r.FirstBox)
	}
	if a := testing.AllocsPerRun(20, func() { w.Estimate(img, box) }); a != 0 {
		t.Errorf("a mirrored Estimate allocates %.0f times", a)
	}

}
