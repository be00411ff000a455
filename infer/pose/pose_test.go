package pose

import (
	"image"
	"math"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
)

func TestMove(t *testing.T) {
	b := feature.Box{X: 10, Y: 20, W: 80, H: 120} // size √(80·120) ≈ 97.98
	m := Move(b, 0.1, -0.2, math.Log(2))
	s := math.Sqrt(80 * 120)
	cx, cy := m.Centre()
	if math.Abs(cx-(50+0.1*s)) > 1e-9 || math.Abs(cy-(80-0.2*s)) > 1e-9 || math.Abs(m.W-160) > 1e-9 || math.Abs(m.H-240) > 1e-9 {
		t.Errorf("moved box %v", m)
	}
}

func model(outputs ...string) *gllim.Model {
	p := gllim.NewParams(1, feature.Dim, len(outputs), 0)
	p.Pi[0] = 1
	for i := 0; i < len(outputs); i++ {
		p.GammaK(0)[i*len(outputs)+i] = 1
	}
	for i := range p.Sigma {
		p.Sigma[i] = 1
	}
	m := &gllim.Model{Params: p, Features: feature.Recipe()}
	for _, o := range outputs {
		m.Outputs = append(m.Outputs, gllim.Output{Name: o, Scale: 1})
	}
	return m
}

func TestNewRejectsUnusableModels(t *testing.T) {
	if _, err := New(model(Yaw, DX, DY), DefaultSettings()); err != nil {
		t.Fatalf("good model rejected: %v", err)
	}
	other := model(Yaw)
	other.Features.Cells = []int{16, 8}
	for name, m := range map[string]*gllim.Model{
		"other features": other,
		"no angle":       model(DX, DY),
		"dx without dy":  model(Yaw, DX),
	} {
		if _, err := New(m, DefaultSettings()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(model(Yaw), Settings{MaxIter: 0}); err == nil {
		t.Error("zero iterations accepted")
	}
}

// A worker estimates without allocating.
func TestEstimateDoesNotAllocate(t *testing.T) {
	e, err := New(model(Yaw, Pitch, DX, DY, DS), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	img := image.NewGray(image.Rect(0, 0, 200, 160))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	w := e.NewWorker()
	box := feature.Box{X: 40, Y: 30, W: 90, H: 90}
	if a := testing.AllocsPerRun(20, func() { w.Estimate(img, box) }); a != 0 {
		t.Errorf("Estimate allocates %.0f times", a)
	}
}
