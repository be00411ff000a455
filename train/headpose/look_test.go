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

// A scene seen twice nearer: a square of half its shorter side, inside
// the scene, enlarged to that side. On a ramp across the scene each
// view's row rises by half a level a pixel from where its square starts,
// and the picture is the scene's bilinear samples at those places,
// checked against a float64 reference of its own.
func TestNearViews(t *testing.T) {
	w, h := 160, 120
	across, down := image.NewGray(image.Rect(0, 0, w, h)), image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			across.Pix[y*across.Stride+x] = uint8(x)
			down.Pix[y*down.Stride+x] = uint8(y)
		}
	}
	views := NearViews([]*image.Gray{across, image.NewGray(image.Rect(0, 0, 0, 0)), down}, 2, 7)
	if len(views) != 2 || views[0].Rect != image.Rect(0, 0, 120, 120) || views[1].Rect != views[0].Rect {
		t.Fatalf("views %v, want two of 120×120 (the empty scene left out)", views)
	}
	// The square's corner from the view itself: pixel 2's centre is at
	// corner + 2.5·½ in the scene, where the ramp (pixel x's centre at
	// x + ½) reads corner + 1.25 − ½.
	for i, g := range views {
		at, room := func(u, v int) float64 { return float64(g.Pix[v*g.Stride+u]) }, w-60
		if i == 1 {
			at, room = func(u, v int) float64 { return float64(g.Pix[u*g.Stride+v]) }, h-60
		}
		corner := at(2, 60) - 0.75
		if !(corner >= -0.5 && corner <= float64(room)+0.5) {
			t.Errorf("view %d: its square starts at %.1f, outside the scene", i, corner)
		}
		for v := range 120 {
			for u := 1; u < 119; u++ {
				if want := corner + (float64(u)+0.5)/2 - 0.5; math.Abs(at(u, v)-want) > 1 {
					t.Fatalf("view %d at %d,%d: %.0f, want the ramp's %.2f", i, u, v, at(u, v), want)
				}
			}
		}
	}
	if slices.Equal(views[0].Pix, NearViews([]*image.Gray{across}, 2, 8)[0].Pix) {
		t.Errorf("another seed put the square at the same place")
	}
}
