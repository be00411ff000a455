package gllim_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// The vector kernels and the Go ones read the shipped model alike on real
// faces (AFLW2000's first 60, p-HOG at their labelled boxes): within
// 0.01° for every output, as the float64 references bound each kernel on
// random inputs.
func TestVectorKernelsOnRealFaces(t *testing.T) {
	if gllim.VectorKernels() == "go" {
		t.Skip("no vector kernels in this build or on this CPU")
	}
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
	pr, vec, plain := f.NewPredictor(), f.NewPrediction(), f.NewPrediction()
	var ex feature.Extractor
	y := make([]float32, feature.Dim)
	worst := 0.0
	for _, s := range samples[:60] {
		img, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		ex.Extract(y, img, s.Box)
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
