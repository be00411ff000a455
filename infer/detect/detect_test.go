package detect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/internal/grey"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// The embedded cascade is pigo v1.4.6's cascade/facefinder, unchanged.
func TestEmbeddedCascade(t *testing.T) {
	sum := sha256.Sum256(facefinder)
	if got := hex.EncodeToString(sum[:]); got != "d8014993e7298c7b1865d1f8b855d6dbf4ec5c808bf879e2091ab6837abf90cd" {
		t.Errorf("cascade sha256 %s", got)
	}
	if _, err := New(DefaultParams()); err != nil {
		t.Fatal(err)
	}
	// The turned cascade (make cascade) parses and runs in pigo.
	tc := Turned()
	if tc.Depth != 6 || tc.Trees() < 20 {
		t.Errorf("turned cascade: depth %d, %d trees", tc.Depth, tc.Trees())
	}
	if _, err := pigo.NewPigo().Unpack(turned); err != nil {
		t.Error(err)
	}
	// Its stage ends grow and end at its last tree, so that every
	// turned_stages cuts it at a stage's end.
	ends := turnedStageEnds
	for i, e := range ends {
		if e < 1 || i > 0 && e <= ends[i-1] || i == len(ends)-1 && e != tc.Trees() {
			t.Errorf("turned stage ends %v for %d trees", ends, tc.Trees())
			break
		}
	}
}

// A cascade cut after n trees is the first n trees: it scores a window
// as the whole cascade's first n trees do, and keeps every window the
// whole cascade keeps; a cut outside 1…Trees() is refused.
func TestCut(t *testing.T) {
	tc := Turned()
	n := turnedStageEnds[len(turnedStageEnds)-3]
	cut, err := tc.Cut(n)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Trees() != n {
		t.Fatalf("cut after %d trees has %d", n, cut.Trees())
	}
	var kept, keptCut int
	for _, g := range realFrames(t) {
		for _, side := range []int{48, 72, 110} {
			for r := side/2 + 1; r+side/2+1 < g.Rect.Dy(); r += 5 {
				for c := side/2 + 1; c+side/2+1 < g.Rect.Dx(); c += 5 {
					whole := tc.classify(g.Pix, g.Stride, r, c, side)
					part, ok := tc.ClassifyUpTo(g.Pix, g.Stride, r, c, side, n)
					got := cut.classify(g.Pix, g.Stride, r, c, side)
					want := float32(-1)
					if ok {
						want = part - tc.Thresholds[n-1]
					}
					if got != want {
						t.Fatalf("window (%d, %d, side %d): cut scores %g, the first %d trees %g", r, c, side, got, n, want)
					}
					if whole > 0 {
						kept++
						if got <= 0 {
							t.Fatalf("window (%d, %d, side %d): kept by the whole cascade, not by its cut", r, c, side)
						}
					}
					if got > 0 {
						keptCut++
					}
				}
			}
		}
	}
	t.Logf("windows kept: whole %d, cut after %d of %d trees %d", kept, n, tc.Trees(), keptCut)
	if keptCut <= kept {
		t.Errorf("the cut keeps %d windows, the whole cascade %d: want more", keptCut, kept)
	}
	for _, bad := range []int{0, -1, tc.Trees() + 1} {
		if _, err := tc.Cut(bad); err == nil {
			t.Errorf("cut after %d trees accepted", bad)
		}
	}
}

// Fewer stages of the turned cascade find the profiles the whole cascade
// finds, and more (the AFLW2000 faces turned 60–90°).
func TestTurnedStagesFindMore(t *testing.T) {
	samples, err := dataset.Read(filepath.Join(dataset.Root(), "aflw2000"))
	if err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	p := DefaultParams()
	p.MinSize, p.Turned = 40, true
	whole, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	p.TurnedStages = len(turnedStageEnds) - 2
	cut, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	hit := func(d *Detector, g *image.Gray, s dataset.Sample) bool {
		lx, ly := s.Box.Centre()
		side := math.Sqrt(s.Box.W * s.Box.H)
		for _, f := range d.Detect(g) {
			fx, fy := f.Box.Centre()
			if r := f.Box.W / side; math.Abs(fx-lx) <= side/2 && math.Abs(fy-ly) <= side/2 && r >= 0.5 && r <= 2.5 {
				return true
			}
		}
		return false
	}
	var n, byWhole, byCut int
	for _, s := range samples {
		if !s.HasYaw || math.Abs(s.Yaw) < 60 || math.Abs(s.Yaw) > 90 || math.Abs(s.Pitch) > 30 {
			continue
		}
		g, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		n++
		w, c := hit(whole, g, s), hit(cut, g, s)
		// (Not face by face: a cut may cluster a face's windows with
		// another view's differently, and lose it in the merge.)
		byWhole += b2i(w)
		byCut += b2i(c)
	}
	t.Logf("AFLW2000 faces turned 60–90°: %d; found with all %d stages %d, with %d stages %d", n, len(turnedStageEnds), byWhole, p.TurnedStages, byCut)
	if n < 50 || byCut <= byWhole {
		t.Errorf("of %d faces the cut found %d, the whole cascade %d: want more", n, byCut, byWhole)
	}
}

func TestParamsValidate(t *testing.T) {
	bad := []func(*Params){
		func(p *Params) { p.MinSize = 4 },
		func(p *Params) { p.MaxSize = p.MinSize - 1 },
		func(p *Params) { p.Shift = 0 },
		func(p *Params) { p.Scale = 1 },
		func(p *Params) { p.IoU = 1.5 },
		func(p *Params) { p.Nested = -0.1 },
		func(p *Params) { p.Nested = math.NaN() },
		func(p *Params) { p.Turned, p.TurnedStages = true, -1 },
		func(p *Params) { p.Turned, p.TurnedStages = true, 10 },
		func(p *Params) { p.Turned, p.TurnedStages = true, len(turnedStageEnds)+1 },
	}
	for i, f := range bad {
		p := DefaultParams()
		f(&p)
		if _, err := New(p); err == nil {
			t.Errorf("case %d: %+v accepted", i, p)
		}
	}
}

func TestCalibrationApply(t *testing.T) {
	c := Calibration{DX: 0.1, DY: -0.2, Scale: 0.5}
	b := c.Apply(feature.Box{X: 0, Y: 0, W: 100, H: 100})
	cx, cy := b.Centre()
	if math.Abs(cx-60) > 1e-9 || math.Abs(cy-30) > 1e-9 || math.Abs(b.W-50) > 1e-9 {
		t.Errorf("calibrated box %v", b)
	}
	if Identity.Apply(feature.Box{X: 5, Y: 6, W: 7, H: 7}) != (feature.Box{X: 5, Y: 6, W: 7, H: 7}) {
		t.Error("identity calibration moved the box")
	}
}

// pigo's own sample photograph (from the module cache) has faces; looking
// only in a region around one finds it at the same place.
func TestDetectInRegionMatchesFullFrame(t *testing.T) {
	gomod := os.Getenv("GOMODCACHE")
	if gomod == "" {
		home, _ := os.UserHomeDir()
		gomod = filepath.Join(home, "go", "pkg", "mod")
	}
	f, err := os.Open(filepath.Join(gomod, "github.com", "esimov", "pigo@v1.4.6", "testdata", "sample.jpg"))
	if err != nil {
		datatest.Missing(t, "pigo sample image not in the module cache: %v", err)
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g := grey.Grey(nil, img)
	d, err := New(Params{MinSize: 20, MaxSize: 1000, Shift: 0.1, Scale: 1.1, IoU: 0.2, MinScore: 5})
	if err != nil {
		t.Fatal(err)
	}
	faces := d.Detect(g)
	if len(faces) == 0 {
		t.Fatal("no face in pigo's sample image")
	}
	for i := 1; i < len(faces); i++ {
		if faces[i].Box.W > faces[i-1].Box.W {
			t.Fatalf("faces not largest first: %v", faces)
		}
	}
	b := faces[0].Box
	region := image.Rect(int(b.X-b.W/2), int(b.Y-b.H/2), int(b.X+1.5*b.W), int(b.Y+1.5*b.H))
	in := d.DetectInto(nil, g, region)
	best := 0.0
	for _, f := range in {
		best = math.Max(best, feature.IoU(f.Box, b))
	}
	if best < 0.7 {
		t.Errorf("region search found %v, full frame %v", in, b)
	}
}

// realFrames returns a spread of real photographs from the data set:
// Pointing'04 persons at several poses and AFLW2000 faces.
func realFrames(t *testing.T) []*image.Gray {
	t.Helper()
	var out []*image.Gray
	for _, set := range []string{"pointing04", "aflw2000"} {
		samples, err := dataset.Read(filepath.Join(dataset.Root(), set))
		if err != nil {
			datatest.Missing(t, "data set not available: %v", err)
		}
		for i := 0; i < len(samples); i += len(samples) / 12 {
			g, err := dataset.LoadGray(samples[i].Path)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, g)
		}
	}
	return out
}

// Our clustering is pigo's ClusterDetections, window for window, on the
// raw windows of real photographs (pigo itself is the reference).
func TestClusterMatchesPigo(t *testing.T) {
	ref, err := pigo.NewPigo().Unpack(facefinder)
	if err != nil {
		t.Fatal(err)
	}
	var b Buffers
	windows := 0
	for i, g := range realFrames(t) {
		cp := pigo.CascadeParams{MinSize: 20, MaxSize: 400, ShiftFactor: 0.1, ScaleFactor: 1.1,
			ImageParams: pigo.ImageParams{Pixels: g.Pix, Rows: g.Rect.Dy(), Cols: g.Rect.Dx(), Dim: g.Stride}}
		raw := ref.RunCascade(cp, 0)
		windows += len(raw)
		ours := make([]Window, len(raw))
		for k, r := range raw {
			ours[k] = Window{r.Row, r.Col, r.Scale, r.Q}
		}
		for _, iou := range []float64{0, 0.2, 0.5} {
			want := ref.ClusterDetections(slices.Clone(raw), iou)
			got := cluster(slices.Clone(ours), iou, &b)
			if len(got) != len(want) {
				t.Fatalf("frame %d, IoU %g: %d clusters, pigo %d", i, iou, len(got), len(want))
			}
			for k, w := range want {
				if got[k] != (Window{w.Row, w.Col, w.Scale, w.Q}) {
					t.Errorf("frame %d, IoU %g: cluster %d is %+v, pigo %+v", i, iou, k, got[k], w)
				}
			}
		}
	}
	if windows == 0 {
		t.Fatal("the cascade found no window in any frame: nothing compared")
	}
}

// With reused buffers, a detection allocates nothing (pigo's RunCascade
// allocates its slice of windows every time).
func TestDetectIntoAllocatesNothing(t *testing.T) {
	d, err := NewViews(DefaultParams(), append([]ViewCascade{{View: Frontal, Cascade: Facefinder(), MinScore: 2}}, TurnedViews(Facefinder(), DefaultParams())...)...)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dataset.LoadGray(filepath.Join(dataset.Root(), "pointing04", "Person05", "person05146+0+0.jpg"))
	if err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	var b Buffers
	if len(d.DetectInto(&b, g, g.Rect)) == 0 {
		t.Fatal("no face in the test frame")
	}
	if n := testing.AllocsPerRun(5, func() { d.DetectInto(&b, g, g.Rect) }); n != 0 {
		t.Errorf("DetectInto allocates %.0f times per frame", n)
	}
}

// A face found by several views is reported once, by the view whose
// score per scan density is the larger multiple of its MinScore; faces apart, or of one
// view (merged by the clustering already), all stay unless nested.
func TestMergeViews(t *testing.T) {
	p := DefaultParams()
	p.Nested = 0
	d, err := NewViews(p, ViewCascade{View: Frontal, Cascade: Facefinder(), MinScore: 2},
		ViewCascade{View: YawPositive, Cascade: Facefinder(), MinScore: 10})
	if err != nil {
		t.Fatal(err)
	}
	box := func(x float64) feature.Box { return feature.Box{X: x, Y: 50, W: 100, H: 100} }
	faces := []Face{
		{Box: box(0), Score: 5, View: Frontal},       // 2.5× its minimum
		{Box: box(10), Score: 30, View: YawPositive}, // 3×: wins the overlap
		{Box: box(20), Score: 4, View: Frontal},      // under the turned face too: dropped
		{Box: box(400), Score: 2, View: Frontal},     // apart: stays
		{Box: box(410), Score: 3, View: Frontal},     // overlapping, same view: stays
	}
	faces0 := faces
	got := d.mergeViews(slices.Clone(faces))
	want := []Face{faces[1], faces[3], faces[4]}
	if !slices.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}

	// A view scanned at half the density (growth 1.21 = 1.1², half the
	// scales) puts half the windows on a face: its score counts double.
	d, err = NewViews(p, ViewCascade{View: Frontal, Cascade: Facefinder(), MinScore: 2},
		ViewCascade{View: YawPositive, Cascade: Facefinder(), MinScore: 2, Scale: 1.21})
	if err != nil {
		t.Fatal(err)
	}
	faces = []Face{
		{Box: box(0), Score: 5, View: Frontal},      // 5 windows' worth
		{Box: box(10), Score: 3, View: YawPositive}, // 3 at half the density: 6, wins
		{Box: box(400), Score: 7, View: Frontal},    // 7: wins
		{Box: box(410), Score: 3, View: YawPositive},
	}
	got = d.mergeViews(slices.Clone(faces))
	if want := []Face{faces[1], faces[2]}; !slices.Equal(got, want) {
		t.Errorf("merged at two scan densities %v, want %v", got, want)
	}

	// With Ref, the view's threshold only filters: the first case's
	// turned face (30, 3× a Ref of 10) still wins when its MinScore is
	// lowered, and one weighed by a Ref of 15 (2×) loses to 2.5× whatever
	// its MinScore (the frontal faces it covered then stay).
	for _, c := range []struct {
		minScore, ref float64
		want          []Face
	}{
		{10, 10, []Face{faces0[1], faces0[3], faces0[4]}},
		{1, 10, []Face{faces0[1], faces0[3], faces0[4]}},
		{1, 15, []Face{faces0[0], faces0[2], faces0[3], faces0[4]}},
		{20, 15, []Face{faces0[0], faces0[2], faces0[3], faces0[4]}},
	} {
		d, err := NewViews(p, ViewCascade{View: Frontal, Cascade: Facefinder(), MinScore: 2},
			ViewCascade{View: YawPositive, Cascade: Facefinder(), MinScore: c.minScore, Ref: c.ref})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.mergeViews(slices.Clone(faces0)); !slices.Equal(got, c.want) {
			t.Errorf("MinScore %g, Ref %g: merged %v, want %v", c.minScore, c.ref, got, c.want)
		}
	}

	// Nested boxes: one with at least Nested of its area inside a heavier
	// box goes, of any view, one view alone too; the heavier small box
	// inside a big one, or a box half out of it, stays.
	p.Nested = 0.5
	sq := func(x, y, w float64) feature.Box { return feature.Box{X: x, Y: y, W: w, H: w} }
	for _, views := range [][]ViewCascade{
		{{View: Frontal, Cascade: Facefinder(), MinScore: 2}},
		{{View: Frontal, Cascade: Facefinder(), MinScore: 2}, {View: YawPositive, Cascade: Facefinder(), MinScore: 2, Shift: 0.1, Scale: 1.1}},
	} {
		d, err = NewViews(p, views...)
		if err != nil {
			t.Fatal(err)
		}
		faces = []Face{
			{Box: sq(0, 0, 100), Score: 40, View: Frontal},
			{Box: sq(20, 30, 30), Score: 5, View: Frontal},                   // on an eye of the face: goes
			{Box: sq(90, 0, 20), Score: 3, View: Frontal},                    // half inside (50 %): goes
			{Box: sq(91, 50, 20), Score: 3, View: Frontal},                   // 45 % inside: stays
			{Box: sq(300, 0, 100), Score: 4, View: Frontal},                  // a big box, light
			{Box: sq(320, 20, 40), Score: 9, View: Frontal},                  // heavier, inside it: stays
			{Box: sq(600, 0, 100), Score: 3, View: Frontal},                  // a frontal face …
			{Box: sq(630, 30, 40), Score: 2, View: views[len(views)-1].View}, // … and a lighter box of the other view nested in it: goes
		}
		got = d.mergeViews(slices.Clone(faces))
		if want := []Face{faces[0], faces[3], faces[4], faces[5], faces[6]}; !slices.Equal(got, want) {
			t.Errorf("%d view(s): nested boxes merged to %v, want %v", len(views), got, want)
		}
	}
	// Off (0), nested boxes of one view all stay.
	p.Nested = 0
	if d, err = NewViews(p, ViewCascade{View: Frontal, Cascade: Facefinder(), MinScore: 2}); err != nil {
		t.Fatal(err)
	}
	if got := d.mergeViews(slices.Clone(faces)); len(got) != len(faces) {
		t.Errorf("nested 0 kept %d of %d faces", len(got), len(faces))
	}
}

// The turned cascade, off by default, is not parsed by a default
// detector, and is by one with detect.turned. Each is checked in a fresh
// process (this test binary run again), where nothing parsed it before.
func TestTurnedCascadeParsedOnlyWhenOn(t *testing.T) {
	if mode := os.Getenv("POSED_TURNED_CHILD"); mode != "" {
		p := DefaultParams()
		p.Turned = mode == "on"
		if _, err := New(p); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("parsed=%v\n", turnedParsed.Load())
		return
	}
	if os.Getenv("POSED_EMULATED") != "" {
		t.Skip("under emulation (POSED_EMULATED) a child process cannot be started: runs natively in make test")
	}
	for _, c := range []struct {
		mode string
		want bool
	}{{"off", false}, {"on", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTurnedCascadeParsedOnlyWhenOn$", "-test.count=1")
		cmd.Env = append(os.Environ(), "POSED_TURNED_CHILD="+c.mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.mode, err, out)
		}
		if got := strings.Contains(string(out), fmt.Sprintf("parsed=%v", c.want)); !got {
			t.Errorf("detect.turned %s: want the turned cascade parsed=%v, the child said:\n%s", c.mode, c.want, out)
		}
	}
}
