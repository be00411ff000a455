package headpose

import (
	"bytes"
	"encoding/csv"
	"image"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train"
	"github.com/edgepose/posed/train/dataset"
)

// A report counts only what was measured: an unlabelled angle is not an
// error of 0, a face the detector missed has no error at all; the yaw
// table puts each face in its bin of true |yaw|, and the per-face file
// has a row for every face with empty cells where nothing is known.
func TestReportCountsOnlyLabelledAngles(t *testing.T) {
	samples := []dataset.Sample{
		{Set: "cars", Path: "a.jpg", Subject: "1", Yaw: 10, HasYaw: true, Pitch: 5, HasPitch: true},
		{Set: "cars", Path: "b.jpg", Subject: "2", Yaw: -50, HasYaw: true},    // pitch unlabelled
		{Set: "cars", Path: "c.jpg", Subject: "3", Pitch: 20, HasPitch: true}, // yaw unlabelled
		{Set: "cars", Path: "d.jpg", Subject: "4", Yaw: 80, HasYaw: true, Pitch: 0, HasPitch: true},
	}
	b := &Bank{Samples: samples}
	box := feature.Box{X: 1, Y: 2, W: 30, H: 30}
	face := func(i int, found bool, pred [3]float64) FaceResult {
		f := FaceResult{Sample: i, Fold: "1", Found: found, Pred: pred, Face: box, Test: box, Refined: box, IoU: [2]float64{1, 0.9}, Iter: 3}
		s := samples[i]
		f.Truth = [3]float64{s.Yaw, s.Pitch, 0}
		f.Has = [3]bool{s.HasYaw, s.HasPitch, false}
		return f
	}
	r := &Report{Case: "detected, 3 iterations", Faces: []FaceResult{
		face(0, true, [3]float64{14, 3, 0}),   // yaw error 4, pitch error 2
		face(1, true, [3]float64{-44, 90, 0}), // yaw error 6; its pitch is not an error
		face(2, true, [3]float64{70, 26, 0}),  // pitch error 6; its yaw is not an error
		face(3, false, [3]float64{}),          // missed by the detector
	}}
	r.Faces[1].View = detect.YawNegative // found by the turned cascade, mirrored
	if s := r.Stats(pose.Yaw); s.N != 2 || math.Abs(s.MAE-5) > 1e-12 {
		t.Errorf("yaw: %+v, want MAE 5 over 2 faces", s)
	}
	if s := r.Stats(pose.Pitch); s.N != 2 || math.Abs(s.MAE-4) > 1e-12 {
		t.Errorf("pitch: %+v, want MAE 4 over 2 faces", s)
	}
	if s := r.Stats(pose.Roll); s.N != 0 {
		t.Errorf("roll measured over %d faces, none labels it", s.N)
	}
	if got := r.Angles(); len(got) != 2 || r.MeanMAE() != 4.5 || r.Found() != 3 || r.DetectionRate() != 0.75 {
		t.Errorf("angles %v, mean %g, found %d, rate %g", got, r.MeanMAE(), r.Found(), r.DetectionRate())
	}
	var tab bytes.Buffer
	r.YawTable(&tab)
	for _, want := range []string{"| 0–15° | 1 | 100 % | 4.00 | 2.00 |", "| 45–60° | 1 | 100 % | 6.00 | – |", "| 75–90° | 1 | 0 % | – | – |", "| yaw unlabelled | 1 | 100 % | – | 6.00 |"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("yaw table lacks %q:\n%s", want, tab.String())
		}
	}
	// By |pitch|: faces 0 (pitch 5) and 3 (0, missed) in the first bin,
	// face 2 (20) in 15–30 with its pitch error, face 1 (no pitch label)
	// on a row of its own with its yaw error.
	tab.Reset()
	r.PitchTable(&tab)
	for _, want := range []string{"| true \\|pitch\\| |", "| 0–15° | 2 | 50 % | 4.00 | 2.00 |", "| 15–30° | 1 | 100 % | – | 6.00 |", "| pitch unlabelled | 1 | 100 % | 6.00 | – |"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("pitch table lacks %q:\n%s", want, tab.String())
		}
	}
	var out bytes.Buffer
	out.WriteString(PerFaceHeader + "\n")
	r.PerFace(&out, b)
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want a header and 4 faces", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, c := range []struct {
		row       int
		name, val string
	}{{1, "yaw", "14.000"}, {1, "path", "a.jpg"}, {2, "pitch", ""}, {2, "pitch_true", ""}, {3, "yaw", ""}, {4, "found", "false"}, {4, "test_x", ""}, {4, "face_w", "30.000"}, {1, "iou_after", "0.900"},
		{1, "view", "frontal"}, {2, "view", "yaw-"}, {4, "view", ""}} {
		if got := rows[c.row][col[c.name]]; got != c.val {
			t.Errorf("row %d %s = %q, want %q", c.row, c.name, got, c.val)
		}
	}
}

// A face published without angles (track.Config.Unread) is found, and in
// no error: the found rate counts it, the MAE, the σ ratio and the per-face
// angle cells leave it out, the yaw table and the summary say how many.
func TestReportUnreadFaces(t *testing.T) {
	samples := []dataset.Sample{
		{Set: "cars", Path: "a.jpg", Subject: "1", Yaw: 80, HasYaw: true},
		{Set: "cars", Path: "b.jpg", Subject: "2", Yaw: 85, HasYaw: true},
	}
	b := &Bank{Samples: samples}
	r := &Report{Case: "published, 3 iterations", Faces: []FaceResult{
		{Sample: 0, Found: true, Truth: [3]float64{80}, Has: [3]bool{true}, Pred: [3]float64{77}, Std: [3]float64{3}},
		{Sample: 1, Found: true, Unread: true, Truth: [3]float64{85}, Has: [3]bool{true}, Std: [3]float64{40}},
	}}
	if s := r.Stats(pose.Yaw); s.N != 1 || s.MAE != 3 {
		t.Errorf("yaw: %+v, want MAE 3 over the one face with angles", s)
	}
	if got := r.StdRatio(pose.Yaw); got != 1 {
		t.Errorf("σ ratio %g, want 1 (the unread face's σ is no prediction)", got)
	}
	if r.Found() != 2 || r.Unread() != 1 {
		t.Errorf("found %d, unread %d; want 2 and 1", r.Found(), r.Unread())
	}
	var tab bytes.Buffer
	r.YawTable(&tab)
	if want := "| 75–90° | 2 | 100 % (1 without angles) | 3.00 |"; !strings.Contains(tab.String(), want) {
		t.Errorf("yaw table lacks %q:\n%s", want, tab.String())
	}
	if !strings.Contains(r.Summary(), "1 of them without angles") {
		t.Errorf("summary %q does not say a face was found without angles", r.Summary())
	}
	var out bytes.Buffer
	r.PerFace(&out, b)
	rows, err := csv.NewReader(strings.NewReader(PerFaceHeader + "\n" + out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(rows[0], "yaw")
	if rows[1][col] != "77.000" || rows[2][col] != "" || rows[2][slices.Index(rows[0], "found")] != "true" {
		t.Errorf("per-face yaw cells %q, %q: want 77.000 and empty for the unread face (found)", rows[1][col], rows[2][col])
	}
}

// k-fold draws every person of the set into exactly one fold, folds of
// near-equal size, the same draw for the same seed.
func TestKFoldGroups(t *testing.T) {
	var subjects []string
	for i := range 23 {
		subjects = append(subjects, string(rune('a'+i)))
	}
	g := kfoldGroups(subjects, 5, 3)
	seen := map[string]int{}
	for _, grp := range g {
		if len(grp) < 4 || len(grp) > 5 {
			t.Errorf("fold of %d persons, want 4 or 5", len(grp))
		}
		for _, s := range grp {
			seen[s]++
		}
	}
	for _, s := range subjects {
		if seen[s] != 1 {
			t.Errorf("person %s in %d folds", s, seen[s])
		}
	}
	if again := kfoldGroups(subjects, 5, 3); strings.Join(again[0], ",") != strings.Join(g[0], ",") {
		t.Error("same seed, other draw")
	}
}

// With a models folder, a cross-validation keeps each fold's model and a
// second run with the same settings reads it back instead of training:
// the same results, no training result (nothing was fitted), and a
// changed setting trains anew.
func TestCrossValidationKeepsModels(t *testing.T) {
	b := pointingBank(t)
	dir := t.TempDir()
	o := LOPOOptions{
		Train: Options{Variant: VariantPose, Angles: []string{pose.Yaw, pose.Pitch}, EM: train.Config{K: 3, Seed: 1, MaxIter: 5}},
		Evals: []EvalOptions{{Condition: Annotated}}, Set: "pointing04", Folds: 2, Models: dir,
	}
	first, folds, err := KFold(b, o, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "*.gllim"))
	if len(kept) != 2 || folds[0].Iterations == 0 {
		t.Fatalf("%d models kept, first fold %d EM iterations", len(kept), folds[0].Iterations)
	}
	again, folds2, err := KFold(b, o, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if folds2[0].Iterations != 0 || again[0].Summary() != first[0].Summary() {
		t.Errorf("second run: %d EM iterations, %s; first %s", folds2[0].Iterations, again[0].Summary(), first[0].Summary())
	}
	// An ensemble of two keeps its members alone: the first is the model
	// kept above, only the second is fitted.
	o.Train.Members = 2
	ens, efolds, err := KFold(b, o, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ = filepath.Glob(filepath.Join(dir, "*.gllim"))
	if len(kept) != 4 || ens[0].Summary() == first[0].Summary() {
		t.Errorf("ensemble of 2: %d models kept (want 4), %s", len(kept), ens[0].Summary())
	}
	// Each fold can choose its temperature on persons held out of its own
	// training, as posectl train does: its cases say so.
	o.Temperatures = []float64{1, 1e4}
	lt, lfolds, err := KFold(b, o, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if lfolds[0].Temperature != 1 || !strings.HasSuffix(lt[0].Case, "T learnt") {
		// T = 10⁴ leaves the prior weights alone: never the more accurate.
		t.Errorf("learnt temperature %g, case %q", lfolds[0].Temperature, lt[0].Case)
	}
	// …and scales its σ there too, as posectl train -calibrate-std scales
	// the shipped model's, whose σ the daemon's start check compares: every
	// σ of the fold's tests is its model's times the learnt scale.
	raw, cal, scale := efolds[0].Reports[0].StdRatio(pose.Yaw), lfolds[0].Reports[0].StdRatio(pose.Yaw), lfolds[0].StdScales[pose.Yaw]
	t.Logf("fold 1, yaw error / σ on the tested persons: %.3f uncalibrated, %.3f calibrated (σ ×%.3f)", raw, cal, scale)
	if !(scale > 0) || math.Abs(raw/cal-scale) > 1e-9*scale {
		t.Errorf("fold 1, yaw error / σ %.4f uncalibrated, %.4f calibrated: want a ratio of the fold's σ scale %.4f", raw, cal, scale)
	}
	o.Temperatures = nil
	o.Train.Members = 1
	o.Train.EM.K = 4
	if _, folds3, err := KFold(b, o, 5, 1); err != nil || folds3[0].Iterations == 0 {
		t.Errorf("K changed: %v, %d EM iterations (want a new fit)", err, folds3[0].Iterations)
	}
}

// A fold never trains on a picture made from one of its tested persons,
// and never tests one; made pictures of other persons are trained on.
func TestFoldLeavesOutMadePictures(t *testing.T) {
	ss := []dataset.Sample{
		{Set: "aflw2000", Subject: "a"},
		{Set: "aflw2000", Subject: "b"},
		{Set: "aflw2000-turned", Subject: "a", MadeFrom: "aflw2000"},
		{Set: "aflw2000-turned", Subject: "b", MadeFrom: "aflw2000"},
		{Set: "pointing04", Subject: "a"}, // another set's person "a" is someone else
	}
	train, test := foldSplit(ss, "aflw2000", map[string]bool{"a": true})
	if !slices.Equal(test, []int{0}) || !slices.Equal(train, []int{1, 3, 4}) {
		t.Fatalf("holding out aflw2000's a: train %v test %v, want train [1 3 4] test [0]", train, test)
	}
	train, test = foldSplit(ss, "pointing04", map[string]bool{"a": true})
	if !slices.Equal(test, []int{4}) || !slices.Equal(train, []int{0, 1, 2, 3}) {
		t.Fatalf("holding out pointing04's a: train %v test %v, want train [0 1 2 3] test [4]", train, test)
	}
}

// The models kept by -models are found again whether -data named the
// pictures by a relative or an absolute path, and not for other pictures.
func TestModelKeyIgnoresHowDataIsNamed(t *testing.T) {
	b := pointingBank(t)
	o := Options{Variant: VariantPose, Angles: []string{pose.Yaw, pose.Pitch}, EM: train.Config{K: 3, Seed: 1, MaxIter: 5}}
	idx := []int{0, 1, 2, 3}
	key := modelKey(b, idx, o)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	orig := b.Samples
	defer func() { b.Samples = orig }()
	b.Samples = slices.Clone(orig)
	for i := range b.Samples {
		abs, _ := filepath.Abs(b.Samples[i].Path)
		if b.Samples[i].Path, err = filepath.Rel(wd, abs); err != nil {
			t.Fatal(err)
		}
	}
	if b.Samples[0].Path == orig[0].Path {
		t.Fatalf("the relative path %q is the path the bank had", orig[0].Path)
	}
	if got := modelKey(b, idx, o); got != key {
		t.Errorf("key %s with relative paths, %s with the bank's", got, key)
	}
	b.Samples = orig
	if modelKey(b, []int{0, 1, 2, 4}, o) == key {
		t.Error("another picture gives the same key")
	}
	// The same pictures labelled otherwise (-pointing04 faced) are another
	// model's: a kept model of the other labels is not read back.
	b.Samples = slices.Clone(orig)
	dataset.PointingReading(b.Samples, dataset.Faced)
	if b.Samples[1].Yaw == orig[1].Yaw && b.Samples[1].Pitch == orig[1].Pitch && b.Samples[2].Yaw == orig[2].Yaw && b.Samples[2].Pitch == orig[2].Pitch {
		t.Fatalf("the test's pictures %+v keep their labels read as faced", b.Samples[:4])
	}
	if modelKey(b, idx, o) == key {
		t.Error("the same pictures with other labels give the same key")
	}
}

// A turning sequence is each person's series at pitch 0 from the least
// yaw to the greatest and back, each end once, with the turn's sign at
// every picture (0 at the ends); other pitches and data sets stay out.
func TestTurns(t *testing.T) {
	var b Bank
	add := func(set, subject string, series int, yaw, pitch float64) {
		b.Samples = append(b.Samples, dataset.Sample{Set: set, Subject: subject, Series: series, Yaw: yaw, Pitch: pitch, HasYaw: true})
	}
	for _, y := range []float64{30, -30, 0, 15, -15} {
		add("pointing04", "1", 1, y, 0)
		add("pointing04", "1", 1, y, 15) // another pitch
		add("aflw2000", "7", 0, y, 0)    // another set
	}
	add("pointing04", "2", 2, 0, 0) // a single picture: no turn
	idx := make([]int, len(b.Samples))
	for i := range idx {
		idx[i] = i
	}
	seqs, turns := b.Turns(idx)
	if len(seqs) != 1 {
		t.Fatalf("%d sequences, want 1", len(seqs))
	}
	var yaws []float64
	for _, i := range seqs[0] {
		s := b.Samples[i]
		if s.Set != "pointing04" || s.Pitch != 0 {
			t.Fatalf("picture %+v in the sequence", s)
		}
		yaws = append(yaws, s.Yaw)
	}
	if want := []float64{-30, -15, 0, 15, 30, 15, 0, -15, -30}; !slices.Equal(yaws, want) {
		t.Errorf("yaws %v, want %v", yaws, want)
	}
	if want := []float64{0, 1, 1, 1, 0, -1, -1, -1, 0}; !slices.Equal(turns[0], want) {
		t.Errorf("turns %v, want %v", turns[0], want)
	}
}

// Lag is the mean error along the turn of the found turning frames.
func TestLag(t *testing.T) {
	r := Report{Faces: []FaceResult{
		{Found: true, Has: [3]bool{true}, Turn: 1, Truth: [3]float64{30}, Pred: [3]float64{26}},   // 4 behind
		{Found: true, Has: [3]bool{true}, Turn: -1, Truth: [3]float64{15}, Pred: [3]float64{17}},  // 2 behind
		{Found: true, Has: [3]bool{true}, Turn: 0, Truth: [3]float64{90}, Pred: [3]float64{50}},   // an end
		{Found: false, Has: [3]bool{true}, Turn: 1, Truth: [3]float64{90}, Pred: [3]float64{50}},  // not found
		{Found: true, Has: [3]bool{true}, Turn: 1, Truth: [3]float64{-15}, Pred: [3]float64{-12}}, // 3 ahead
	}}
	if lag, n := r.Lag(); n != 3 || math.Abs(lag-1) > 1e-12 {
		t.Errorf("lag %g° over %d frames, want 1° over 3", lag, n)
	}
}

// quat is the unit quaternion (w, x, y, z) of a rotation by a degrees
// about axis 0 (x), 1 (y) or 2 (z): the reference's own rotations, built
// without the rotation package's matrices.
func quat(axis int, a float64) [4]float64 {
	h := a * math.Pi / 360
	q := [4]float64{math.Cos(h)}
	q[1+axis] = math.Sin(h)
	return q
}

func qmul(a, b [4]float64) [4]float64 {
	return [4]float64{
		a[0]*b[0] - a[1]*b[1] - a[2]*b[2] - a[3]*b[3],
		a[0]*b[1] + a[1]*b[0] + a[2]*b[3] - a[3]*b[2],
		a[0]*b[2] - a[1]*b[3] + a[2]*b[0] + a[3]*b[1],
		a[0]*b[3] + a[1]*b[2] - a[2]*b[1] + a[3]*b[0],
	}
}

// The rotation error is the angle between two head poses on the sphere of
// rotations, whatever the angles that name them: against quaternions
// (θ = 2·arccos |⟨q_t, q_p⟩|, the head Rx(pitch)·Ry(yaw)·Rz(−roll) as a
// product of three), on poses drawn at random, and at 90° of yaw, where a
// pitch and a roll of 30° each are the same head as neither (R =
// Rx(p − r)·Ry(90°)): 30° of error in each angle, 0 in the rotation.
func TestRotationErr(t *testing.T) {
	head := func(y, p, r float64) [4]float64 { return qmul(qmul(quat(0, p), quat(1, y)), quat(2, -r)) }
	ref := func(a, b [3]float64) float64 {
		qa, qb := head(a[0], a[1], a[2]), head(b[0], b[1], b[2])
		d := math.Abs(qa[0]*qb[0] + qa[1]*qb[1] + qa[2]*qb[2] + qa[3]*qb[3])
		return 2 * math.Acos(math.Min(1, d)) * 180 / math.Pi
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var tr, pr [3]float64
		for i := range 3 {
			tr[i] = 180*rng.Float64() - 90
			pr[i] = tr[i] + 40*rng.Float64() - 20
		}
		f := FaceResult{Truth: tr, Pred: pr, Has: [3]bool{true, true, true}, Found: true}
		got, ok := f.RotationErr()
		if want := ref(tr, pr); !ok || math.Abs(got-want) > 1e-6 {
			t.Fatalf("truth %v, estimate %v: rotation error %.9f, the quaternions' %.9f", tr, pr, got, want)
		}
	}
	f := FaceResult{Truth: [3]float64{90, 30, 30}, Pred: [3]float64{90, 0, 0}, Has: [3]bool{true, true, true}, Found: true}
	if e, _ := f.RotationErr(); e > 1e-6 || f.Err(1) != 30 || f.Err(2) != 30 {
		t.Errorf("at 90° of yaw: rotation error %g, pitch and roll errors %g, %g; want 0, 30, 30", e, f.Err(1), f.Err(2))
	}
	if _, ok := (&FaceResult{Has: [3]bool{true, true, false}}).RotationErr(); ok {
		t.Error("a face without its roll has a rotation error")
	}
	// The table gives it a column, by |yaw| bin, over the faces read.
	r := &Report{Faces: []FaceResult{f, {Truth: [3]float64{10, 0, 0}, Pred: [3]float64{0, 0, 0}, Has: [3]bool{true, true, true}, Found: true}}}
	var tab bytes.Buffer
	r.YawTable(&tab)
	for _, want := range []string{"| rotation error |", "| 0–15° | 1 | 100 % | 10.00 | 0.00 | 0.00 | 10.00 |", "| 75–90° | 1 | 100 % | 0.00 | 30.00 | 30.00 | 0.00 |"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("the |yaw| table lacks %q:\n%s", want, tab.String())
		}
	}
}

// The turning condition's sensor noise: on a mid-grey picture its draws
// have the σ asked for and no bias; it clips at black and white instead
// of wrapping; the same seed gives the same frame (the frames one by one
// see the video's frames) and another seed another.
func TestAddNoise(t *testing.T) {
	grey := image.NewGray(image.Rect(3, 5, 203, 155))
	for i := range grey.Pix {
		grey.Pix[i] = 128
	}
	const sigma = 3.0
	a := addNoise(nil, grey, sigma, rand.New(rand.NewPCG(5, 1)))
	if a.Rect != grey.Rect {
		t.Fatalf("noisy frame %v, picture %v", a.Rect, grey.Rect)
	}
	var s, s2 float64
	for _, v := range a.Pix {
		d := float64(v) - 128
		s += d
		s2 += d * d
	}
	n := float64(len(a.Pix))
	mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	// 30 000 draws, rounded: σ within 3 % (rounding adds 1/12 of a level²).
	if math.Abs(mean) > 0.1 || math.Abs(sd-math.Sqrt(sigma*sigma+1.0/12)) > 0.03*sigma {
		t.Errorf("noise mean %.3f, σ %.3f: want 0 and %.2f", mean, sd, sigma)
	}
	b := addNoise(nil, grey, sigma, rand.New(rand.NewPCG(5, 1)))
	if !slices.Equal(a.Pix, b.Pix) {
		t.Error("the same seed gave another frame")
	}
	c := addNoise(b, grey, sigma, rand.New(rand.NewPCG(5, 2)))
	if c != b {
		t.Error("the frame's buffer was not reused")
	}
	if slices.Equal(a.Pix, c.Pix) {
		t.Error("another frame's seed gave the same noise")
	}
	edge := image.NewGray(image.Rect(0, 0, 100, 100))
	for i := range edge.Pix {
		edge.Pix[i] = uint8(255 * (i % 2))
	}
	e := addNoise(nil, edge, 20, rand.New(rand.NewPCG(1, 1)))
	low, high := 0, 0
	for i, v := range e.Pix {
		switch {
		case i%2 == 0 && v > 100, i%2 == 1 && v < 155:
			t.Fatalf("pixel %d: %d from %d: wrapped around", i, v, edge.Pix[i])
		case v == 0:
			low++
		case v == 255:
			high++
		}
	}
	if low < 2000 || high < 2000 {
		t.Errorf("%d black and %d white pixels of 5000 each: the noise is not clipped", low, high)
	}
}
