package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgepose/posed/train/dataset/datatest"

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
		datatest.Missing(t, "data set not available: %v", err)
	}
	out := filepath.Join(t.TempDir(), "small.gllim")
	var buf bytes.Buffer
	err := runTrain([]string{"-data", dir, "-variant", "pose", "-lw", "1", "-k", "4", "-max-iter", "20", "-members", "2", "-calibrate-std", "0.2", "-cache", t.TempDir(), "-o", out}, &buf)
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
	if bytes.Contains(card, []byte("NaN")) {
		t.Errorf("the card of a model of yaw and pitch tells a NaN: %s", card)
	}
	for _, want := range []string{"K = 4", "an ensemble of 2", "members = 2", "pointing04: 2790 images", "σ scale", "calibrate_std", "## Measured accuracy",
		"worst difference from float32 on the 2790 training faces: yaw ",
		"Face boxes: canonical", "| pointing04 | -0.0"} {
		if !bytes.Contains(card, []byte(want)) {
			t.Errorf("model card lacks %q", want)
		}
	}
	// Read as the direction faced, Pointing'04's heads have a roll to
	// learn, and the card says how the labels were read.
	rolled := filepath.Join(t.TempDir(), "faced.gllim")
	err = runTrain([]string{"-data", dir, "-pointing04", "faced", "-angles", "yaw,pitch,roll", "-variant", "pose", "-lw", "1", "-k", "4", "-max-iter", "5", "-calibrate-std", "0", "-encoding", "float32", "-cache", t.TempDir(), "-o", rolled}, io.Discard)
	if err != nil {
		t.Fatalf("-pointing04 faced with roll: %v", err)
	}
	if card, err := os.ReadFile(strings.TrimSuffix(rolled, ".gllim") + ".md"); err != nil || !bytes.Contains(card, []byte("Pan and tilt read as the direction faced")) {
		t.Errorf("the card of a model trained with -pointing04 faced does not say so: %v", err)
	}
	buf.Reset()
	img := filepath.Join(dir, "Person02", "person02145+0-15.jpg")
	if err := runPredict([]string{"-model", out, img}, &buf); err != nil || !strings.Contains(buf.String(), `"yaw"`) {
		t.Errorf("predict with the trained model: %v, %s", err, buf.String())
	}
	buf.Reset()
	if err := runInspect([]string{out}, &buf); err != nil || !strings.Contains(buf.String(), "ensemble    2 models") || !strings.Contains(buf.String(), "format version 3, half-precision") ||
		!strings.Contains(buf.String(), "convention  pointing04") {
		t.Errorf("inspect: %v\n%s", err, buf.String())
	}
}

// posectl eval -protocol kfold measures every condition and number of
// refinement steps asked for on the same models, prints the errors by
// |yaw| bin, and writes one row per test face and case to -per-face.
func TestEvalKFoldPerFace(t *testing.T) {
	dir := filepath.Join(dataset.Root(), "pointing04")
	if _, err := os.Stat(dir); err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	perFace, cache := filepath.Join(t.TempDir(), "faces.csv"), t.TempDir()
	args := []string{"-protocol", "kfold", "-splits", "5", "-folds", "1", "-data", dir, "-variant", "pose-bb", "-shifts", "1", "-k", "4", "-max-iter", "10", "-cache", cache}
	var buf bytes.Buffer
	err := runEval(append(args, "-condition", "annotated,detected", "-iterations", "1,2", "-per-face", perFace), &buf)
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"5-fold on pointing04", "annotated, 1 iteration", "annotated, 2 iterations", "detected, 2 iterations", "| 75–90° | 168 |", "% detected"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(perFace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	// One fold of 5 holds 3 of the 15 persons: 558 faces, under 4 cases.
	if len(lines) != 1+4*558 || !strings.HasPrefix(lines[0], "case,fold,set,subject,path,found,yaw_true") {
		t.Errorf("per-face file: %d lines, want a header and %d rows; header %q", len(lines), 4*558, lines[0])
	}

	// -turned finds the test faces with the turned cascade too, but the
	// models are the same: the box conventions stay facefinder's, so the
	// annotated faces' predictions do not move.
	turned := filepath.Join(t.TempDir(), "turned.csv")
	buf.Reset()
	if err := runEval(append(args, "-condition", "annotated,detected", "-iterations", "1", "-turned", "-per-face", turned), &buf); err != nil {
		t.Fatal(err)
	}
	rows := func(path, cas string) map[string][]string {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, r := range recs[1:] {
			if strings.HasPrefix(r[0], cas) {
				out[r[4]] = r[1:]
			}
		}
		return out
	}
	before, after := rows(perFace, "annotated, 1 iteration"), rows(turned, "annotated, 1 iteration")
	if len(before) != 558 || len(after) != 558 {
		t.Fatalf("annotated rows: %d without -turned, %d with, want 558", len(before), len(after))
	}
	for path, r := range before {
		if !slices.Equal(r, after[path]) {
			t.Fatalf("%s: -turned changed the model's prediction from annotated boxes:\n%v\n%v", path, r, after[path])
		}
	}
	views := map[string]int{}
	for _, r := range rows(turned, "detected") {
		views[r[len(r)-1]]++
	}
	if views["yaw+"] == 0 || views["yaw-"] == 0 || views["frontal"] == 0 {
		t.Errorf("views of the detected faces with -turned: %v, want each of frontal, yaw+, yaw-", views)
	}

	// -start-std checks the detections as posed does: a face is found
	// only if found without the check and its yaw σ is within the bound,
	// with the same prediction. The bound is between the found faces' σ
	// about the median (the file rounds σ; no face is at the bound).
	unchecked := rows(turned, "detected")
	var stds []float64
	for _, r := range unchecked {
		if r[4] == "true" {
			sd, err := strconv.ParseFloat(r[11], 64)
			if err != nil {
				t.Fatal(err)
			}
			stds = append(stds, sd)
		}
	}
	slices.Sort(stds)
	m := len(stds) / 2
	for m+1 < len(stds) && stds[m+1] == stds[m] {
		m++
	}
	bound := (stds[m] + stds[min(m+1, len(stds)-1)]) / 2
	checked := filepath.Join(t.TempDir(), "checked.csv")
	buf.Reset()
	if err := runEval(append(args, "-condition", "detected", "-iterations", "1", "-turned", "-start-std", strconv.FormatFloat(bound, 'g', -1, 64), "-per-face", checked), &buf); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for path, r := range rows(checked, "detected, 1 iteration, averaged, started at yaw σ ≤") {
		w := unchecked[path]
		sd, _ := strconv.ParseFloat(w[11], 64)
		switch wantFound := w[4] == "true" && sd <= bound; {
		case wantFound != (r[4] == "true"):
			t.Fatalf("%s: -start-std %g: found %s; without the check found %s, yaw σ %s", path, bound, r[4], w[4], w[11])
		case wantFound && !slices.Equal(r[5:], w[5:]):
			t.Fatalf("%s: -start-std changed the prediction:\n%v\n%v", path, r, w)
		case wantFound:
			kept++
		}
	}
	if kept == 0 || kept == len(stds) {
		t.Errorf("-start-std %g kept %d of %d found faces, want some but not all", bound, kept, len(stds))
	}

	// -turned-folds picks each face's cascade by its person's fold: with
	// the embedded cascade as every fold's, it finds what -turned finds.
	c := "../../infer/detect/cascade/turned"
	folds := filepath.Join(t.TempDir(), "folds.csv")
	buf.Reset()
	if err := runEval(append(args, "-condition", "detected", "-iterations", "1", "-turned-folds", c+","+c, "-per-face", folds), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "the turned cascade that never saw the person") {
		t.Errorf("report does not say which cascades detected:\n%s", buf.String())
	}
	want, got := rows(turned, "detected"), rows(folds, "detected")
	if len(got) != 558 {
		t.Fatalf("%d detected rows with -turned-folds, want 558", len(got))
	}
	for path, r := range want {
		if !slices.Equal(r, got[path]) {
			t.Fatalf("%s: -turned-folds with the embedded cascade for every fold differs from -turned:\n%v\n%v", path, r, got[path])
		}
	}
	// -encoding q8 measures each fold's model as it loads from a q8 file:
	// the same faces, their yaw moved on some, by 0.1° on average and by
	// more than 1° on at most 1 % (with a refinement step a rounding that
	// tips one face's mixture weights moves its box too: 2.6° on one face
	// of this small model, 0.04° on average).
	q8 := filepath.Join(t.TempDir(), "q8.csv")
	buf.Reset()
	if err := runEval(append(args, "-condition", "annotated", "-iterations", "1", "-encoding", "q8", "-per-face", q8), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "q8 files") {
		t.Errorf("report does not say the models were measured as q8 files:\n%s", buf.String())
	}
	encoded, moved, far, sum := rows(q8, "annotated, 1 iteration"), 0, 0, 0.0
	if len(encoded) != 558 {
		t.Fatalf("%d annotated rows with -encoding q8, want 558", len(encoded))
	}
	for path, r := range before {
		y0, err0 := strconv.ParseFloat(r[8], 64)
		y1, err1 := strconv.ParseFloat(encoded[path][8], 64)
		if err0 != nil || err1 != nil {
			t.Fatalf("%s: yaw %q, %q", path, r[8], encoded[path][8])
		}
		d := math.Abs(y1 - y0)
		sum += d
		if d > 0 {
			moved++
		}
		if d > 1 {
			far++
		}
	}
	t.Logf("-encoding q8 moved the yaw of %d of 558 faces, %.3f° on average, %d by more than 1°", moved, sum/558, far)
	if moved == 0 {
		t.Error("-encoding q8 moved no face's yaw: the models were not round-tripped")
	}
	if sum/558 > 0.1 || far > 558/100 {
		t.Errorf("-encoding q8 moved yaw by %.3f° on average and %d faces by more than 1°: want ≤ 0.1° and ≤ 1 %%", sum/558, far)
	}

	for _, bad := range [][]string{{"-turned-folds", c}, {"-turned-folds", "-," + c}, {"-turned", "-turned-folds", c + "," + c}, {"-profile", "30", "-profile-density", "lots"}, {"-start-std", "-1"}, {"-encoding", "int4"}, {"-condition", "turning", "-noise", "-3"}, {"-pointing04", "tilted"}, {"-landmarks", "-landmark-members", "0"}, {"-landmarks", "-landmark-pitch-range", "1.5"},
		{"-profile-augment", "rotate:1:20"}, {"-profile", "30", "-profile-augment", "spin:1"}, {"-profile", "30", "-profile-augment-sets", "pointing04"},
		{"-profile", "30", "-profile-augment", "backdrop:1"}, {"-backdrops", t.TempDir()}} {
		if err := runEval(append(args, bad...), io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("eval %v: %v, want a usage error", bad, err)
		}
	}
}

// An evaluation whose card cannot be appended to fails before it runs,
// not after hours of training.
func TestEvalCardCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-card.md")
	err := runEval([]string{"-protocol", "kfold", "-data", filepath.Join(t.TempDir(), "no-data"), "-card", missing}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-card") || !strings.Contains(err.Error(), missing) {
		t.Errorf("eval with a missing card: %v, want an error naming -card and the file", err)
	}
}

// An unknown -encoding is refused by train and eval with the encodings
// this build has, taken from the file format's own list.
func TestEncodingFlagNamesTheEncodings(t *testing.T) {
	_, _, trainErr := (&trainFlags{encoding: "int4", temps: "1"}).checked()
	evalErr := runEval([]string{"-protocol", "kfold", "-data", filepath.Join(t.TempDir(), "no-data"), "-encoding", "int4"}, io.Discard)
	for name, err := range map[string]error{"train": trainErr, "eval": evalErr} {
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `"int4"`) {
			t.Errorf("%s -encoding int4: %v, want a usage error naming it", name, err)
			continue
		}
		for _, e := range gllim.Encodings() {
			if !strings.Contains(err.Error(), `"`+string(e)+`"`) {
				t.Errorf("%s -encoding int4: %v does not name %q", name, err, e)
			}
		}
	}
}

// -model-sets and -model-repeat are the model's, -profile-sets and
// -profile-repeat the expert's: neither inherits the other's, and a
// malformed count is a usage error naming its flag.
func TestSetFlagsAreTheirModels(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var m modelFlags
	var x expertFlags
	m.register(fs)
	x.register(fs)
	if err := fs.Parse([]string{"-model-sets", "aflw2000", "-model-repeat", "aflw2000=2", "-model-max-pitch", "pointing04=30", "-profile", "30", "-profile-sets", "pointing04,aflw2000"}); err != nil {
		t.Fatal(err)
	}
	o, err := m.options(nil)
	if err != nil {
		t.Fatal(err)
	}
	xo, err := x.options(o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Sets, []string{"aflw2000"}) || o.Repeat["aflw2000"] != 2 || o.MaxPitch["pointing04"] != 30 {
		t.Errorf("the model: sets %v, repeat %v, max pitch %v", o.Sets, o.Repeat, o.MaxPitch)
	}
	if !slices.Equal(xo.Sets, []string{"pointing04", "aflw2000"}) || len(xo.Repeat) != 0 || len(xo.MaxPitch) != 0 {
		t.Errorf("the expert: sets %v, repeat %v, max pitch %v; want its own sets and no repeat or bound", xo.Sets, xo.Repeat, xo.MaxPitch)
	}
	m.maxPitch = "pointing04=95"
	if _, err := m.options(nil); err == nil || !strings.Contains(err.Error(), "-model-max-pitch") {
		t.Errorf("-model-max-pitch pointing04=95: %v, want an error naming the flag", err)
	}
	m.maxPitch = ""
	m.repeat = "aflw2000=x"
	if _, err := m.options(nil); err == nil || !strings.Contains(err.Error(), "-model-repeat") {
		t.Errorf("-model-repeat aflw2000=x: %v, want an error naming the flag", err)
	}
}
