package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

func runTrain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var data dataFlags
	var mf modelFlags
	var df detectFlags
	data.register(fs, dataRoot()+"/pointing04")
	mf.register(fs)
	df.register(fs, 40)
	out := fs.String("o", "model.gllim", "model file to write")
	card := fs.String("card", "", "model card to write (default: the model file with .md)")
	calibrate := fs.Bool("calibrate", true, "learn the detector-box calibration from the training images")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	samples, err := data.load()
	if err != nil {
		return err
	}
	bar := newProgressBar()
	o, err := mf.options(bar.em)
	if err != nil {
		return err
	}
	start := time.Now()
	bank, err := headpose.NewBank(samples, mf.bankOptions(), bar.features)
	bar.done()
	if err != nil {
		return err
	}
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	m, res, err := headpose.Train(bank, all, o)
	bar.done()
	if err != nil {
		return err
	}
	if *calibrate {
		det, err := detect.New(df.p)
		if err != nil {
			return err
		}
		c, n := headpose.LearnCalibration(bank, all, det)
		if n > 0 {
			m.Calibration = &gllim.BoxCalibration{Detector: "pigo-facefinder", DX: c.DX, DY: c.DY, Scale: c.Scale, N: n}
		}
	}
	if err := gllim.WriteFile(*out, m); err != nil {
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
	return nil
}

// modelCard describes a trained model: what it predicts, the data and its
// terms, the settings. `posectl eval -card` appends measured accuracy.
func modelCard(path string, m *gllim.Model, samples []dataset.Sample, took time.Duration) string {
	var b strings.Builder
	t := m.Training
	fmt.Fprintf(&b, "# Model card: %s\n\n", path)
	fmt.Fprintf(&b, "Head-pose model for posed: %s, K = %d, Lw = %d, trained by `%s` on %s in %s.\n\n",
		t.Settings["name"], m.Params.K, m.Params.Lw, t.Tool, t.Date, took.Round(time.Second))
	b.WriteString("## Outputs\n\n| output | unit | training mean | spread |\n|---|---|---|---|\n")
	for _, o := range m.Outputs {
		fmt.Fprintf(&b, "| %s | %s | %.3g | %.3g |\n", o.Name, o.Unit, o.Mean, o.Scale)
	}
	b.WriteString("\nAngles: yaw > 0 turns the nose to the image's left, pitch > 0 looks up (AFLW2000 convention). ")
	b.WriteString("dx, dy move the box centre in box sides, ds is the log of the size change.\n\n")
	b.WriteString("## Data and terms\n\n")
	count := map[string]int{}
	var sets []string
	for _, s := range samples {
		if count[s.Set] == 0 {
			sets = append(sets, s.Set)
		}
		count[s.Set]++
	}
	for _, s := range sets {
		fmt.Fprintf(&b, "- %s: %d images. %s\n", s, count[s], dataset.Terms(s))
	}
	b.WriteString("\nThe model inherits the most restrictive of these terms.\n\n## Settings\n\n")
	for _, k := range sortedKeys(t.Settings) {
		fmt.Fprintf(&b, "- %s = %s\n", k, t.Settings[k])
	}
	fmt.Fprintf(&b, "\nTraining samples (with augmentation): %d; EM iterations: %d; log-likelihood %.6g; BIC %.6g.\n", t.N, t.Iterations, t.LogL, t.BIC)
	if c := m.Calibration; c != nil {
		fmt.Fprintf(&b, "\nDetector calibration (%s, from %d matched detections): centre moved by (%+.3f, %+.3f) box sides, size ×%.3f.\n", c.Detector, c.N, c.DX, c.DY, c.Scale)
	}
	b.WriteString("\n## Measured accuracy\n\n")
	return b.String()
}
