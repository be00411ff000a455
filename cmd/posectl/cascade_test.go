package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// posectl cascade and detections refuse a split of the persons that names
// no part of them, or windows per face that are not a count, saying which
// flag is wrong, before loading any data.
func TestCascadeSplitRefused(t *testing.T) {
	turned := "../../infer/detect/cascade/turned"
	for _, c := range []struct {
		cmd  func([]string, *bytes.Buffer) error
		args []string
		want string
	}{
		{cascadeCmd, []string{"-o", "x", "-folds", "1", "-leave-out", "0"}, "-folds 1"},
		{cascadeCmd, []string{"-o", "x", "-folds", "5", "-leave-out", "5"}, "-leave-out 5 is not a fold"},
		{cascadeCmd, []string{"-o", "x", "-folds", "5"}, "without -leave-out"},
		{cascadeCmd, []string{"-o", "x", "-half", "0", "-folds", "5", "-leave-out", "1"}, "-half and -folds"},
		{cascadeCmd, []string{"-o", "x", "-half", "2"}, "-half 2"},
		{cascadeCmd, []string{"-o", "x", "-set-jitter", "aflw2000=0"}, `-set-jitter "aflw2000=0"`},
		{cascadeCmd, []string{"-o", "x", "-tilt-jitter", "aflw2000"}, `-tilt-jitter "aflw2000"`},
		{cascadeCmd, []string{"-o", "x", "-tilt-jitter", "aflw2000=72", "-tilt", "95"}, "-tilt 95"},
		{cascadeCmd, []string{"-o", "x", "-backdrops", "pointing04"}, "-rotations, which is 0"},
		{cascadeCmd, []string{"-o", "x", "-calibrate", "1"}, "-calibrate 1"},
		{detectionsCmd, []string{"-folds", "2", "-cascades", turned + "," + turned + "," + turned}, "wants up to 2 cascades"},
		{detectionsCmd, []string{"-folds", "5"}, "wants up to 5 cascades"},
		{detectionsCmd, []string{"-folds", "5", "-cascades", "-,-"}, "wants up to 5 cascades"},
		{detectionsCmd, []string{"-half", "0", "-cascades", "-," + turned}, "goes with -folds"},
		{detectionsCmd, []string{"-folds", "5", "-leave-out", "1", "-cascades", turned}, "-leave-out is for posectl cascade"},
	} {
		err := c.cmd(c.args, &bytes.Buffer{})
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

func cascadeCmd(args []string, out *bytes.Buffer) error    { return runCascade(args, out) }
func detectionsCmd(args []string, out *bytes.Buffer) error { return runDetections(args, out) }

// posectl detections -folds N measures the folds whose cascade is given;
// "-" in a fold's place leaves it out (to measure one fold's variant).
func TestDetectionsMeasureGivenFolds(t *testing.T) {
	turned := "../../infer/detect/cascade/turned"
	cs, err := readCascades("-," + turned + ",-")
	if err != nil {
		t.Fatal(err)
	}
	measured := cascadeData{folds: 5, half: -1}.measured(cs)
	for part, want := range []bool{false, true, false, false, false} {
		if measured(part) != want {
			t.Errorf("fold %d measured: %v, want %v", part, measured(part), want)
		}
	}
}

// With -model, posectl detections counts the faces posed would publish
// beside the boxes: on Pointing'04 photographs, with the turned views
// and facefinder from a score of 0.5 (many false boxes), the model's check
// refuses most false boxes and keeps the faces.
func TestDetectionsCountPublished(t *testing.T) {
	samples, err := dataset.Read(filepath.Join(dataset.Root(), "pointing04"))
	if err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	var some []dataset.Sample
	for i, s := range samples {
		if i%10 == 0 {
			some = append(some, s)
		}
	}
	check, err := newStartCheck("../../models/default.gllim")
	if err != nil {
		t.Fatal(err)
	}
	p := detect.DefaultParams()
	p.MinSize, p.MinScore, p.Turned, p.TurnedScore = 40, 0.5, true, 0.5
	d, err := detect.New(p)
	if err != nil {
		t.Fatal(err)
	}
	all := func(int) bool { return true }
	r, err := cascade.Measure(func(int) *detect.Detector { return d }, "pointing04", some, func(dataset.Sample) int { return 0 }, all, check.published())
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, n := range r.Found {
		found += n
	}
	t.Logf("%d photos, %d faces found; false boxes %d (%d on the face), false faces published %d (%d)", r.Photos, found, r.Falses, r.Near, r.PubFalses, r.PubNear)
	if r.Photos != len(some) || found < r.Photos*3/4 {
		t.Errorf("%d of %d photos measured, %d faces found", r.Photos, len(some), found)
	}
	if r.Falses < 10 || r.PubFalses*2 > r.Falses || r.PubNear > r.Near {
		t.Errorf("false boxes %d (%d on the face), published %d (%d): want some boxes and at most half of them published", r.Falses, r.Near, r.PubFalses, r.PubNear)
	}
	if _, err := newStartCheck(filepath.Join(t.TempDir(), "none.gllim")); err == nil || !strings.Contains(err.Error(), "-model") {
		t.Errorf("a missing model: %v, want an error naming -model", err)
	}
}

// -backdrops mattes the training faces of the sets it names that the view
// holds, read again in colour, and refuses a set no training face is from.
func TestBackdropMattes(t *testing.T) {
	all, err := dataset.Read(filepath.Join(datatest.Root(t), "pointing04"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []dataset.Sample
	var imgs []*image.Gray
	for _, s := range all {
		if s.Subject == "1" && s.Series == 1 && s.Pitch == 0 {
			g, err := dataset.LoadGray(s.Path)
			if err != nil {
				t.Fatal(err)
			}
			samples, imgs = append(samples, s), append(imgs, g)
		}
	}
	out, made, failed, err := mattes(samples, imgs, cascade.View{Lo: 40, Hi: 90}, []string{"pointing04"})
	if err != nil {
		t.Fatal(err)
	}
	turned := 0
	for i, s := range samples {
		if s.Yaw >= 40 || s.Yaw <= -40 {
			turned++
		} else if out[i] != nil {
			t.Errorf("%s (yaw %g, outside the view) got a matte", s.Path, s.Yaw)
		}
	}
	if turned == 0 || made+failed != turned || failed > 0 {
		t.Errorf("%d mattes made and %d failed of %d turned faces, want all %d made", made, failed, turned, turned)
	}
	_, _, _, err = mattes(samples, imgs, cascade.View{Lo: 40, Hi: 90}, []string{"pointing04", "aflw"})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `"aflw"`) {
		t.Errorf("a set without faces: %v, want a usage error naming it", err)
	}
}

// A fold's entry may join cascades by +: each becomes a view of its own,
// as trained and mirrored, beside facefinder; an empty name is refused.
func TestCascadesJoinedByPlus(t *testing.T) {
	turned := "../../infer/detect/cascade/turned"
	cs, err := readCascades(turned + "," + turned + "+" + turned)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, set := range cs {
		sizes = append(sizes, len(set))
	}
	if !slices.Equal(sizes, []int{1, 2}) {
		t.Fatalf("sets of %v cascades, want [1 2]", sizes)
	}
	d, err := cs[1].detector(detect.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var views []detect.View
	for _, v := range d.Views() {
		views = append(views, v.View)
	}
	want := []detect.View{detect.Frontal, detect.YawPositive, detect.YawNegative, detect.YawPositive, detect.YawNegative}
	if !slices.Equal(views, want) {
		t.Errorf("views %v, want %v", views, want)
	}
	if _, err := readCascades(turned + "+"); err == nil || !strings.Contains(err.Error(), "empty name") {
		t.Errorf("a trailing +: error %v, want one naming the empty name", err)
	}
}

// posectl cut writes a cascade's first N trees, which pigo's format
// reads back as the whole cascade's first stages; a count outside the
// cascade and a file that is no cascade are refused, naming what is
// wrong, and nothing is written.
func TestCut(t *testing.T) {
	turned := "../../infer/detect/cascade/turned"
	n := 291 // the end of the embedded turned cascade's 20th stage, of 22 (posectl cascade printed them)
	out := filepath.Join(t.TempDir(), "turned-20")
	var buf bytes.Buffer
	if err := runCut([]string{"-trees", strconv.Itoa(n), turned, out}, &buf); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := detect.ParseCascade(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := detect.Turned().Cut(n)
	if got.Trees() != n || !slices.Equal(got.Codes, want.Codes) || !slices.Equal(got.Leaves, want.Leaves) || !slices.Equal(got.Thresholds, want.Thresholds) {
		t.Errorf("cut after %d trees: %d trees, not the embedded cascade's first %d", n, got.Trees(), n)
	}
	if !strings.Contains(buf.String(), fmt.Sprintf("the first %d of", n)) {
		t.Errorf("output %q", buf.String())
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-trees", "0", turned, out + "x"}, "-trees 0"},
		{[]string{"-trees", "339", turned, out + "x"}, "has 338 trees"},
		{[]string{"-trees", "5", turned}, "got 1 arguments"},
		{[]string{"-trees", "5", bad, out + "x"}, "bad cascade"},
	} {
		if err := runCut(c.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out + "x"); err == nil {
		t.Error("a refused cut wrote its output")
	}
}
