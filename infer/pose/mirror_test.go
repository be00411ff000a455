package pose

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// With Settings.Mirror and the shipped model and profile expert, on real
// faces turned 60° either way: the model's answers for the face and for
// its mirror are averaged first, and the expert, asked about the face
// turned the way that average's yaw says, blends with it by its weight.
// The reference is written here from the two forward models' own
// predictions.
func TestMirrorWithExpert(t *testing.T) {
	m, err := gllim.ReadFile("../../models/default.gllim")
	if err != nil {
		t.Fatal(err)
	}
	x, err := gllim.ReadFile("../../models/default-profile.gllim")
	if err != nil {
		t.Fatal(err)
	}
	xp, err := ExpertOf(x)
	if err != nil {
		t.Fatal(err)
	}
	xp.ByDensity = false // the gate alone: the reference below has no density test
	e, err := New(m, Settings{MaxIter: 1, Mirror: true})
	if err != nil {
		t.Fatal(err)
	}
	if e, err = e.WithExpert(xp); err != nil {
		t.Fatal(err)
	}
	mf, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	xf, err := gllim.NewForward(x)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, o := range m.Outputs {
		index[o.Name] = i
	}
	weight := map[string]float64{}
	for _, o := range m.Outputs {
		weight[o.Name] = 0
	}
	a := xp.Weight
	if a == 0 {
		a = 1
	}
	if len(xp.Outputs) == 0 {
		for _, o := range m.Outputs {
			weight[o.Name] = a
		}
	}
	for _, o := range xp.Outputs {
		weight[o] = a
	}
	sign := func(name string) float64 {
		if name == Yaw || name == Roll || name == DX {
			return -1
		}
		return 1
	}
	perm := feature.MirrorPermutation()
	samples, err := dataset.ReadPointing04(filepath.Dir(datatest.File(t, "pointing04", "Person05")))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"person05150+0+60.jpg", "person05142+0-60.jpg"} {
		var s *dataset.Sample
		for i := range samples {
			if filepath.Base(samples[i].Path) == name {
				s = &samples[i]
			}
		}
		if s == nil {
			t.Fatalf("%s is not among Pointing'04's faces", name)
		}
		img, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		box := s.Box.Square()
		var ex feature.Extractor
		y := make([]float32, feature.Dim)
		ex.Extract(y, img, box)
		ym := make([]float32, len(y))
		for i, j := range perm {
			ym[i] = y[j]
		}
		py, pm := predictOn(mf, y), predictOn(mf, ym)
		avg := make([]float64, len(m.Outputs))
		for i, o := range m.Outputs {
			avg[i] = (py.Mean[i] + sign(o.Name)*pm.Mean[i]) / 2
		}
		yaw := avg[index[Yaw]]
		if !(math.Abs(yaw) >= xp.Gate) {
			t.Fatalf("%s: the model's averaged yaw %.1f is not past the expert's gate %.0f", name, yaw, xp.Gate)
		}
		in, side := y, 1.0
		if yaw < 0 {
			in, side = ym, -1
		}
		xa := predictOn(xf, in)
		r := e.NewWorker().Estimate(img, box)
		for k, angle := range AngleNames {
			i := index[angle]
			xm := xa.Mean[i]
			if side < 0 {
				xm *= sign(angle)
			}
			want := (1-weight[angle])*avg[i] + weight[angle]*xm
			if math.Abs(r.Angles[k]-want) > 1e-3 {
				t.Errorf("%s: %s %.4f, want %.4f (the model's %.2f and its mirror's %.2f averaged, the expert's %.2f at weight %.2f)",
					name, angle, r.Angles[k], want, py.Mean[i], sign(angle)*pm.Mean[i], xm, weight[angle])
			}
		}
	}
}
