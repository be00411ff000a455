package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

// posectl train writes a model file that the daemon's loader accepts, with
// the detector calibration and calibrated angle uncertainties, an ensemble
// of the members asked for, and its model card; the file predicts with
// posectl predict and posectl inspect describes it.
func TestTrainWritesUsableModel(t *testing.T) {
	dir := filepath.Join(dataset.Root(), "pointing04")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("data set not available: %v", err)
	}
	out := filepath.Join(t.TempDir(), "small.gllim")
	var buf bytes.Buffer
	err := runTrain([]string{"-data", dir, "-variant", "pose", "-lw", "1", "-k", "4", "-max-iter", "20", "-members", "2", "-calibrate-std", "0.2", "-o", out}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(buf.String()))
	m, err := gllim.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Params.K != 4 || m.Params.Lw != 1 || m.Calibration == nil || m.Calibration.N == 0 || len(m.Members) != 1 {
		t.Errorf("K %d, Lw %d, %d members, calibration %+v", m.Params.K, m.Params.Lw, len(m.Members)+1, m.Calibration)
	}
	for _, a := range []string{pose.Yaw, pose.Pitch} {
		// The raw σ is several times below the held-out error.
		if s := m.Outputs[m.OutputIndex(a)].StdScale; !(s > 1.5) {
			t.Errorf("%s: σ scale %g, want a calibration above 1.5", a, s)
		}
	}
	card, err := os.ReadFile(strings.TrimSuffix(out, ".gllim") + ".md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"K = 4", "an ensemble of 2", "members = 2", "pointing04: 2790 images", "σ scale", "calibrate_std", "## Measured accuracy"} {
		if !bytes.Contains(card, []byte(want)) {
			t.Errorf("model card lacks %q", want)
		}
	}
	buf.Reset()
	img := filepath.Join(dir, "Person02", "person02145+0-15.jpg")
	if err := runPredict([]string{"-model", out, img}, &buf); err != nil || !strings.Contains(buf.String(), `"yaw"`) {
		t.Errorf("predict with the trained model: %v, %s", err, buf.String())
	}
	buf.Reset()
	if err := runInspect([]string{out}, &buf); err != nil || !strings.Contains(buf.String(), "ensemble    2 models") || !strings.Contains(buf.String(), "format version 2") {
		t.Errorf("inspect: %v\n%s", err, buf.String())
	}
}
