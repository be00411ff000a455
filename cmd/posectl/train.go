package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// trainFlags are posectl train's flags.
type trainFlags struct {
	data                       dataFlags
	mf                         modelFlags
	df                         detectFlags
	xf                         expertFlags
	lf                         landmarkFlags
	cache                      *string
	out, card, encoding, temps string
	fileVersion                int
	stdFrac                    float64
	calibrate, expertOnly      bool
	landmarksOnly              bool
}

func (t *trainFlags) register(fs *flag.FlagSet) {
	t.data.register(fs, dataRoot()+"/pointing04")
	t.mf.register(fs)
	t.df.register(fs, 40)
	t.xf.register(fs)
	t.lf.register(fs, false)
	t.cache = cacheFlag(fs)
	fs.StringVar(&t.out, "o", "model.gllim", "model file to write")
	fs.StringVar(&t.card, "card", "", "model card to write (default: the model file with .md)")
	fs.BoolVar(&t.calibrate, "calibrate", true, "square and annotated boxes: learn the detector-box calibration from the training images (canonical boxes are the detector's)")
	fs.StringVar(&t.encoding, "encoding", "half", "weights in the file: half (binary16 with exact component centres: half the size, checked against float32 on the training faces), q8 (A as 8-bit integers: a third of the size, checked likewise with looser bounds) or float32")
	fs.IntVar(&t.fileVersion, "file-version", 0, "model file version: 0 (the newest the model needs: 4 with -pca, else 3), or 1 (a single model) or 2 (an ensemble) for daemons built before version 3 (float32 only)")
	fs.Float64Var(&t.stdFrac, "calibrate-std", 0.2, "fraction of persons held out to calibrate the predictive σ of the angles and choose the temperature (0: neither)")
	fs.StringVar(&t.temps, "temperatures", "1,2,4,8,16,32,64,128", "temperatures of the mixture weights tried on the held-out persons of -calibrate-std; the most accurate is stored in the model (1: the mixture's own weights)")
	fs.BoolVar(&t.expertOnly, "expert-only", false, "with -profile: train only the profile expert of the model already at -o (trained with the same flags), keeping that model")
	fs.BoolVar(&t.landmarksOnly, "landmarks-only", false, "with -landmarks: train only the landmark expert of the model already at -o, keeping that model and its profile expert")
}

// checked returns the weights' encoding and the temperatures asked for,
// or a usage error.
func (tf *trainFlags) checked() (gllim.Encoding, []float64, error) {
	enc := gllim.Encoding(tf.encoding)
	if !enc.Known() {
		return "", nil, fmt.Errorf("%w: -encoding %q is not one of %q", errUsage, tf.encoding, gllim.Encodings())
	}
	ts, err := parseFloats(tf.temps)
	if err != nil {
		return "", nil, err
	}
	for _, t := range ts {
		if !(t >= 1) {
			return "", nil, fmt.Errorf("%w: -temperatures: %g is below 1", errUsage, t)
		}
	}
	return enc, ts, nil
}

// bank reads the data sets and extracts their features at the boxes of
// the recipe: the samples, the bank, the detector and the training options.
func (tf *trainFlags) bank(bar *progressBar) ([]dataset.Sample, *headpose.Bank, *detect.Detector, headpose.Options, error) {
	samples, err := tf.data.load()
	if err != nil {
		return nil, nil, nil, headpose.Options{}, err
	}
	o, err := tf.mf.options(bar.em)
	if err != nil {
		return nil, nil, nil, o, err
	}
	det, err := detect.New(tf.df.p)
	if err != nil {
		return nil, nil, nil, o, err
	}
	bo, err := tf.mf.bankOptions(det, *tf.cache)
	if err == nil {
		bo, err = tf.xf.bankOptions(bo)
	}
	bo.NoFeatures = tf.landmarksOnly // the landmarks need the pictures and boxes only
	if err == nil {
		bo, err = tf.mf.backdropPictures(bo)
	}
	if err != nil {
		return nil, nil, nil, o, err
	}
	bank, err := headpose.NewBank(samples, bo, bar.features)
	bar.done()
	if err != nil {
		return nil, nil, nil, o, err
	}
	for _, c := range headpose.ConventionSets(bank.Conventions) {
		fmt.Fprintf(os.Stderr, "box convention %s\n", bank.Conventions[c])
	}
	return samples, bank, det, o, nil
}

func runTrain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var tf trainFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	xf := tf.xf
	out, card, fileVersion, stdFrac, expertOnly, calibrate := &tf.out, &tf.card, &tf.fileVersion, &tf.stdFrac, &tf.expertOnly, &tf.calibrate
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	enc, ts, err := tf.checked()
	if err != nil {
		return err
	}
	start := time.Now()
	bar := newProgressBar()
	samples, bank, det, o, err := tf.bank(bar)
	if err != nil {
		return err
	}
	temps := &tf.temps
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	lmo, err := tf.lf.options()
	if err != nil {
		return err
	}
	if tf.landmarksOnly {
		if lmo == nil || *expertOnly {
			return fmt.Errorf("%w: -landmarks-only needs -landmarks, and not -expert-only", errUsage)
		}
		return writeLandmarks(stdout, *out, bank, all, *lmo)
	}
	if *expertOnly {
		if xf.profile <= 0 {
			return fmt.Errorf("%w: -expert-only needs -profile", errUsage)
		}
		m, err := gllim.ReadFile(*out)
		if err != nil {
			return fmt.Errorf("-expert-only: the model: %w", err)
		}
		return writeExpert(stdout, *out, m, bank, all, o, xf, enc, *fileVersion, bar)
	}
	m, res, err := headpose.Train(bank, all, o)
	bar.done()
	if err != nil {
		return err
	}
	if *calibrate && bank.Box != headpose.CanonicalBox {
		c, n := headpose.LearnCalibration(bank, all, det)
		if n > 0 {
			m.Calibration = &gllim.BoxCalibration{Detector: "pigo-facefinder", DX: c.DX, DY: c.DY, Scale: c.Scale, N: n}
		}
	}
	if *stdFrac > 0 {
		if err := calibrateHeldOut(m, bank, all, o, *stdFrac, ts, *temps, bar); err != nil {
			return err
		}
	}
	if err := writeModelFile(*out, m, bank, all, enc, *fileVersion, 0); err != nil {
		return err
	}
	cardPath := *card
	if cardPath == "" {
		cardPath = strings.TrimSuffix(*out, ".gllim") + ".md"
	}
	if err := os.WriteFile(cardPath, []byte(modelCard(*out, m, samples, time.Since(start))), 0o644); err != nil {
		return fmt.Errorf("writing model card: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (%s, K=%d, Lw=%d, %d samples, %d EM iterations, logL %.6g, BIC %.6g) and %s in %s\n",
		*out, o.Name(), m.Params.K, m.Params.Lw, res.N, res.Iterations, res.LogL, res.BIC, cardPath, time.Since(start).Round(time.Second))
	if xf.profile > 0 {
		if err := writeExpert(stdout, *out, m, bank, all, o, xf, enc, *fileVersion, bar); err != nil {
			return err
		}
	}
	if lmo != nil {
		return writeLandmarks(stdout, *out, bank, all, *lmo)
	}
	return nil
}

// writeLandmarks trains the landmark expert of the model at out on the
// bank's images all and writes it beside it (MODEL-landmarks.gllim, in
// float32: it is 19 features wide, a few kilobytes).
func writeLandmarks(stdout io.Writer, out string, bank *headpose.Bank, all []int, o headpose.LandmarkOptions) error {
	path := strings.TrimSuffix(out, ".gllim") + "-landmarks.gllim"
	m, err := headpose.TrainLandmarks(bank, all, o)
	if err != nil {
		return err
	}
	if err := gllim.WriteFile(path, m); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: landmark expert (K=%d, Lw=%d, %d training faces with their mirrors, σ %s)\n",
		path, m.Params.K, m.Params.Lw, m.Training.N/2, m.Training.Settings["calibrate_std"])
	return nil
}

// writeExpert trains the profile expert of the model m at out and writes
// it beside it (MODEL-profile.gllim).
func writeExpert(stdout io.Writer, out string, m *gllim.Model, bank *headpose.Bank, all []int, o headpose.Options, xf expertFlags, enc gllim.Encoding, v int, bar *progressBar) error {
	path := strings.TrimSuffix(out, ".gllim") + "-profile.gllim"
	x, err := trainExpert(m, bank, all, o, xf)
	bar.done()
	if err != nil {
		return err
	}
	if err := writeModelFile(path, x, bank, all, enc, v, xf.profile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: profile expert of |yaw| ≥ %g (K=%d, %d members), answering from the model's |yaw| ≥ %g with weight %g\n",
		path, xf.profile, x.Params.K, len(x.Members)+1, xf.gate, xf.weight)
	return nil
}

// calibrateHeldOut trains o again without frac of the persons and, on
// them, chooses m's temperature among temps and scales its σ to the errors
// (where the daemon uses them: on moved boxes after refinement for models
// that refine, on the face boxes otherwise).
func calibrateHeldOut(m *gllim.Model, bank *headpose.Bank, all []int, o headpose.Options, frac float64, temps []float64, tempsFlag string, bar *progressBar) error {
	eo := headpose.HeldOutCondition(o)
	fmt.Fprintf(os.Stderr, "calibrating σ and the temperature: training again without %.0f %% of the persons\n", 100*frac)
	temp, scales, rep, err := headpose.LearnHeldOut(bank, all, o, eo, frac, o.EM.Seed, temps, "")
	bar.done()
	if err != nil {
		return err
	}
	if temp > 1 {
		m.Temperature = temp
	}
	headpose.SetStdScales(m, scales)
	m.Training.Settings["calibrate_std"] = fmt.Sprintf("%g of persons, %d faces, %s boxes: temperature %g of %s (mean MAE %.2f°)",
		frac, len(rep.Faces), eo.Condition, max(temp, 1), tempsFlag, rep.MeanMAE())
	return nil
}

// writeModelFile writes m to path in encoding enc (half: checked against
// float32 on every training face, or for a profile expert of |yaw| ≥
// profile > 0 on the turned ones as it sees them) and file version v.
func writeModelFile(path string, m *gllim.Model, bank *headpose.Bank, all []int, enc gllim.Encoding, v int, profile float64) error {
	if v != 0 && v < 3 {
		enc = gllim.Float32
		if m.Temperature > 1 {
			fmt.Fprintf(os.Stderr, "file version %d has no temperature: the model is written with its own weights (T = 1), not the T = %g chosen\n", v, m.Temperature)
			m.Temperature = 0
		}
	}
	if bound, ok := encodingBounds[enc]; ok {
		// A compact file must predict as the float32 one does, within its
		// encoding's bounds, on every training face it is to answer.
		cost, err := headpose.EncodingError(m, enc, bank, all, profile)
		if err != nil {
			return err
		}
		if cost.N == 0 {
			return fmt.Errorf("%s encoding: no training face with |yaw| ≥ %g to check it on", enc, profile)
		}
		faces := fmt.Sprintf("the %d training faces", len(all))
		if profile > 0 {
			faces = fmt.Sprintf("the training faces with |yaw| ≥ %g, turned one way", profile)
		}
		w, mean := cost.Worst, cost.Mean
		// The angles the model predicts (one without roll has no roll
		// difference to tell: NaN before).
		var angles []int
		var worst, avg []string
		for i, name := range pose.AngleNames {
			if m.OutputIndex(name) >= 0 {
				angles = append(angles, i)
				worst = append(worst, fmt.Sprintf("%s %.3f°", name, w[i]))
				avg = append(avg, fmt.Sprintf("%.3f°", mean[i]))
			}
		}
		note := fmt.Sprintf("worst difference from float32 on %s: %s; mean %s", faces, strings.Join(worst, ", "), strings.Join(avg, ", "))
		fmt.Fprintf(os.Stderr, "%s, %s encoding: %s\n", path, enc, note)
		for _, i := range angles {
			if w[i] > bound.worst || mean[i] > bound.mean {
				return fmt.Errorf("%s encoding moves %s by %.3f° on a training face (%.3f° on average), more than %g° (%g°): write -encoding float32",
					enc, pose.AngleNames[i], w[i], mean[i], bound.worst, bound.mean)
			}
		}
		m.Training.Settings["encoding"] = string(enc) + ": " + note
	}
	m.Encoding = enc
	return gllim.WriteFileWith(path, m, gllim.MarshalOptions{Version: v, Encoding: enc})
}

// expertFlags are posectl train's profile expert.
type expertFlags struct {
	profile, gate, weight float64
	k, members            int
	seed                  uint64
	outputs, density      string
	repeat, sets          string
	augment, augmentSets  string
}

// bankOptions adds the expert's own views (-profile-augment) to the bank's
// options bo.
func (x *expertFlags) bankOptions(bo headpose.BankOptions) (headpose.BankOptions, error) {
	if x.augment == "" {
		if x.augmentSets != "" {
			return bo, fmt.Errorf("%w: -profile-augment-sets needs -profile-augment", errUsage)
		}
		return bo, nil
	}
	if x.profile <= 0 {
		return bo, fmt.Errorf("%w: -profile-augment needs -profile", errUsage)
	}
	aug, err := headpose.ParseAugmentations(x.augment)
	if err != nil {
		return bo, fmt.Errorf("%w: -profile-augment: %v", errUsage, err)
	}
	bo.ExpertAugment, bo.ExpertAugmentSets = aug, splitList(x.augmentSets)
	return bo, nil
}

// options are the expert's training options: the model's recipe o on the
// faces turned past -profile, with the expert's size and seed.
func (x *expertFlags) options(o headpose.Options) (headpose.Options, error) {
	xo := o
	xo.Profile, xo.Members = x.profile, x.members
	rep, err := parseSetCounts("-profile-repeat", x.repeat)
	if err != nil {
		return xo, err
	}
	xo.Repeat = rep
	xo.Sets = splitList(x.sets) // the model's own -model-sets are not the expert's
	xo.MaxPitch = nil           // nor its -model-max-pitch
	if x.k > 0 {
		xo.EM.K = x.k
	}
	if x.seed > 0 {
		xo.EM.Seed = x.seed
	}
	return xo, nil
}

// expert is how the daemon is to use the expert these flags describe.
func (x *expertFlags) expert() (pose.Expert, error) {
	xp := pose.Expert{Gate: x.gate, Weight: x.weight, Outputs: splitList(x.outputs)}
	if x.density != "" {
		m, err := strconv.ParseFloat(x.density, 64)
		if err != nil {
			return pose.Expert{}, fmt.Errorf("%w: -profile-density %q: want a number of nats", errUsage, x.density)
		}
		xp.ByDensity, xp.Margin = true, m
	}
	return xp, nil
}

func (x *expertFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&x.profile, "profile", 0, "also train a profile expert on the faces with |yaw| ≥ this, each mirrored to turn one way (train: written as MODEL-profile.gllim; eval: one per fold); the daemon hands it the faces the model finds turned past -profile-gate")
	fs.Float64Var(&x.gate, "profile-gate", 40, "the model's |yaw| from which the expert answers")
	fs.IntVar(&x.k, "profile-k", 0, "the expert's mixture components (0: -k)")
	fs.IntVar(&x.members, "profile-members", 1, "the expert's ensemble members")
	fs.Uint64Var(&x.seed, "profile-seed", 0, "the expert's EM seed (its members take this and the next ones; 0: -seed), to measure how its figures move with the seed")
	fs.Float64Var(&x.weight, "profile-weight", 1, "the weight of the expert's answer against the model's (1: it replaces it)")
	fs.StringVar(&x.outputs, "profile-outputs", "", "the outputs the expert answers (comma-separated; default all)")
	fs.StringVar(&x.sets, "profile-sets", "", "the data sets the expert learns from, comma-separated (default: every set of -data, whatever -model-sets says)")
	fs.StringVar(&x.repeat, "profile-repeat", "", "weigh some data sets' turned faces more in the expert: set=N,… repeats each of their rows N times (e.g. aflw2000=2 for the faces in the wild)")
	fs.StringVar(&x.augment, "profile-augment", "", "views of the training images that only the expert trains on, as -augment (e.g. rotate:1:20: one view turned in the image plane by up to ±20°); the model's rows do not change")
	fs.StringVar(&x.augmentSets, "profile-augment-sets", "", "the data sets -profile-augment applies to (comma-separated; empty: all)")
	fs.StringVar(&x.density, "profile-density", "", "below the gate, also hand the expert the faces whose features (or mirrored features) it explains within this many nats of the model's log-density (empty: the gate alone)")
}

// trainExpert trains the profile expert of m's recipe o on every training
// face turned past x.profile. It shares m's temperature and σ factors (no
// held-out persons of its own: its faces are the held-out training's
// turned ones) and records how the daemon is to use it.
func trainExpert(m *gllim.Model, bank *headpose.Bank, all []int, o headpose.Options, x expertFlags) (*gllim.Model, error) {
	xo, err := x.options(o)
	if err != nil {
		return nil, err
	}
	xp, err := x.expert()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "training the profile expert: |yaw| ≥ %g, K=%d, %d members\n", x.profile, xo.EM.K, max(xo.Members, 1))
	xm, _, err := headpose.Train(bank, all, xo)
	if err != nil {
		return nil, err
	}
	xm.Temperature = m.Temperature
	for i := range xm.Outputs {
		xm.Outputs[i].StdScale = m.Outputs[i].StdScale
	}
	s := xm.Training.Settings
	s[pose.ExpertGate] = strconv.FormatFloat(xp.Gate, 'g', -1, 64)
	s[pose.ExpertWeight] = strconv.FormatFloat(xp.Weight, 'g', -1, 64)
	s[pose.ExpertOutputs] = strings.Join(xp.Outputs, ",")
	if xp.ByDensity {
		s[pose.ExpertDensity] = strconv.FormatFloat(xp.Margin, 'g', -1, 64)
	}
	// The daemon must be able to use what is written.
	est, err := pose.New(m, pose.DefaultSettings())
	if err != nil {
		return nil, err
	}
	xp.Model = xm
	if _, err := est.WithExpert(xp); err != nil {
		return nil, err
	}
	return xm, nil
}

// encodingBounds are, per compact encoding, the largest difference and the
// largest mean difference, in degrees, that it may make to the training
// faces' predicted angles. Half's rounding is 2⁻¹¹ of each value; q8's
// grid is coarser, and moved the shipped model's yaw on Pointing'04's
// faces by 0.05° on average, 1.3° at worst (a face between two components
// whose weights the rounding tips).
var encodingBounds = map[gllim.Encoding]struct{ worst, mean float64 }{gllim.Half: {0.05, 0.05}, gllim.Q8: {2, 0.1}}

// modelCard describes a trained model: what it predicts, the data and its
// terms, the settings. `posectl eval -card` appends measured accuracy.
func modelCard(path string, m *gllim.Model, samples []dataset.Sample, took time.Duration) string {
	var b strings.Builder
	t := m.Training
	fmt.Fprintf(&b, "# Model card: %s\n\n", path)
	name, _, _ := t.Recipe()
	ens := ""
	if n := len(m.Members) + 1; n > 1 {
		_, _, seed := t.Recipe()
		seeds := make([]string, n)
		for i := range seeds {
			seeds[i] = strconv.FormatUint(seed+uint64(i), 10)
		}
		ens = fmt.Sprintf(", an ensemble of %d such models fitted from EM seeds %s whose predictions are averaged", n, strings.Join(seeds, ", "))
	}
	fmt.Fprintf(&b, "Head-pose model for posed: %s, K = %d, Lw = %d%s, trained by `%s` on %s in %s.\n\n",
		name, m.Params.K, m.Params.Lw, ens, t.Tool, t.Date, took.Round(time.Second))
	b.WriteString("## Outputs\n\n| output | unit | training mean | spread | σ scale |\n|---|---|---|---|---|\n")
	for _, o := range m.Outputs {
		fmt.Fprintf(&b, "| %s | %s | %.3g | %.3g | %s |\n", o.Name, o.Unit, o.Mean, o.Scale, stdScale(o))
	}
	if m.Temperature > 1 {
		fmt.Fprintf(&b, "\nMixture weights tempered at prediction by T = %g (ν_k ∝ π_k p(y|k)^(1/T)), chosen on held-out persons.\n", m.Temperature)
	}
	b.WriteString("\nAngles: yaw > 0 turns the nose to the image's left, pitch > 0 looks up (AFLW2000 convention). ")
	b.WriteString("dx, dy move the box centre in box sides, ds is the log of the size change. ")
	b.WriteString("σ scale multiplies the model's predictive standard deviation so that it matches the errors on persons held out of a second training (`-calibrate-std`); – : not calibrated.\n\n")
	b.WriteString("## Data and terms\n\n")
	count := map[string]int{}
	reading := map[string]string{} // how a set's angles were read, where it says
	var sets []string
	for _, s := range samples {
		if count[s.Set] == 0 {
			sets = append(sets, s.Set)
		}
		count[s.Set]++
		if a := s.Reading.About(); a != "" {
			reading[s.Set] = " " + a
		}
	}
	for _, s := range sets {
		fmt.Fprintf(&b, "- %s: %d images.%s %s\n", s, count[s], reading[s], dataset.Terms(s))
	}
	b.WriteString("\nThe model inherits the most restrictive of these terms.\n\n## Settings\n\n")
	for _, k := range sortedKeys(t.Settings) {
		fmt.Fprintf(&b, "- %s = %s\n", k, t.Settings[k])
	}
	first := ""
	if len(m.Members) > 0 {
		first = " (first member)"
	}
	fmt.Fprintf(&b, "\nTraining samples (with augmentation): %d; EM iterations%s: %d; log-likelihood %.6g; BIC %.6g.\n", t.N, first, t.Iterations, t.LogL, t.BIC)
	if len(m.Conventions) > 0 {
		b.WriteString("\nFace boxes: canonical, the detector's own (pigo's square, taken as it is: no calibration). ")
		b.WriteString("Each data set's annotated boxes were mapped to it by the set's convention, learnt from its matched detections ")
		b.WriteString("(the median move from the annotated square to the detection):\n\n| data set | centre dx | centre dy | size × | detected |\n|---|---|---|---|---|\n")
		for _, c := range m.Conventions {
			fmt.Fprintf(&b, "| %s | %+.3f | %+.3f | %.3f | %d of %d |\n", c.Set, c.DX, c.DY, c.Scale, c.N, c.Faces)
		}
	} else if c := m.Calibration; c != nil {
		fmt.Fprintf(&b, "\nDetector calibration (%s, from %d matched detections): centre moved by (%+.3f, %+.3f) box sides, size ×%.3f.\n", c.Detector, c.N, c.DX, c.DY, c.Scale)
	}
	b.WriteString("\n## Measured accuracy\n\n" + measuredIntro)
	return b.String()
}

// measuredIntro says how to read the rows posectl eval -card appends.
const measuredIntro = "Appended by `posectl eval -card` (`make eval` for the default model), each\n" +
	"table with its command as run. The tables measure the recipe, not this file:\n" +
	"each fold trains its own model, with the command's settings, without the\n" +
	"persons it is tested on (Pointing'04: leave one person out; AFLW2000: 5\n" +
	"folds of its 1475 faces within ±99°, Pointing'04 always in training).\n" +
	"MAE, STD and RMSE in degrees; mean is the mean of the angles' MAEs.\n" +
	"\"annotated\": each face's canonical box (its annotated box mapped by its\n" +
	"data set's convention, placed by its yaw where the detector puts its box\n" +
	"with `-yaw-boxes`); \"shifted\": those boxes moved by seeded 10 % Gaussian\n" +
	"moves of centre and log-scale; \"detected\": pigo's boxes as they are,\n" +
	"errors over the faces found. Then the refinement of the row's iterations\n" +
	"(\"averaged\": the mean of the iterations' angles is reported), at the\n" +
	"row's temperature T of the mixture weights. IoU is with the canonical box,\n" +
	"before → after refinement. The |yaw| tables say where the error is.\n"

func stdScale(o gllim.Output) string {
	if o.StdScale == 0 {
		return "–"
	}
	return fmt.Sprintf("×%.3g", o.StdScale)
}

// landmarkFlags configure the landmark expert (-landmarks): trained beside
// the model by posectl train, beside each fold's by posectl eval.
type landmarkFlags struct {
	on, compare   bool
	k, lw, m      int
	outputs, sets string
	rho, gate     float64
	pitchRange    float64
}

func (l *landmarkFlags) register(fs *flag.FlagSet, compare bool) {
	d := headpose.DefaultLandmarkOptions()
	fs.BoolVar(&l.on, "landmarks", false, "also train a landmark expert: the angles from the face network's five landmarks, fused with the model's by their σ (written as MODEL-landmarks.gllim)")
	fs.IntVar(&l.k, "landmark-k", d.EM.K, "the landmark expert's components")
	fs.IntVar(&l.lw, "landmark-lw", d.EM.Lw, "the landmark expert's latent dimensions")
	fs.IntVar(&l.m, "landmark-members", 1, "the landmark expert's ensemble members (EM seeds 1, 2, …; each adds its K components to the file and a prediction per look)")
	fs.StringVar(&l.outputs, "landmark-outputs", "", "the angles the landmark expert's answer is fused into, comma-separated (default: yaw, pitch and roll)")
	fs.StringVar(&l.sets, "landmark-sets", "", "the data sets the landmark expert learns from, comma-separated (default: every set of -data)")
	fs.Float64Var(&l.gate, "landmark-gate", 0, "fuse the landmark expert where the model's |yaw| is below this many degrees (0: at any yaw)")
	fs.Float64Var(&l.rho, "landmark-rho", 0, "the correlation of the model's and the landmark expert's errors, in units of their σ, that the fused σ counts (measured on held-out persons)")
	fs.Float64Var(&l.pitchRange, "landmark-pitch-range", 0, "fuse the landmark expert's pitch only where the model's |pitch| is below the |pitch| of this share of its training faces (0: at any pitch; e.g. 0.95)")
	if compare {
		fs.BoolVar(&l.compare, "landmarks-compare", false, "with -landmarks: also measure each case without the landmark expert (the same models)")
	}
}

// options are the landmark expert's training options, nil without -landmarks.
func (l *landmarkFlags) options() (*headpose.LandmarkOptions, error) {
	if !l.on {
		if l.compare {
			return nil, fmt.Errorf("%w: -landmarks-compare needs -landmarks", errUsage)
		}
		return nil, nil
	}
	o := headpose.DefaultLandmarkOptions()
	if l.k < 1 || l.lw < 0 {
		return nil, fmt.Errorf("%w: -landmark-k %d -landmark-lw %d: want K ≥ 1 and Lw ≥ 0", errUsage, l.k, l.lw)
	}
	if l.m < 1 || l.m > 16 {
		return nil, fmt.Errorf("%w: -landmark-members %d: want 1 to 16", errUsage, l.m)
	}
	o.EM.K, o.EM.Lw, o.Rho, o.Gate, o.Members = l.k, l.lw, l.rho, l.gate, l.m
	if !(l.gate >= 0 && l.gate <= 90) {
		return nil, fmt.Errorf("%w: -landmark-gate %g: want 0 (off) to 90 degrees", errUsage, l.gate)
	}
	if !(l.rho > -1 && l.rho < 1) {
		return nil, fmt.Errorf("%w: -landmark-rho %g: want a correlation in (−1, 1)", errUsage, l.rho)
	}
	if !(l.pitchRange >= 0 && l.pitchRange <= 1) {
		return nil, fmt.Errorf("%w: -landmark-pitch-range %g: want a share of the training faces in [0, 1]", errUsage, l.pitchRange)
	}
	o.PitchRange = l.pitchRange
	if sets := splitList(l.sets); len(sets) > 0 {
		o.Sets = sets
	}
	for _, n := range splitList(l.outputs) {
		if !slices.Contains(pose.AngleNames[:], n) {
			return nil, fmt.Errorf("%w: -landmark-outputs: %q is not yaw, pitch or roll", errUsage, n)
		}
		o.Outputs = append(o.Outputs, n)
	}
	return &o, nil
}
