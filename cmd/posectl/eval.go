package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// evalFlags are posectl eval's own flags.
type evalFlags struct {
	data                           dataFlags
	mf                             modelFlags
	df                             detectFlags
	rf                             refineListFlags
	xf                             expertFlags
	lf                             landmarkFlags
	cache                          *string
	protocol, modelPath, condition string
	set, perFace, sweep, plot      string
	card, learnT, models           string
	turnedFolds, encoding          string
	holdout, splits, folds         int
	holdoutSeed, testSeed          uint64
	testSigma, testScale           float64
	startStd                       float64
	asJSON, asCSV, profileCompare  bool
	// The daemon's configuration whose frame path the published
	// condition runs, and the face-free pictures it is measured on.
	configPath, faceFree string
	heldOutOnly          bool
	conditionSet         bool
	frames               int
	hold                 string
	noise                float64
	alone                bool
	daemon               config.Config // -config's, or the defaults
	paste                pasteFlags
}

func (e *evalFlags) register(fs *flag.FlagSet) {
	e.data.register(fs, dataRoot()+"/pointing04")
	e.mf.register(fs)
	e.df.register(fs, 40)
	fs.BoolVar(&e.df.p.Turned, "turned", false, "detected: also run the embedded cascade for turned faces, both ways, as posed does (trained on every person of ../shared/data: how many of those faces it finds is optimistic; posectl detections measures it on unseen persons)")
	fs.Float64Var(&e.df.p.TurnedScore, "turned-score", e.df.p.TurnedScore, "detected: the smallest score of a turned face (detect.turned_score)")
	fs.StringVar(&e.turnedFolds, "turned-folds", "", "detected: run facefinder and, on each face, the turned-face cascade that never saw its person: the k-th of these N files trained by posectl cascade -folds N -leave-out k (several joined by +: views of different yaw ranges) (instead of -turned's embedded cascade, which saw every person)")
	e.rf.register(fs)
	e.xf.register(fs)
	e.lf.register(fs, true)
	e.cache = cacheFlag(fs)
	fs.StringVar(&e.protocol, "protocol", "", "lopo: leave one person of -set out, a model per fold; kfold: -splits folds of -set's persons; holdout: train once, test on -holdout persons of -set")
	fs.IntVar(&e.holdout, "holdout", 300, "holdout: persons of -set kept for testing")
	fs.Uint64Var(&e.holdoutSeed, "holdout-seed", 1, "holdout and kfold: seed of the draw of persons")
	fs.IntVar(&e.splits, "splits", 5, "kfold: number of folds")
	fs.StringVar(&e.modelPath, "model", "", "evaluate this model on -data (no training)")
	fs.StringVar(&e.condition, "condition", "annotated", "test boxes, a comma-separated list of: annotated (the face boxes), shifted (seeded Gaussian moves), detected (the detector's), published (what posed publishes, each picture the first frame of a scene: the daemon's frame path with -config; the default with -model), turning (what posed publishes on Pointing'04 persons turning the head in 15° steps, replayed as video: -hold, -alone); none: with -model, only the -paste and -face-free measures")
	fs.StringVar(&e.configPath, "config", "", "published: the daemon's configuration file whose frame path runs (detectors, verification, scan, tracker); default: posed's defaults. Its model keys are ignored: the model is -model's, with the expert beside it")
	fs.StringVar(&e.faceFree, "face-free", "", "published: also count the faces published on each picture of this folder of face-free pictures (phantoms per picture)")
	fs.IntVar(&e.frames, "frames", 1, "published: show each picture this many frames (a still scene) and count what the last frame publishes: 1 is a scene's first frame, found by the network's scan; 2 adds the cascades' detection with its verification")
	fs.Float64Var(&e.noise, "noise", 0, "turning, -face-free and -paste: σ in grey levels of sensor-like noise added to every frame, each its own (turning's frames one by one see the same frames); 0: none")
	fs.StringVar(&e.hold, "hold", "1", "turning: the frames each pose is held (15 a second), a comma-separated list: 1 turns 225°/s, 4 56°/s")
	fs.BoolVar(&e.alone, "alone", false, "turning: also measure the same frames one by one (each a scene's first frame), against which the video is compared")
	fs.BoolVar(&e.heldOutOnly, "face-free-held-out", true, "with -face-free: only the third of the pictures kept out of every training (by name, as posectl cascade keeps them)")
	e.paste.register(fs)
	fs.IntVar(&e.folds, "folds", 0, "lopo and kfold: run only the first N folds")
	fs.StringVar(&e.set, "set", "pointing04", "lopo, kfold, holdout: the data set whose persons are left out")
	fs.Float64Var(&e.testSigma, "test-centre-sigma", 0.1, "shifted: σ of test box moves, in box sides")
	fs.Float64Var(&e.testScale, "test-scale-sigma", 0.1, "shifted: σ of test box log-scale changes")
	fs.Float64Var(&e.startStd, "start-std", 0, "detected: a face whose yaw σ from its detection exceeds this many degrees is not found, as posed starts no track on it (track.start_std, 30 by default there); 0: every detection counts")
	fs.Uint64Var(&e.testSeed, "test-seed", 5, "shifted: seed of the test box moves")
	fs.BoolVar(&e.asJSON, "json", false, "print one JSON object per evaluation case")
	fs.BoolVar(&e.asCSV, "csv", false, "print CSV")
	fs.StringVar(&e.perFace, "per-face", "", "write every test face's truth, prediction, σ and boxes to this CSV file")
	fs.StringVar(&e.sweep, "sweep-k", "", "lopo: comma-separated K values to compare by BIC and MAE")
	fs.StringVar(&e.plot, "plot", "", "with -sweep-k: write an SVG plot of BIC and MAE against K")
	fs.StringVar(&e.card, "card", "", "append the measured accuracy to this model card")
	fs.StringVar(&e.learnT, "learn-temperature", "", "each fold chooses its temperature among these, as posectl train does, on 20 % of its training persons held out of a second training (cases without -temperature use it)")
	fs.BoolVar(&e.profileCompare, "profile-compare", false, "with -profile: also measure each case without the expert (the same models)")
	fs.StringVar(&e.encoding, "encoding", "", "write each fold's model and expert in this file encoding (float32, half or q8) and read them back before measuring them, as the daemon loads such a file (default: the models as trained)")
	fs.StringVar(&e.models, "models", "", "keep each fold's trained model in this folder and reuse it when the training settings and images are the same (to measure other test-time settings without training again)")
}

func runEval(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var e evalFlags
	e.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { e.conditionSet = e.conditionSet || f.Name == "condition" })
	if e.frames < 1 {
		return fmt.Errorf("%w: -frames %d: want 1 or more", errUsage, e.frames)
	}
	if !(e.noise >= 0 && e.noise <= 128) {
		return fmt.Errorf("%w: -noise %g: want a σ of 0 (none) to 128 grey levels", errUsage, e.noise)
	}
	if !e.conditionSet && e.modelPath != "" {
		e.condition = string(headpose.Published) // -model measures what posed publishes
	}
	if (e.protocol != "") == (e.modelPath != "") {
		return fmt.Errorf("%w: give either -protocol lopo|kfold|holdout or -model FILE", errUsage)
	}
	switch e.protocol {
	case "", "lopo", "kfold", "holdout":
	default:
		return fmt.Errorf("%w: -protocol %q is not lopo, kfold or holdout", errUsage, e.protocol)
	}
	if enc := gllim.Encoding(e.encoding); enc != "" && !enc.Known() {
		return fmt.Errorf("%w: -encoding %q is not one of %q", errUsage, e.encoding, gllim.Encodings())
	}
	if e.card != "" {
		// The card is appended to after the evaluation, which may take
		// hours: a card that cannot be written says so now.
		f, err := os.OpenFile(e.card, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("-card: %w (the model card is appended to: write it with posectl train first)", err)
		}
		f.Close()
	}
	if e.condition == "none" {
		// The scene measures alone (-paste, -face-free).
		return e.scenesOnly(stdout)
	}
	evals, err := e.cases()
	if err != nil {
		return err
	}
	samples, err := e.data.load()
	if err != nil {
		return err
	}
	det, err := detect.New(e.df.p)
	if err != nil {
		return err
	}
	if e.daemon, err = e.daemonConfig(); err != nil {
		return err
	}
	for i := range evals {
		evals[i].Detector = det
		evals[i].Frames, evals[i].FramesPerPicture = framesOf(e.daemon), e.frames
	}
	if e.turnedFolds != "" {
		pick, err := e.foldDetectors()
		if err != nil {
			return err
		}
		for i := range evals {
			evals[i].DetectorFor = pick
		}
	}
	// The box conventions (and the training boxes' moves) are facefinder's,
	// as the shipped model's are: the turned cascade only finds the test
	// faces. Learnt from every view, the conventions would move (AFLW2000's
	// size ×1.18 instead of ×1.24) and the models would not be the daemon's.
	bankDet := det
	if e.df.p.Turned {
		p := e.df.p
		p.Turned = false
		if bankDet, err = detect.New(p); err != nil {
			return err
		}
	}
	bar := newProgressBar()
	start := time.Now()
	var reps []*headpose.Report
	var bank *headpose.Bank
	var title string
	if e.modelPath != "" {
		reps, bank, title, err = e.modelFile(samples, bankDet, evals, bar)
	} else {
		reps, bank, title, err = e.crossValidate(stdout, samples, bankDet, evals, bar)
	}
	if err != nil || reps == nil {
		return err
	}
	switch {
	case e.turnedFolds != "":
		title += ", detected by facefinder and the turned cascade that never saw the person"
	case e.df.p.Turned:
		title += ", detected by facefinder and the embedded turned cascade"
	}
	if err := e.report(stdout, args, reps, bank, title, time.Since(start).Round(time.Second)); err != nil {
		return err
	}
	return e.sceneMeasures(stdout, samples)
}

// sceneMeasures runs -paste (on samples) and -face-free, where asked.
func (e *evalFlags) sceneMeasures(stdout io.Writer, samples []dataset.Sample) error {
	if e.paste.dir != "" {
		if err := e.pasted(stdout, samples); err != nil {
			return err
		}
	}
	if e.faceFree == "" {
		return nil
	}
	return e.phantoms(stdout, e.daemon)
}

// scenesOnly runs -paste and -face-free without measuring -data's
// pictures themselves (-condition none).
func (e *evalFlags) scenesOnly(stdout io.Writer) error {
	if e.modelPath == "" || e.paste.dir == "" && e.faceFree == "" {
		return fmt.Errorf("%w: -condition none measures -model with -paste or -face-free only", errUsage)
	}
	var err error
	if e.daemon, err = e.daemonConfig(); err != nil {
		return err
	}
	var samples []dataset.Sample
	if e.paste.dir != "" {
		if samples, err = e.data.load(); err != nil {
			return err
		}
	}
	return e.sceneMeasures(stdout, samples)
}

// daemonConfig is the configuration of -config (posed's defaults without
// it), checked as posed checks it.
func (e *evalFlags) daemonConfig() (config.Config, error) {
	if e.configPath == "" {
		return config.Default(), nil
	}
	c, err := config.Load(e.configPath, assemble.Problems)
	if err != nil {
		return config.Config{}, fmt.Errorf("-config: %w", err)
	}
	return c, nil
}

// framesOf makes the daemon's frame path of cfg around an estimator.
func framesOf(cfg config.Config) func(*pose.Estimator, detect.Calibration) (headpose.Frames, error) {
	return func(est *pose.Estimator, calib detect.Calibration) (headpose.Frames, error) {
		return assemble.Tracker(cfg, est, calib)
	}
}

// maxPhantomFrames is the most frames of a still face-free scene that
// may show a face (#55's audit); eval names the scenes past it.
const maxPhantomFrames = 3

// phantoms counts what the daemon's frame path of cfg, with -model and its
// expert as posed loads them, publishes on each face-free picture of
// -face-free (its held-out third with -face-free-held-out), each the first
// frame of a scene, shrunk to at most 640 pixels on its longer side.
func (e *evalFlags) phantoms(stdout io.Writer, cfg config.Config) error {
	if e.modelPath == "" {
		return fmt.Errorf("%w: -face-free measures -model", errUsage)
	}
	est, m, err := estimator(cfg.Model, cfg.Research, e.modelPath, cfg.Model.Expert)
	if err != nil {
		return err
	}
	pics, err := cascade.ReadPictures(e.faceFree, 640)
	if err != nil {
		return err
	}
	var todo []cascade.Picture
	var imgs []*image.Gray
	for _, p := range pics {
		if !e.heldOutOnly || cascade.HeldOut(p.Name) {
			todo, imgs = append(todo, p), append(imgs, p.Img.Gray())
		}
	}
	// Over every frame of a still scene, not the last alone: the frames
	// that publish a face, and the tracks that do (a phantom the scan
	// finds again and again is many tracks: #55).
	got, err := headpose.StillScenes(imgs, est, framesOf(cfg), detect.CalibrationOf(m.Calibration), e.frames, e.noise, e.testSeed)
	if err != nil {
		return err
	}
	n, faces, scenes := len(todo), 0, 0
	shown, tracks, worst := 0, 0, 0
	var each strings.Builder
	for i, s := range got {
		shown += s.Shown
		tracks += s.Tracks
		worst = max(worst, s.Shown)
		faces += len(s.Last)
		if len(s.Last) > 0 {
			scenes++
		}
		for _, f := range s.Last {
			fmt.Fprintf(&each, "  %s: box %.0f,%.0f %.0f×%.0f, score %.2f, %s", todo[i].Name, f.Box.X, f.Box.Y, f.Box.W, f.Box.H, f.Score, f.View)
			if f.Has[0] {
				fmt.Fprintf(&each, ", yaw %.1f σ %.1f\n", f.Angles[0], f.Std[0])
			} else {
				fmt.Fprintf(&each, ", no angles\n")
			}
		}
	}
	which := "every picture"
	if e.heldOutOnly {
		which = "the held-out third"
	}
	fmt.Fprintf(stdout, "face-free pictures of %s (%s, %d): %.4f faces published per picture (%d faces on %d pictures)\n",
		e.faceFree, which, n, float64(faces)/float64(max(n, 1)), faces, scenes)
	if e.frames > 1 {
		noise := ""
		if e.noise > 0 {
			noise = fmt.Sprintf(", sensor noise σ %g", e.noise)
		}
		fmt.Fprintf(stdout, "over the %d frames of each still scene%s: %.4f of the frames show a face (%d of %d), in %d tracks; the worst scene %d frames\n",
			e.frames, noise, float64(shown)/float64(max(n*e.frames, 1)), shown, n*e.frames, tracks, worst)
		// The scenes past the audit's bound (#55: at most 3 frames of a
		// still scene with a face), the worst first.
		var over []int
		for i, s := range got {
			if s.Shown > maxPhantomFrames {
				over = append(over, i)
			}
		}
		slices.SortStableFunc(over, func(a, b int) int { return got[b].Shown - got[a].Shown })
		for _, i := range over {
			fmt.Fprintf(stdout, "  %s: a face on %d frames, in %d tracks\n", todo[i].Name, got[i].Shown, got[i].Tracks)
		}
	}
	fmt.Fprint(stdout, each.String())
	return nil
}

// cases are the evaluation cases asked for: every condition × refinement
// setting.
func (e *evalFlags) cases() ([]headpose.EvalOptions, error) {
	settings, err := e.rf.settings()
	if err != nil {
		return nil, err
	}
	if !(e.startStd >= 0) {
		return nil, fmt.Errorf("%w: -start-std %g: want 0 (off) or a σ in degrees", errUsage, e.startStd)
	}
	var evals []headpose.EvalOptions
	for _, c := range splitList(e.condition) {
		cond, err := headpose.ParseCondition(c)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		holds := []int{1}
		if cond == headpose.Turning {
			if holds, err = parseInts(e.hold); err != nil || slices.ContainsFunc(holds, func(h int) bool { return h < 1 }) {
				return nil, fmt.Errorf("%w: -hold %q: want frames ≥ 1, comma-separated", errUsage, e.hold)
			}
		}
		for _, st := range settings {
			for _, h := range holds {
				o := headpose.EvalOptions{Condition: cond, Seed: e.testSeed, CentreSigma: e.testSigma, ScaleSigma: e.testScale, Settings: st, StartStd: e.startStd, Hold: h, Noise: e.noise}
				evals = append(evals, o)
				if cond == headpose.Turning && e.alone {
					o.Alone = true
					evals = append(evals, o)
				}
			}
		}
	}
	if len(evals) == 0 {
		return nil, fmt.Errorf("%w: -condition names no condition", errUsage)
	}
	return evals, nil
}

// modelFile measures the model of -model on every image of -data, on the
// kind of face box it was trained on (a data set's convention learnt from
// its own detections).
// foldDetectors reads -turned-folds: one detector per fold of persons,
// facefinder and the turned cascade that left the fold out, and picks
// each face's by its person's fold (cascade.Fold, as posectl cascade
// split them).
func (e *evalFlags) foldDetectors() (func(dataset.Sample) *detect.Detector, error) {
	if e.df.p.Turned {
		return nil, fmt.Errorf("%w: give -turned (the embedded cascade) or -turned-folds, not both", errUsage)
	}
	cs, err := readCascades(e.turnedFolds)
	if err != nil {
		return nil, err
	}
	if k := slices.IndexFunc(cs, turnedSet.none); k >= 0 {
		return nil, fmt.Errorf("%w: -turned-folds: fold %d has no cascade (-): every fold's faces need the cascade that left them out", errUsage, k)
	}
	if len(cs) < 2 {
		return nil, fmt.Errorf("%w: -turned-folds wants one cascade per fold, at least 2; it gives %d", errUsage, len(cs))
	}
	p := e.df.p
	dets := make([]*detect.Detector, len(cs))
	for k, c := range cs {
		if dets[k], err = c.detector(p); err != nil {
			return nil, err
		}
	}
	return func(s dataset.Sample) *detect.Detector { return dets[cascade.Fold(s, len(dets))] }, nil
}

func (e *evalFlags) modelFile(samples []dataset.Sample, det *detect.Detector, evals []headpose.EvalOptions, bar *progressBar) ([]*headpose.Report, *headpose.Bank, string, error) {
	m, err := gllim.ReadFile(e.modelPath)
	if err != nil {
		return nil, nil, "", err
	}
	_, kind, _ := m.Training.Recipe()
	box := headpose.BoxKind(kind)
	if box == "" {
		box = headpose.SquareBox
	}
	bank, err := headpose.NewBank(samples, headpose.BankOptions{Box: box, Detector: det, Cache: *e.cache}, bar.features)
	if err != nil {
		return nil, nil, "", err
	}
	bar.done()
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	var reps []*headpose.Report
	for _, eo := range evals {
		var est *pose.Estimator
		if eo.Condition == headpose.Published {
			// The model as posed loads it: with the expert beside it and
			// the configuration's settings but the case's iterations.
			mc := e.daemon.Model
			mc.Iterations = eo.Settings.MaxIter
			est, _, err = estimator(mc, e.daemon.Research, e.modelPath, mc.Expert)
		} else {
			est, err = pose.New(m, eo.Settings)
		}
		if err != nil {
			return nil, nil, "", err
		}
		eo.Calibration = detect.CalibrationOf(m.Calibration)
		rep, err := headpose.Evaluate(est, bank, all, eo)
		if err != nil {
			return nil, nil, "", err
		}
		reps = append(reps, rep)
	}
	return reps, bank, fmt.Sprintf("%s on %s", e.modelPath, e.data.dirs), nil
}

// crossValidate trains and measures a model per fold (with its profile
// expert under -profile) by -protocol, or sweeps K (-sweep-k, which
// prints its own report and returns no reports).
func (e *evalFlags) crossValidate(stdout io.Writer, samples []dataset.Sample, det *detect.Detector, evals []headpose.EvalOptions, bar *progressBar) ([]*headpose.Report, *headpose.Bank, string, error) {
	o, err := e.mf.options(bar.em)
	if err != nil {
		return nil, nil, "", err
	}
	bo, err := e.mf.bankOptions(det, *e.cache)
	if err == nil {
		bo, err = e.xf.bankOptions(bo)
	}
	if err == nil {
		bo, err = e.mf.backdropPictures(bo)
	}
	if err != nil {
		return nil, nil, "", err
	}
	bank, err := headpose.NewBank(samples, bo, bar.features)
	if err != nil {
		return nil, nil, "", err
	}
	bar.done()
	for _, c := range headpose.ConventionSets(bank.Conventions) {
		fmt.Fprintf(os.Stderr, "box convention %s\n", bank.Conventions[c])
	}
	temps, err := parseFloats(e.learnT)
	if err != nil {
		return nil, nil, "", err
	}
	var expert *headpose.Expert
	if x := e.xf; x.profile > 0 {
		xo, err := x.options(o)
		if err != nil {
			return nil, nil, "", err
		}
		xp, err := x.expert()
		if err != nil {
			return nil, nil, "", err
		}
		expert = &headpose.Expert{Train: xo, Use: xp}
		if e.profileCompare {
			for _, c := range evals[:len(evals):len(evals)] {
				c.NoExpert = true
				evals = append(evals, c)
			}
		}
	}
	lmo, err := e.lf.options()
	if err != nil {
		return nil, nil, "", err
	}
	if lmo != nil && e.lf.compare {
		for _, c := range evals[:len(evals):len(evals)] {
			c.NoLandmarks = true
			evals = append(evals, c)
		}
	}
	enc := gllim.Encoding(e.encoding)
	lo := headpose.LOPOOptions{Train: o, Evals: evals, Set: e.set, Folds: e.folds, Models: e.models, Temperatures: temps, Expert: expert, Landmarks: lmo, Encoding: enc,
		Progress: func(done, total int, f headpose.Fold) { bar.done(); printFold(done, total, f) }}
	if e.sweep != "" {
		ks, err := parseInts(e.sweep)
		if err != nil {
			return nil, nil, "", err
		}
		return nil, nil, "", sweepK(stdout, bank, lo, ks, e.plot)
	}
	var reps []*headpose.Report
	var title string
	switch e.protocol {
	case "holdout":
		reps, _, err = headpose.Holdout(bank, lo, e.holdout, e.holdoutSeed)
		title = fmt.Sprintf("%s, K=%d, %d of %s held out", o.Name(), o.EM.K, e.holdout, e.set)
	case "kfold":
		reps, _, err = headpose.KFold(bank, lo, e.splits, e.holdoutSeed)
		title = fmt.Sprintf("%s, K=%d, %d-fold on %s", o.Name(), o.EM.K, e.splits, e.set)
	default:
		reps, _, err = headpose.LOPO(bank, lo)
		title = fmt.Sprintf("%s, K=%d, LOPO on %s", o.Name(), o.EM.K, e.set)
	}
	if err != nil {
		return nil, nil, "", err
	}
	if o.Members > 1 {
		title += fmt.Sprintf(", %d members", o.Members)
	}
	if enc != "" {
		title += fmt.Sprintf(", %s files", enc)
	}
	if expert != nil {
		u := expert.Use
		from := fmt.Sprintf("%g°", u.Gate)
		if u.ByDensity {
			from += fmt.Sprintf(" or by density (margin %g nats)", u.Margin)
		}
		seed := ""
		if e.xf.seed > 0 {
			seed = fmt.Sprintf(", seed %d", e.xf.seed)
		}
		title += fmt.Sprintf(", profile expert of heads turned %g°+ (K=%d, %d members%s) from %s, weight %g", expert.Train.Profile, expert.Train.EM.K, max(expert.Train.Members, 1), seed, from, max(u.Weight, 0))
		if u.Outputs != nil {
			title += " for " + strings.Join(u.Outputs, ",")
		}
	}
	return reps, bank, title, nil
}

// printFold says how a fold went, on standard error.
func printFold(done, total int, f headpose.Fold) {
	var parts []string
	for _, r := range f.Reports {
		parts = append(parts, r.Case+": "+r.Summary())
	}
	learnt := ""
	if f.Temperature != 0 {
		learnt = fmt.Sprintf(", temperature %g learnt", f.Temperature)
	}
	if s, ok := f.StdScales[pose.Yaw]; ok {
		learnt += fmt.Sprintf(", yaw σ ×%.2f", s)
	}
	fmt.Fprintf(os.Stderr, "fold %d/%d (held out: %s), %d EM iterations%s, %s\n  %s\n", done, total, f.Subject, f.Iterations,
		learnt, f.Elapsed.Round(time.Second), strings.Join(parts, "\n  "))
}

// report prints the reports (markdown, JSON or CSV), writes the per-face
// rows and appends them to the model card, as asked.
func (e *evalFlags) report(stdout io.Writer, args []string, reps []*headpose.Report, bank *headpose.Bank, title string, took time.Duration) error {
	for _, rep := range reps {
		detected := strings.HasPrefix(rep.Case, string(headpose.Detected))
		var err error
		switch {
		case e.asJSON:
			err = rep.JSON(stdout, detected)
		case e.asCSV:
			rep.CSV(stdout)
		default:
			rep.Markdown(stdout, title+", "+rep.Case)
			fmt.Fprintln(stdout)
			rep.YawTable(stdout)
			fmt.Fprintf(stdout, "\n%s: %s; %s\n\n", rep.Case, rep.Summary(), took)
		}
		if err != nil {
			return err
		}
	}
	if e.perFace != "" {
		if err := writePerFace(e.perFace, reps, bank); err != nil {
			return err
		}
	}
	if e.card == "" {
		return nil
	}
	f, err := os.OpenFile(e.card, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "`posectl eval %s` (%s)\n\n", strings.Join(args, " "), took)
	for _, rep := range reps {
		rep.Markdown(f, title+", "+rep.Case)
		fmt.Fprintln(f)
		rep.YawTable(f)
		fmt.Fprintf(f, "\n%s: %s\n\n", rep.Case, rep.Summary())
	}
	return f.Close()
}

// writePerFace writes every report's faces to one CSV file.
func writePerFace(path string, reps []*headpose.Report, bank *headpose.Bank) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	fmt.Fprintln(bw, headpose.PerFaceHeader)
	for _, r := range reps {
		r.PerFace(bw, bank)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sweepK runs LOPO for each K and prints BIC (mean over folds) and MAE.
func sweepK(w io.Writer, bank *headpose.Bank, lo headpose.LOPOOptions, ks []int, plot string) error {
	type row struct {
		k        int
		bic      float64
		mae      map[string]float64
		duration time.Duration
	}
	var rows []row
	lo.Models = "" // the BIC needs each fold's training result
	fmt.Fprintln(w, "| K | BIC (mean over folds) | "+strings.Join(angleHeaders(lo.Train.Angles), " | ")+" |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(lo.Train.Angles)))
	for _, k := range ks {
		start := time.Now()
		lo.Train.EM.K = k
		reps, folds, err := headpose.LOPO(bank, lo)
		if err != nil {
			return err
		}
		rep := reps[0]
		bic := 0.0
		for _, f := range folds {
			bic += f.BIC
		}
		r := row{k: k, bic: bic / float64(len(folds)), mae: map[string]float64{}, duration: time.Since(start)}
		var cells []string
		for _, a := range rep.Angles() {
			r.mae[a] = rep.Stats(a).MAE
			cells = append(cells, fmt.Sprintf("%.2f", r.mae[a]))
		}
		rows = append(rows, r)
		fmt.Fprintf(w, "| %d | %.6g | %s |\n", k, r.bic, strings.Join(cells, " | "))
	}
	if plot == "" {
		return nil
	}
	var xs, bic []float64
	series := map[string][]float64{}
	for _, r := range rows {
		xs = append(xs, float64(r.k))
		bic = append(bic, r.bic)
		for a, v := range r.mae {
			series[a] = append(series[a], v)
		}
	}
	f, err := os.Create(plot)
	if err != nil {
		return err
	}
	writeSweepSVG(f, xs, bic, series)
	return f.Close()
}

func angleHeaders(angles []string) []string {
	var out []string
	for _, a := range angles {
		out = append(out, a+" MAE (°)")
	}
	return out
}

// writeSweepSVG draws two panels side by side: BIC against K, and the MAE
// of each angle against K.
func writeSweepSVG(w io.Writer, ks, bic []float64, mae map[string][]float64) {
	const pw, ph, m = 360, 260, 50
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", 2*pw+40, ph+30)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	panel := func(x0 float64, title string, series map[string][]float64) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range series {
			for _, v := range s {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if hi == lo {
			hi = lo + 1
		}
		kx0, kx1 := ks[0], ks[len(ks)-1]
		if kx1 == kx0 {
			kx1 = kx0 + 1
		}
		px := func(k float64) float64 { return x0 + m + (k-kx0)/(kx1-kx0)*(pw-m-10) }
		py := func(v float64) float64 { return 20 + (hi-v)/(hi-lo)*(ph-m-20) }
		fmt.Fprintf(w, `<text x="%.0f" y="14">%s</text>`+"\n", x0+m, title)
		fmt.Fprintf(w, `<line x1="%.0f" y1="%d" x2="%.0f" y2="%d" stroke="black"/>`+"\n", x0+m, ph-m+10, x0+pw-10, ph-m+10)
		fmt.Fprintf(w, `<line x1="%.0f" y1="20" x2="%.0f" y2="%d" stroke="black"/>`+"\n", x0+m, x0+m, ph-m+10)
		fmt.Fprintf(w, `<text x="%.0f" y="%d" text-anchor="end">%.4g</text><text x="%.0f" y="%d" text-anchor="end">%.4g</text>`+"\n",
			x0+m-4, 24, hi, x0+m-4, ph-m+10, lo)
		for _, k := range ks {
			fmt.Fprintf(w, `<text x="%.0f" y="%d" text-anchor="middle">%g</text>`+"\n", px(k), ph-m+26, k)
		}
		fmt.Fprintf(w, `<text x="%.0f" y="%d" text-anchor="middle">K</text>`+"\n", x0+pw/2, ph-m+42)
		colours := []string{"#1f77b4", "#d62728", "#2ca02c"}
		i := 0
		for _, name := range sortedSeries(series) {
			s := series[name]
			var pts []string
			for j, v := range s {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(ks[j]), py(v)))
			}
			c := colours[i%len(colours)]
			fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
			fmt.Fprintf(w, `<text x="%.0f" y="%d" fill="%s">%s</text>`+"\n", x0+pw-90, 34+14*i, c, name)
			i++
		}
	}
	panel(0, "BIC (mean over folds)", map[string][]float64{"BIC": bic})
	panel(pw+20, "MAE (degrees)", mae)
	fmt.Fprintln(w, "</svg>")
}

func sortedSeries(m map[string][]float64) []string {
	var out []string
	for _, a := range pose.AngleNames {
		if _, ok := m[a]; ok {
			out = append(out, a)
		}
	}
	if _, ok := m["BIC"]; ok {
		out = append(out, "BIC")
	}
	return out
}
