package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/headpose"
)

func runEval(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var data dataFlags
	var mf modelFlags
	var df detectFlags
	var rf refineListFlags
	data.register(fs, dataRoot()+"/pointing04")
	mf.register(fs)
	df.register(fs, 40)
	rf.register(fs)
	cache := cacheFlag(fs)
	protocol := fs.String("protocol", "", "lopo: leave one person of -set out, a model per fold; kfold: -splits folds of -set's persons; holdout: train once, test on -holdout persons of -set")
	holdout := fs.Int("holdout", 300, "holdout: persons of -set kept for testing")
	holdoutSeed := fs.Uint64("holdout-seed", 1, "holdout and kfold: seed of the draw of persons")
	splits := fs.Int("splits", 5, "kfold: number of folds")
	modelPath := fs.String("model", "", "evaluate this model on -data (no training)")
	condition := fs.String("condition", "annotated", "test boxes, a comma-separated list of: annotated (the face boxes), shifted (seeded Gaussian moves), detected (the detector's)")
	folds := fs.Int("folds", 0, "lopo and kfold: run only the first N folds")
	set := fs.String("set", "pointing04", "lopo, kfold, holdout: the data set whose persons are left out")
	testSigma := fs.Float64("test-centre-sigma", 0.1, "shifted: σ of test box moves, in box sides")
	testScale := fs.Float64("test-scale-sigma", 0.1, "shifted: σ of test box log-scale changes")
	testSeed := fs.Uint64("test-seed", 5, "shifted: seed of the test box moves")
	asJSON := fs.Bool("json", false, "print one JSON object per evaluation case")
	asCSV := fs.Bool("csv", false, "print CSV")
	perFace := fs.String("per-face", "", "write every test face's truth, prediction, σ and boxes to this CSV file")
	sweep := fs.String("sweep-k", "", "lopo: comma-separated K values to compare by BIC and MAE")
	plot := fs.String("plot", "", "with -sweep-k: write an SVG plot of BIC and MAE against K")
	card := fs.String("card", "", "append the measured accuracy to this model card")
	learnT := fs.String("learn-temperature", "", "each fold chooses its temperature among these, as posectl train does, on 20 % of its training persons held out of a second training (cases without -temperature use it)")
	profile := fs.Float64("profile", 0, "also train a profile expert per fold on the faces with |yaw| ≥ this (each mirrored to turn one way) and let it answer for turned heads")
	profileGate := fs.Float64("profile-gate", 40, "with -profile: the model's |yaw| from which the expert answers")
	profileK := fs.Int("profile-k", 0, "with -profile: the expert's mixture components (0: -k)")
	profileMembers := fs.Int("profile-members", 1, "with -profile: the expert's ensemble members")
	profileWeight := fs.Float64("profile-weight", 1, "with -profile: the weight of the expert's answer against the model's (1: it replaces it)")
	profileOutputs := fs.String("profile-outputs", "", "with -profile: the outputs the expert answers (comma-separated; default all)")
	profileCompare := fs.Bool("profile-compare", false, "with -profile: also measure each case without the expert (the same models)")
	models := fs.String("models", "", "keep each fold's trained model in this folder and reuse it when the training settings and images are the same (to measure other test-time settings without training again)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*protocol != "") == (*modelPath != "") {
		return fmt.Errorf("%w: give either -protocol lopo|kfold|holdout or -model FILE", errUsage)
	}
	switch *protocol {
	case "", "lopo", "kfold", "holdout":
	default:
		return fmt.Errorf("%w: -protocol %q is not lopo, kfold or holdout", errUsage, *protocol)
	}
	settings, err := rf.settings()
	if err != nil {
		return err
	}
	var evals []headpose.EvalOptions
	for _, c := range splitList(*condition) {
		cond, err := headpose.ParseCondition(c)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		for _, st := range settings {
			evals = append(evals, headpose.EvalOptions{Condition: cond, Seed: *testSeed, CentreSigma: *testSigma, ScaleSigma: *testScale, Settings: st})
		}
	}
	if len(evals) == 0 {
		return fmt.Errorf("%w: -condition names no condition", errUsage)
	}
	samples, err := data.load()
	if err != nil {
		return err
	}
	det, err := detect.New(df.p)
	if err != nil {
		return err
	}
	for i := range evals {
		evals[i].Detector = det
	}
	bar := newProgressBar()
	start := time.Now()
	title := ""
	var reps []*headpose.Report
	var bank *headpose.Bank
	if *modelPath != "" {
		m, err := gllim.ReadFile(*modelPath)
		if err != nil {
			return err
		}
		// Test on the kind of face box the model was trained on; a data set's
		// convention is learnt from its own detections.
		_, kind, _ := m.Training.Recipe()
		box := headpose.BoxKind(kind)
		if box == "" {
			box = headpose.SquareBox
		}
		if bank, err = headpose.NewBank(samples, headpose.BankOptions{Box: box, Detector: det, Cache: *cache}, bar.features); err != nil {
			return err
		}
		bar.done()
		all := make([]int, len(samples))
		for i := range all {
			all[i] = i
		}
		for _, eo := range evals {
			est, err := pose.New(m, eo.Settings)
			if err != nil {
				return err
			}
			eo.Calibration = detect.CalibrationOf(m.Calibration)
			rep, err := headpose.Evaluate(est, bank, all, eo)
			if err != nil {
				return err
			}
			reps = append(reps, rep)
		}
		title = fmt.Sprintf("%s on %s", *modelPath, data.dirs)
	} else {
		o, err := mf.options(bar.em)
		if err != nil {
			return err
		}
		bo, err := mf.bankOptions(det, *cache)
		if err != nil {
			return err
		}
		if bank, err = headpose.NewBank(samples, bo, bar.features); err != nil {
			return err
		}
		bar.done()
		for _, c := range headpose.ConventionSets(bank.Conventions) {
			fmt.Fprintf(os.Stderr, "box convention %s\n", bank.Conventions[c])
		}
		temps, err := parseFloats(*learnT)
		if err != nil {
			return err
		}
		var expert *headpose.Expert
		if *profile > 0 {
			xo := o
			xo.Profile, xo.Members = *profile, *profileMembers
			if *profileK > 0 {
				xo.EM.K = *profileK
			}
			expert = &headpose.Expert{Train: xo, Gate: *profileGate, Weight: *profileWeight, Outputs: splitList(*profileOutputs)}
			if *profileCompare {
				for _, e := range evals[:len(evals):len(evals)] {
					e.NoExpert = true
					evals = append(evals, e)
				}
			}
		}
		lo := headpose.LOPOOptions{Train: o, Evals: evals, Set: *set, Folds: *folds, Models: *models, Temperatures: temps, Expert: expert,
			Progress: func(done, total int, f headpose.Fold) {
				bar.done()
				var parts []string
				for _, r := range f.Reports {
					parts = append(parts, r.Case+": "+r.Summary())
				}
				learnt := ""
				if f.Temperature != 0 {
					learnt = fmt.Sprintf(", temperature %g learnt", f.Temperature)
				}
				fmt.Fprintf(os.Stderr, "fold %d/%d (held out: %s), %d EM iterations%s, %s\n  %s\n", done, total, f.Subject, f.Iterations,
					learnt, f.Elapsed.Round(time.Second), strings.Join(parts, "\n  "))
			}}
		if *sweep != "" {
			ks, err := parseInts(*sweep)
			if err != nil {
				return err
			}
			return sweepK(stdout, bank, lo, ks, *plot)
		}
		switch *protocol {
		case "holdout":
			reps, _, err = headpose.Holdout(bank, lo, *holdout, *holdoutSeed)
			title = fmt.Sprintf("%s, K=%d, %d of %s held out", o.Name(), o.EM.K, *holdout, *set)
		case "kfold":
			reps, _, err = headpose.KFold(bank, lo, *splits, *holdoutSeed)
			title = fmt.Sprintf("%s, K=%d, %d-fold on %s", o.Name(), o.EM.K, *splits, *set)
		default:
			reps, _, err = headpose.LOPO(bank, lo)
			title = fmt.Sprintf("%s, K=%d, LOPO on %s", o.Name(), o.EM.K, *set)
		}
		if err != nil {
			return err
		}
		if o.Members > 1 {
			title += fmt.Sprintf(", %d members", o.Members)
		}
		if expert != nil {
			title += fmt.Sprintf(", profile expert of heads turned %g°+ (K=%d, %d members) from %g°, weight %g", expert.Train.Profile, expert.Train.EM.K, max(expert.Train.Members, 1), expert.Gate, max(expert.Weight, 0))
			if expert.Outputs != nil {
				title += " for " + strings.Join(expert.Outputs, ",")
			}
		}
	}
	took := time.Since(start).Round(time.Second)
	for _, rep := range reps {
		detected := strings.HasPrefix(rep.Case, string(headpose.Detected))
		switch {
		case *asJSON:
			err = rep.JSON(stdout, detected)
		case *asCSV:
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
	if *perFace != "" {
		if err := writePerFace(*perFace, reps, bank); err != nil {
			return err
		}
	}
	if *card != "" {
		f, err := os.OpenFile(*card, os.O_APPEND|os.O_WRONLY, 0)
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
	return nil
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
