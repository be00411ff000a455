package cascade

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// A synthetic "face": a dark ring with two dark eyes on a lighter disc,
// drawn at (cx, cy) with radius r over noise; backgrounds are noise and
// smooth gradients. Small enough to train in seconds, hard enough to need
// several stages.
func drawFace(im *Image, cx, cy, r float64, rng *rand.Rand) {
	for y := range im.H {
		for x := range im.W {
			dx, dy := (float64(x)-cx)/r, (float64(y)-cy)/r
			d := math.Hypot(dx, dy)
			v := -1.0
			switch {
			case d < 0.8 && (math.Hypot(dx+0.35, dy+0.2) < 0.15 || math.Hypot(dx-0.35, dy+0.2) < 0.15):
				v = 40
			case d < 0.8 && math.Abs(dy-0.4) < 0.08 && math.Abs(dx) < 0.3:
				v = 70
			case d < 0.8:
				v = 190
			case d < 1:
				v = 60
			}
			if v >= 0 {
				im.Pix[y*im.W+x] = uint8(max(0, min(255, v+rng.NormFloat64()*12)))
			}
		}
	}
}

func noiseImage(w, h int, rng *rand.Rand) Image {
	im := Image{Pix: make([]uint8, w*h), W: w, H: h}
	smooth := rng.IntN(2) == 0
	a, b := rng.Float64()*2-1, rng.Float64()*2-1
	for y := range h {
		for x := range w {
			v := 128 + rng.NormFloat64()*40
			if smooth {
				v = 128 + 100*math.Sin(a*float64(x)/9+b*float64(y)/7) + rng.NormFloat64()*8
			}
			im.Pix[y*w+x] = uint8(max(0, min(255, v)))
		}
	}
	return im
}

// synthetic returns n face images (one face each, its window) and m
// backgrounds.
func synthetic(n, m int, seed uint64) ([]Image, []Window, Backgrounds) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var imgs []Image
	var faces []Window
	for i := range n {
		im := noiseImage(96, 96, rng)
		r := 20 + rng.Float64()*8
		cx, cy := 48+rng.NormFloat64()*3, 48+rng.NormFloat64()*3
		drawFace(&im, cx, cy, r, rng)
		imgs = append(imgs, im)
		faces = append(faces, Window{Img: int32(i), R: int32(math.Round(cy)), C: int32(math.Round(cx)), S: int32(math.Round(2 * r))})
	}
	var bg Backgrounds
	for range m {
		bg.Images = append(bg.Images, noiseImage(160, 120, rng))
	}
	return imgs, faces, bg
}

func testOptions() Options {
	o := DefaultOptions()
	o.Tests = 32
	o.MaxStages = 6
	o.MaxTrees = 8
	o.TargetFPR = 1e-4
	o.MinNegative = 16
	o.Workers = 2
	return o
}

func mustTrain(t *testing.T, imgs []Image, faces []Window, bg Backgrounds, o Options) []byte {
	t.Helper()
	c, err := Train(context.Background(), imgs, faces, bg, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The same seed gives the same cascade on one core or two; a training
// stopped after 3 stages and resumed from its checkpoint gives the cascade
// of one run of 6; the cascade finds faces it never saw and rejects
// backgrounds it never saw, and pigo reads and runs it.
func TestTrain(t *testing.T) {
	imgs, faces, bg := synthetic(300, 40, 1)
	o := testOptions()
	var stages int
	var ends []int
	o.Progress = func(p Progress) {
		if p.Done {
			stages = p.Stage + 1
			ends = append(ends, p.Trees)
		}
	}
	two := mustTrain(t, imgs, faces, bg, o)
	o.Progress = nil
	if stages < 3 {
		t.Fatalf("trained %d stages; the test wants several", stages)
	}
	o.Workers = 1
	if one := mustTrain(t, imgs, faces, bg, o); !bytes.Equal(one, two) {
		t.Error("one core and two cores trained different cascades")
	}
	ck := filepath.Join(t.TempDir(), "ck")
	o.Checkpoint, o.MaxStages = ck, 3
	part := mustTrain(t, imgs, faces, bg, o)
	o.MaxStages = 6
	if resumed := mustTrain(t, imgs, faces, bg, o); !bytes.Equal(resumed, two) {
		t.Errorf("resumed training (%d bytes after 3 stages) differs from one run", len(part))
	}
	// The checkpoint keeps where each stage ends, across the resumption.
	if got, err := StageEnds(ck); err != nil || !slices.Equal(got, ends) {
		t.Errorf("stage ends in the checkpoint: %v, %v; the stages reported ending at %v", got, err, ends)
	}
	other := o
	other.Tests = 31
	if _, err := Train(context.Background(), imgs, faces, bg, other); err == nil || !strings.Contains(err.Error(), "another training") {
		t.Errorf("a checkpoint of other options was resumed: %v", err)
	}

	c, err := detect.ParseCascade(two)
	if err != nil {
		t.Fatal(err)
	}
	testImgs, testFaces, testBg := synthetic(200, 20, 2)
	found := 0
	for _, w := range testFaces {
		im := testImgs[w.Img]
		// The scan meets a face between its steps: any window within a
		// step and a scale of it counts.
		hit := false
		for _, ds := range []int{-2, 0, 2} {
			for _, dr := range []int{-2, 0, 2} {
				for _, dc := range []int{-2, 0, 2} {
					if q, ok := c.ClassifyUpTo(im.Pix, im.W, int(w.R)+dr, int(w.C)+dc, int(w.S)+ds, c.Trees()); ok && q > c.Thresholds[c.Trees()-1] {
						hit = true
					}
				}
			}
		}
		if hit {
			found++
		}
	}
	if share := float64(found) / float64(len(testFaces)); share < 0.9 {
		t.Errorf("found %.2f of unseen faces, want ≥ 0.9", share)
	}
	var sc detect.Scanner
	var kept int
	for _, im := range testBg.Images {
		kept += len(sc.Scan(nil, c, im.Pix, im.W, im.H, im.W, detect.ScanParams{MinSize: 16, MaxSize: 118, Shift: 0.1, Scale: 1.1}))
	}
	if fpr := float64(kept) / float64(sc.Windows()); fpr > 1e-3 {
		t.Errorf("kept %d of %d background windows (%.2g), want ≤ 1e-3", kept, sc.Windows(), fpr)
	}
	ref, err := pigo.NewPigo().Unpack(two)
	if err != nil {
		t.Fatal(err)
	}
	im := testImgs[0]
	raw := ref.RunCascade(pigo.CascadeParams{MinSize: 30, MaxSize: 90, ShiftFactor: 0.05, ScaleFactor: 1.05,
		ImageParams: pigo.ImageParams{Pixels: im.Pix, Rows: im.H, Cols: im.W, Dim: im.W}}, 0)
	if len(raw) == 0 {
		t.Error("pigo finds no face with the trained cascade")
	}
}

// Faces outside their image, no backgrounds, bad options: errors.
func TestTrainRefuses(t *testing.T) {
	imgs, faces, bg := synthetic(10, 2, 3)
	bad := append([]Window{}, faces...)
	bad[3].R = 2
	if _, err := Train(context.Background(), imgs, bad, bg, testOptions()); err == nil || !strings.Contains(err.Error(), "face window 3") {
		t.Errorf("a window outside its image: %v", err)
	}
	if _, err := Train(context.Background(), imgs, faces, Backgrounds{}, testOptions()); err == nil {
		t.Error("no backgrounds accepted")
	}
	o := testOptions()
	o.MaxFPR = 1
	if _, err := Train(context.Background(), imgs, faces, bg, o); err == nil {
		t.Error("stage FPR 1 accepted")
	}
	o = testOptions()
	o.EarlyStages = -1
	if _, err := Train(context.Background(), imgs, faces, bg, o); err == nil || !strings.Contains(err.Error(), "early stages") {
		t.Errorf("-1 early stages: %v", err)
	}
}

// A stopped context ends the training with ErrStopped.
func TestTrainStops(t *testing.T) {
	imgs, faces, bg := synthetic(50, 4, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(ctx, imgs, faces, bg, testOptions()); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("cancelled training: %v", err)
	}
}

// The comparison a tree node makes is the one detect.Cascade makes.
func TestTreeMatchesCascade(t *testing.T) {
	imgs, faces, bg := synthetic(40, 4, 5)
	rng := rand.New(rand.NewPCG(9, 9))
	var ss []sample
	for _, w := range faces {
		ss = append(ss, sample{w: w, y: 1, weight: 1})
	}
	_ = bg
	tr := growTree(imgs, ss, nil, 3, 16, rng, 1)
	c := &detect.Cascade{Depth: 3}
	tr.appendTo(c, noThreshold)
	for _, w := range faces {
		im := imgs[w.Img]
		got, _ := c.ClassifyUpTo(im.Pix, im.W, int(w.R), int(w.C), int(w.S), 1)
		if want := tr.eval(&im, w); got != want {
			t.Fatalf("window %+v: cascade %g, tree %g", w, got, want)
		}
	}
}

// rotate turns an image about a point: by 0 it is unchanged; a quarter
// turn of a square about its centre moves a marked pixel where the turn
// says (the image's y axis points down: +90° takes right to down).
func TestRotate(t *testing.T) {
	im := Image{Pix: make([]uint8, 9*9), W: 9, H: 9}
	im.Pix[4*9+7] = 255 // row 4, column 7: right of the centre (4.5, 4.5)
	if got := rotate(im, 4.5, 4.5, 0); !bytes.Equal(got.Pix, im.Pix) {
		t.Error("a turn by 0 changed the image")
	}
	got := rotate(im, 4.5, 4.5, math.Pi/2)
	if got.Pix[7*9+4] != 255 {
		t.Errorf("after a quarter turn the pixel is not at row 7, column 4: %v", got.Pix)
	}
}

// Folds of persons: every face of a person in the same fold, Pointing'04's
// persons by number (3 a fold of 5), others spread over the folds; two
// folds are the halves the shipped cascade was measured with.
func TestFold(t *testing.T) {
	for p := 1; p <= 15; p++ {
		s := dataset.Sample{Set: "pointing04", Subject: fmt.Sprintf("%02d", p)}
		if got := Fold(s, 5); got != p%5 {
			t.Errorf("Pointing'04 person %d: fold %d of 5, want %d", p, got, p%5)
		}
		if Half(s) != p%2 {
			t.Errorf("Pointing'04 person %d: half %d, want %d", p, Half(s), p%2)
		}
	}
	count := make([]int, 5)
	for i := range 1000 {
		s := dataset.Sample{Set: "aflw2000", Subject: fmt.Sprintf("image%05d", i)}
		k := Fold(s, 5)
		if k != Fold(s, 5) || k < 0 || k >= 5 {
			t.Fatalf("%s: fold %d", s.Subject, k)
		}
		// The halves are the hash's parity, as when the shipped cascade was measured.
		h := fnv.New32a()
		h.Write([]byte("aflw2000/" + s.Subject))
		if Half(s) != int(h.Sum32()%2) {
			t.Fatalf("%s: half %d, want %d", s.Subject, Half(s), h.Sum32()%2)
		}
		count[k]++
	}
	for k, n := range count {
		if n < 150 || n > 250 {
			t.Errorf("fold %d holds %d of 1000 persons", k, n)
		}
	}
}

// The pictures kept out to measure false detections are the same whether
// -negatives names the folder the packages were unpacked into or its
// usr/share: a picture is named by its path below usr/share. (Measured
// from the other folder before, a third of the "held-out" frames were
// pictures the cascade had mined.)
func TestPictureNamesIgnoreTheFolderAbove(t *testing.T) {
	root := t.TempDir()
	files := []string{
		"unpacked/usr/share/backgrounds/gnome/a.png",
		"unpacked/usr/share/wallpapers/Next/contents/images/1024x768.png",
		"unpacked/usr/share/wallpapers/Next/contents/images/1920x1080.png",
		"unpacked/usr/share/backgrounds/b.jpg.png",
	}
	for i, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		g := image.NewGray(image.Rect(0, 0, 32+8*i, 24)) // the later, the larger file
		var buf bytes.Buffer
		if err := png.Encode(&buf, g); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := func(dir string) []string {
		pics, err := ReadPictures(dir, 64)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pics {
			out = append(out, p.Name)
		}
		return out
	}
	want := []string{"backgrounds/b.jpg.png", "backgrounds/gnome/a.png", "wallpapers/Next/contents/images/1920x1080.png"}
	for _, dir := range []string{root, filepath.Join(root, "unpacked"), filepath.Join(root, "unpacked/usr/share")} {
		if got := names(dir); !slices.Equal(got, want) {
			t.Errorf("read from %s: pictures %q, want %q", dir, got, want)
		}
	}
	// Pictures not below a usr/share are named by their path below dir.
	if got := pictureName("/data/pics", "/data/pics/holiday/x.jpg"); got != "holiday/x.jpg" {
		t.Errorf("pictureName outside usr/share: %q, want holiday/x.jpg", got)
	}
}

// Each face gets the windows its set and tilt ask for: -jitter by
// default, -set-jitter's count for its set, -tilt-jitter's for a face of
// that set looking up or down by -tilt or more (either way), whose pitch
// is labelled; faces outside the view get none, and those turned the
// other way are counted the same.
func TestFacesWindowsBySetAndTilt(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 200, 200))
	box := feature.Box{X: 70, Y: 70, W: 60, H: 60}
	faces := []struct {
		s    dataset.Sample
		want int
	}{
		{dataset.Sample{Set: "pointing04", Yaw: 60, HasYaw: true, Pitch: 60, HasPitch: true}, 3},
		{dataset.Sample{Set: "aflw2000", Yaw: 60, HasYaw: true, Pitch: 10, HasPitch: true}, 5},
		{dataset.Sample{Set: "aflw2000", Yaw: -70, HasYaw: true, Pitch: -30, HasPitch: true}, 9},
		{dataset.Sample{Set: "aflw2000", Yaw: 50, HasYaw: true, Pitch: 45, HasPitch: true}, 9},
		{dataset.Sample{Set: "aflw2000", Yaw: 50, HasYaw: true, Pitch: 29.9, HasPitch: true}, 5},
		{dataset.Sample{Set: "aflw2000", Yaw: 50, HasYaw: true}, 5}, // pitch unknown
		{dataset.Sample{Set: "aflw2000", Yaw: 20, HasYaw: true, Pitch: 45, HasPitch: true}, 0},
	}
	var samples []dataset.Sample
	var imgs []*image.Gray
	var boxes []feature.Box
	for _, f := range faces {
		samples, imgs, boxes = append(samples, f.s), append(imgs, g), append(boxes, box)
	}
	j := Jitter{N: 3, Centre: 0.01, Scale: 0.01, SetN: map[string]int{"aflw2000": 5}, Tilt: 30, TiltN: map[string]int{"aflw2000": 9}}
	fs := Faces(samples, imgs, boxes, View{40, 90}, j, 1)
	got := make([]int, len(faces))
	for _, i := range fs.Sample {
		got[i]++
	}
	for i, f := range faces {
		if got[i] != f.want {
			t.Errorf("face %d (%s, yaw %g, pitch %g): %d windows, want %d", i, f.s.Set, f.s.Yaw, f.s.Pitch, got[i], f.want)
		}
	}
}

// Calibration faces grow no tree and set the stages' thresholds: spoiling
// their pictures leaves the trees of a first stage as they were and moves
// its threshold; unspoilt, the cascade passes the share of them that the
// training reports. Marks that are not one per window, or that leave no
// face to fit or none to calibrate, are refused.
func TestCalibration(t *testing.T) {
	imgs, faces, bg := synthetic(300, 40, 6)
	calib := make([]bool, len(faces))
	for i := range calib {
		calib[i] = i%4 == 0
	}
	o := testOptions()
	o.Calibration = calib
	var reported float64
	o.Progress = func(p Progress) {
		if p.Done {
			reported = p.CascadeTPR
		}
	}
	o.MaxStages = 3
	c, err := Train(context.Background(), imgs, faces, bg, o)
	if err != nil {
		t.Fatal(err)
	}
	passed, n := 0, 0
	for i, w := range faces {
		if calib[i] {
			n++
			im := imgs[w.Img]
			if _, ok := c.ClassifyUpTo(im.Pix, im.W, int(w.R), int(w.C), int(w.S), c.Trees()); ok {
				passed++
			}
		}
	}
	if got := float64(passed) / float64(n); math.Abs(got-reported) > 1e-9 || got < 0.9 {
		t.Errorf("the cascade passes %d of %d calibration faces (%.4f); the training reported %.4f", passed, n, got, reported)
	}

	// One stage, whose threshold keeps 80 % of the calibration faces
	// (a tree's few leaf values may put 99.7 % of both at its lowest).
	o.Progress, o.MaxStages, o.EarlyStages, o.MinTPR = nil, 1, 0, 0.8
	first, err := Train(context.Background(), imgs, faces, bg, o)
	if err != nil {
		t.Fatal(err)
	}
	spoilt := slices.Clone(imgs)
	rng := rand.New(rand.NewPCG(7, 7))
	for i, w := range faces {
		if calib[i] {
			spoilt[w.Img] = noiseImage(imgs[w.Img].W, imgs[w.Img].H, rng)
		}
	}
	other, err := Train(context.Background(), spoilt, faces, bg, o)
	if err != nil {
		t.Fatal(err)
	}
	nodes, leaves := 1<<o.Depth-1, 1<<o.Depth
	if !slices.Equal(first.Codes[:4*nodes], other.Codes[:4*nodes]) || !slices.Equal(first.Leaves[:leaves], other.Leaves[:leaves]) {
		t.Error("the calibration faces' pictures changed the first tree")
	}
	if first.Thresholds[0] == other.Thresholds[0] {
		t.Error("the calibration faces' pictures did not change the thresholds")
	}

	for _, bad := range [][]bool{calib[:10], make([]bool, len(faces))} {
		o.Calibration = bad
		if _, err := Train(context.Background(), imgs, faces, bg, o); err == nil || !strings.Contains(err.Error(), "calibration") {
			t.Errorf("%d marks, none set: %v", len(bad), err)
		}
	}
}
