package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
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
	var rf refineFlags
	data.register(fs, dataRoot()+"/pointing04")
	mf.register(fs)
	df.register(fs, 40)
	rf.register(fs)
	protocol := fs.String("protocol", "", "lopo: leave one person out, a model per fold; holdout: train once, test on -holdout persons of -set")
	holdout := fs.Int("holdout", 300, "holdout: persons of -set kept for testing")
	holdoutSeed := fs.Uint64("holdout-seed", 1, "holdout: seed of the draw")
	modelPath := fs.String("model", "", "evaluate this model on -data (no training)")
	condition := fs.String("condition", "annotated", "test boxes: annotated, shifted (seeded Gaussian moves) or detected")
	folds := fs.Int("folds", 0, "lopo: run only the first N folds")
	set := fs.String("set", "pointing04", "lopo: the data set whose persons are left out")
	testSigma := fs.Float64("test-centre-sigma", 0.1, "shifted: σ of test box moves, in box sides")
	testScale := fs.Float64("test-scale-sigma", 0.1, "shifted: σ of test box log-scale changes")
	testSeed := fs.Uint64("test-seed", 5, "shifted: seed of the test box moves")
	asJSON := fs.Bool("json", false, "print one JSON object")
	asCSV := fs.Bool("csv", false, "print CSV")
	sweep := fs.String("sweep-k", "", "lopo: comma-separated K values to compare by BIC and MAE")
	plot := fs.String("plot", "", "with -sweep-k: write an SVG plot of BIC and MAE against K")
	card := fs.String("card", "", "append the measured accuracy to this model card")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cond, err := headpose.ParseCondition(*condition)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if (*protocol != "") == (*modelPath != "") {
		return fmt.Errorf("%w: give either -protocol lopo|holdout or -model FILE", errUsage)
	}
	if *protocol != "" && *protocol != "lopo" && *protocol != "holdout" {
		return fmt.Errorf("%w: -protocol %q is not lopo or holdout", errUsage, *protocol)
	}
	samples, err := data.load()
	if err != nil {
		return err
	}
	bar := newProgressBar()
	eo := headpose.EvalOptions{Condition: cond, Seed: *testSeed, CentreSigma: *testSigma, ScaleSigma: *testScale, Settings: rf.s}
	if cond == headpose.Detected {
		if eo.Detector, err = detect.New(df.p); err != nil {
			return err
		}
	}
	start := time.Now()
	title := ""
	var rep *headpose.Report
	if *modelPath != "" {
		m, err := gllim.ReadFile(*modelPath)
		if err != nil {
			return err
		}
		est, err := pose.New(m, rf.s)
		if err != nil {
			return err
		}
		// Test on the kind of face box the model was trained on.
		bank, err := headpose.NewBank(samples, headpose.BankOptions{Box: headpose.BoxKind(m.Training.Settings["box"])}, bar.features)
		bar.done()
		if err != nil {
			return err
		}
		eo.Calibration = detect.CalibrationOf(m.Calibration)
		all := make([]int, len(samples))
		for i := range all {
			all[i] = i
		}
		if rep, err = headpose.Evaluate(est, bank, all, eo); err != nil {
			return err
		}
		title = fmt.Sprintf("%s on %s, %s boxes", *modelPath, data.dirs, cond)
	} else {
		o, err := mf.options(bar.em)
		if err != nil {
			return err
		}
		bank, err := headpose.NewBank(samples, mf.bankOptions(), bar.features)
		bar.done()
		if err != nil {
			return err
		}
		lo := headpose.LOPOOptions{Train: o, Eval: eo, Set: *set, Folds: *folds,
			Progress: func(done, total int, f headpose.Fold) {
				bar.done()
				fmt.Fprintf(os.Stderr, "fold %d/%d (held out: %s): %s, %d EM iterations, %s\n", done, total, f.Subject, f.Report.Summary(), f.Iterations, f.Elapsed.Round(time.Second))
			}}
		if *sweep != "" {
			ks, err := parseInts(*sweep)
			if err != nil {
				return err
			}
			return sweepK(stdout, bank, lo, ks, *plot)
		}
		if *protocol == "holdout" {
			rep, _, err = headpose.Holdout(bank, lo, *holdout, *holdoutSeed)
			title = fmt.Sprintf("%s, K=%d, %d of %s held out, %s boxes", o.Name(), o.EM.K, *holdout, *set, cond)
		} else {
			rep, _, err = headpose.LOPO(bank, lo)
			title = fmt.Sprintf("%s, K=%d, LOPO on %s, %s boxes", o.Name(), o.EM.K, *set, cond)
		}
		if err != nil {
			return err
		}
	}
	switch {
	case *asJSON:
		err = rep.JSON(stdout, cond == headpose.Detected)
	case *asCSV:
		rep.CSV(stdout)
	default:
		rep.Markdown(stdout, title)
		fmt.Fprintf(stdout, "\n%s; %s\n", rep.Summary(), time.Since(start).Round(time.Second))
	}
	if err == nil && *card != "" {
		f, ferr := os.OpenFile(*card, os.O_APPEND|os.O_WRONLY, 0)
		if ferr != nil {
			return ferr
		}
		fmt.Fprintf(f, "`posectl eval %s`\n\n", strings.Join(args, " "))
		rep.Markdown(f, title)
		fmt.Fprintf(f, "\n%s\n\n", rep.Summary())
		err = f.Close()
	}
	return err
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
	fmt.Fprintln(w, "| K | BIC (mean over folds) | "+strings.Join(angleHeaders(lo.Train.Angles), " | ")+" |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(lo.Train.Angles)))
	for _, k := range ks {
		start := time.Now()
		lo.Train.EM.K = k
		rep, folds, err := headpose.LOPO(bank, lo)
		if err != nil {
			return err
		}
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
