package gllim_test

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// realFaces returns the shipped model, its forward model and the p-HOG
// features of AFLW2000's first 60 faces at their labelled boxes.
func realFaces(t *testing.T) (*gllim.Model, *gllim.Forward, [][]float32) {
	t.Helper()
	m, err := gllim.ReadFile(filepath.Join("..", "..", "models", "default.gllim"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := dataset.Read(filepath.Join(datatest.Root(t), "aflw2000"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	var ex feature.Extractor
	ys := make([][]float32, 60)
	for i, s := range samples[:len(ys)] {
		img, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		ys[i] = make([]float32, feature.Dim)
		ex.Extract(ys[i], img, s.Box)
	}
	return m, f, ys
}

// The vector kernels and the Go ones read the shipped model alike on real
// faces (AFLW2000's first 60, p-HOG at their labelled boxes): within
// 0.01° for every output, as the float64 references bound each kernel on
// random inputs.
func TestVectorKernelsOnRealFaces(t *testing.T) {
	if gllim.VectorKernels() == "go" {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	m, f, ys := realFaces(t)
	pr, vec, plain := f.NewPredictor(), f.NewPrediction(), f.NewPrediction()
	worst := 0.0
	for _, y := range ys {
		pr.Predict(&vec, y)
		prev := gllim.UseVectorKernels(false)
		pr.Predict(&plain, y)
		gllim.UseVectorKernels(prev)
		for a := range m.Outputs {
			worst = math.Max(worst, math.Abs(vec.Mean[a]-plain.Mean[a]))
		}
	}
	t.Logf("%s kernels vs Go kernels on 60 real faces: worst difference %.3g°", gllim.VectorKernels(), worst)
	if worst > 1e-2 {
		t.Errorf("%s and Go kernels differ by %.3g° on real faces", gllim.VectorKernels(), worst)
	}
}

// On real faces (AFLW2000's first 60, the shipped model) the components
// that carry a prediction's weight (Heavy at 10⁻⁹ of each member's
// largest) are a few of the model's, and the prediction on them alone
// (PredictIn) reads the face as the whole model does, within 10⁻⁶ of a
// degree, of the σ and of a nat; the set of every component is Predict
// itself, and the largest component alone (Heavy at 1) does not read as
// the whole model where others carry weight.
func TestHeavyComponentsReadTheFace(t *testing.T) {
	m, f, ys := realFaces(t)
	pr, all, in, top := f.NewPredictor(), f.NewPrediction(), f.NewPrediction(), f.NewPrediction()
	n := f.Members() * f.K
	var worst [3]float64
	held, apart := 0, 0
	for i, y := range ys {
		pr.Predict(&all, y)
		var every gllim.Components
		pr.PredictIn(&in, y, &every)
		if !slices.Equal(in.Mean, all.Mean) || !slices.Equal(in.Cov, all.Cov) || in.LogDensity != all.LogDensity {
			t.Fatalf("face %d: the set of every component reads %v, Predict %v", i, in.Mean, all.Mean)
		}
		heavy := all.Heavy(1e-9)
		held += heavy.Len(n)
		pr.PredictIn(&in, y, &heavy)
		for a := range m.Outputs {
			worst[0] = math.Max(worst[0], math.Abs(in.Mean[a]-all.Mean[a]))
			worst[1] = math.Max(worst[1], math.Abs(in.Std(a)/all.Std(a)-1))
		}
		worst[2] = math.Max(worst[2], math.Abs(in.LogDensity-all.LogDensity))
		one := all.Heavy(1)
		if one.Len(n) != f.Members() {
			t.Fatalf("face %d: the largest components are %d, want one a member", i, one.Len(n))
		}
		pr.PredictIn(&top, y, &one)
		if math.Abs(top.Mean[0]-all.Mean[0]) > 0.01 {
			apart++
		}
	}
	t.Logf("heavy components: %.1f of %d a face on average; read within %.2g (mean), %.2g (σ, relative), %.2g nats; the largest alone off by 0.01° or more on %d of 60",
		float64(held)/60, n, worst[0], worst[1], worst[2], apart)
	if held > 60*n/3 {
		t.Errorf("%d heavy components of %d a face on average: the set saves little", held/60, n)
	}
	if worst[0] > 1e-6 || worst[1] > 1e-6 || worst[2] > 1e-6 {
		t.Errorf("the heavy components read the faces %.2g off (mean), %.2g (σ), %.2g nats", worst[0], worst[1], worst[2])
	}
	if apart < 10 {
		t.Errorf("the largest component alone reads as the whole model on %d of 60 faces: the restriction does not show", 60-apart)
	}
}
