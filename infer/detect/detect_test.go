package detect

import (
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/infer/feature"
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
}

func TestParamsValidate(t *testing.T) {
	bad := []func(*Params){
		func(p *Params) { p.MinSize = 4 },
		func(p *Params) { p.MaxSize = p.MinSize - 1 },
		func(p *Params) { p.Shift = 0 },
		func(p *Params) { p.Scale = 1 },
		func(p *Params) { p.IoU = 1.5 },
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
		t.Skipf("pigo sample image not in the module cache: %v", err)
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g := feature.Grey(nil, img)
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
	in := d.DetectIn(g, region)
	best := 0.0
	for _, f := range in {
		best = math.Max(best, feature.IoU(f.Box, b))
	}
	if best < 0.7 {
		t.Errorf("region search found %v, full frame %v", in, b)
	}
}
