package headpose

import (
	"image"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/yunet"
)

// cloud draws looks about a centre that only a few features tell apart
// (the rest noise of another scale each), with a confidence.
func cloud(rng *rand.Rand, n int, face bool) []LookSample {
	out := make([]LookSample, n)
	for i := range out {
		z := make([]float32, detect.LookFeatures)
		for k := range z {
			z[k] = float32(rng.NormFloat64() * float64(1+k%7) * 10)
		}
		shift := -1.0
		if face {
			shift = 1
		}
		for k := range 5 {
			z[k*40] += float32(shift * 15 * float64(1+(k*40)%7))
		}
		out[i] = LookSample{Z: z, Score: 0.5 + 0.4*rng.Float64(), Face: face}
	}
	return out
}

// A head fitted on two clouds, unequal in number and in features of many
// scales, tells new draws of them apart; its threshold keeps the asked
// share of the training faces the look finds; what it cannot fit is an
// error that says why.
func TestFitLookHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	train := append(cloud(rng, 600, true), cloud(rng, 150, false)...)
	h, rep, err := FitLookHead(train, LookFit{C: 0.01, Keep: 0.98, ConfirmScore: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Faces != 600 || rep.NotFaces != 150 || rep.FacesFound != 600 {
		t.Fatalf("report %+v", rep)
	}
	if share := float64(rep.FacesKept) / float64(rep.FacesFound); math.Abs(share-0.98) > 0.005 {
		t.Errorf("the threshold keeps %.3f of the training faces, want 0.98", share)
	}
	right, all := 0, 0
	for _, s := range append(cloud(rng, 500, true), cloud(rng, 500, false)...) {
		all++
		if (h.Decision(s.Z) >= 0) == s.Face {
			right++
		}
	}
	if acc := float64(right) / float64(all); acc < 0.95 {
		t.Errorf("the head tells %.3f of new looks apart, want 0.95 or more", acc)
	}
	// Looks the daemon does not ask about (too confident, too large) are
	// no part of the fit: here they lie, faces drawn where the other
	// looks are.
	asked := slices.Clone(train)
	for i, s := range cloud(rng, 300, false) {
		s.Face = true
		if i%2 == 0 {
			s.Score = 0.95
		} else {
			s.Side = 200
		}
		asked = append(asked, s)
	}
	ha, repa, err := FitLookHead(asked, LookFit{C: 0.01, Keep: 0.98, ConfirmScore: 0.4, Below: 0.9, Under: 128})
	if err != nil {
		t.Fatal(err)
	}
	if repa != rep || *ha != *h {
		t.Errorf("looks not asked about moved the fit: %+v, want %+v", repa, rep)
	}
	if _, repl, _ := FitLookHead(asked, LookFit{C: 0.01, Keep: 0.98, ConfirmScore: 0.4}); repl.Faces != 900 {
		t.Errorf("without bounds %d faces fitted, want 900", repl.Faces)
	}
	for _, c := range []struct {
		samples []LookSample
		fit     LookFit
		want    string
	}{
		{cloud(rng, 10, true), LookFit{C: 0.01, Keep: 0.99}, "need both"},
		{append(cloud(rng, 3, true), LookSample{Z: make([]float32, 7)}), LookFit{C: 0.01, Keep: 0.99}, "7 features"},
		{train, LookFit{C: 0, Keep: 0.99}, "want C > 0"},
		{train, LookFit{C: 0.01, Keep: 0.99, ConfirmScore: 0.95}, "finds none"},
	} {
		if _, _, err := FitLookHead(c.samples, c.fit); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.fit, err, c.want)
		}
	}
}

// The looks posectl look-train learns from, on real pictures: at the
// labelled faces of AFLW2000's photographs the network looks and finds a
// face (nearly always surely), with the features of that look; in
// face-free scenes that hold a phantom it looks at no face.
func TestCollectLooks(t *testing.T) {
	samples, scenes := facesAndScenes(t, 12, "neg-0696.jpg", "neg-4723.jpg")
	m, err := gllim.ReadFile(filepath.Join("..", "..", "models", "default.gllim"))
	if err != nil {
		t.Fatal(err)
	}
	est, err := pose.New(m, pose.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	looks, err := CollectLooks(LookData{Faces: samples, Scenes: scenes, StartStd: 30, Seed: 1}, yunet.New(yunet.Default()), est, detect.CalibrationOf(m.Calibration))
	if err != nil {
		t.Fatal(err)
	}
	faces, sure, others := 0, 0, 0
	for _, l := range looks {
		if len(l.Z) != detect.LookFeatures {
			t.Fatalf("a look of %d features", len(l.Z))
		}
		if !(l.Side >= 24 && l.Side <= 640) {
			t.Errorf("a look at a box of %.1f px", l.Side)
		}
		if l.Face {
			faces++
			if l.Score >= 0.7 {
				sure++
			}
		} else {
			others++
		}
	}
	t.Logf("%d looks at the 12 faces (%d sure), %d in the two scenes", faces, sure, others)
	if faces < 12 || sure < faces*9/10 {
		t.Errorf("%d looks at 12 labelled faces, %d of them sure: want every face looked at, nearly all surely", faces, sure)
	}
	if others == 0 {
		t.Errorf("no look in two scenes whose things the network takes for faces")
	}
}

// A scene seen twice nearer: a square of half its shorter side, enlarged
// to that side. On a ramp (which bilinear interpolation reproduces) each
// pixel holds the ramp's value at its place in the scene, and a step is
// twice as wide as it was.
func TestNearViews(t *testing.T) {
	w, h := 160, 120
	ramp := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			ramp.Pix[y*ramp.Stride+x] = uint8(x + y)
		}
	}
	views := NearViews([]*image.Gray{ramp, image.NewGray(image.Rect(0, 0, 0, 0))}, 2, 7)
	if len(views) != 1 || views[0].Rect != image.Rect(0, 0, 120, 120) {
		t.Fatalf("views %v, want one of 120×120", views)
	}
	g := views[0]
	for v := 1; v < 119; v++ {
		for u := 1; u < 119; u++ {
			dx := float64(g.Pix[v*g.Stride+u+1]) - float64(g.Pix[v*g.Stride+u-1])
			dy := float64(g.Pix[(v+1)*g.Stride+u]) - float64(g.Pix[(v-1)*g.Stride+u])
			if math.Abs(dx-1) > 1.01 || math.Abs(dy-1) > 1.01 {
				t.Fatalf("at %d,%d the ramp rises %.0f, %.0f over two pixels, want 1 (half the scene's 2)", u, v, dx, dy)
			}
		}
	}
	rise := float64(g.Pix[118*g.Stride+118]) - float64(g.Pix[1*g.Stride+1])
	if math.Abs(rise-117) > 1.01 {
		t.Errorf("across the view the ramp rises %.0f, want 117 (117 pixels at half a level each way)", rise)
	}
	// A reference in float64: the view's pixel is the ramp at its source place.
	ref := func(u, v int, ox, oy float64) float64 {
		return ox + (float64(u)+0.5)/2 - 0.5 + oy + (float64(v)+0.5)/2 - 0.5
	}
	ox := float64(g.Pix[60*g.Stride+60]) - ref(60, 60, 0, 0) // x0 + y0 from one pixel
	for _, p := range [][2]int{{1, 1}, {30, 90}, {118, 5}, {118, 118}} {
		if d := float64(g.Pix[p[1]*g.Stride+p[0]]) - ref(p[0], p[1], ox, 0); math.Abs(d) > 1 {
			t.Errorf("at %v: %d, want the ramp's %.1f", p, g.Pix[p[1]*g.Stride+p[0]], ref(p[0], p[1], ox, 0))
		}
	}
}
