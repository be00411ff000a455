package pose_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

// BenchmarkEstimateTurned: one face turned 60° (Pointing'04, person 5),
// Algorithm 1 with the default settings, by the shipped model alone and
// with its profile expert (which then answers at each of the iterations:
// the expert's cost is paid on turned faces only).
func BenchmarkEstimateTurned(b *testing.B) {
	dir := filepath.Join(dataset.Root(), "pointing04")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Skip(err)
	}
	samples, err := dataset.ReadPointing04(dir)
	if err != nil {
		b.Fatal(err)
	}
	var s *dataset.Sample
	for i := range samples {
		if samples[i].Yaw == 60 && samples[i].Pitch == 0 && filepath.Base(filepath.Dir(samples[i].Path)) == "Person05" {
			s = &samples[i]
		}
	}
	if s == nil {
		b.Fatal("no face at yaw 60, pitch 0")
	}
	img, err := dataset.LoadGray(s.Path)
	if err != nil {
		b.Fatal(err)
	}
	m, err := gllim.ReadFile("../../models/default.gllim")
	if err != nil {
		b.Fatal(err)
	}
	x, err := gllim.ReadFile("../../models/default-profile.gllim")
	if err != nil {
		b.Fatal(err)
	}
	alone, err := pose.New(m, pose.DefaultSettings())
	if err != nil {
		b.Fatal(err)
	}
	xp, err := pose.ExpertOf(x)
	if err != nil {
		b.Fatal(err)
	}
	with, err := alone.WithExpert(xp)
	if err != nil {
		b.Fatal(err)
	}
	box := s.Box.Square()
	for _, c := range []struct {
		name string
		est  *pose.Estimator
	}{{"model", alone}, {"model+expert", with}} {
		b.Run(c.name, func(b *testing.B) {
			w := c.est.NewWorker()
			var r pose.Result
			b.ReportAllocs()
			for b.Loop() {
				r = w.Estimate(img, box)
			}
			b.ReportMetric(math.Abs(r.Angles[0]-s.Yaw), "yaw-error-deg")
			b.ReportMetric(float64(r.Iterations), "iterations")
		})
	}
}
