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

// BenchmarkEstimateTurned: a face turned 60° and a frontal one
// (Pointing'04, person 5), Algorithm 1 with the default settings, by the
// shipped model alone, with its profile expert by its yaw gate, and by its
// gate or its density. Past the gate the expert answers at each
// iteration; below it, an expert used by density first weighs the face and
// its mirror (two of its predictions), which every face pays.
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
	face := func(yaw float64) *dataset.Sample {
		for i := range samples {
			if samples[i].Yaw == yaw && samples[i].Pitch == 0 && filepath.Base(filepath.Dir(samples[i].Path)) == "Person05" {
				return &samples[i]
			}
		}
		b.Fatalf("no face at yaw %g, pitch 0", yaw)
		return nil
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
	// The expert by its yaw gate alone, and also by density (the margin
	// its file gives, or 20 nats).
	xp.ByDensity = false
	gated, err := alone.WithExpert(xp)
	if err != nil {
		b.Fatal(err)
	}
	if !xp.ByDensity && xp.Margin == 0 {
		xp.Margin = 20
	}
	xp.ByDensity = true
	dens, err := alone.WithExpert(xp)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name string
		s    *dataset.Sample
	}{{"turned-60", face(60)}, {"frontal", face(0)}} {
		img, err := dataset.LoadGray(f.s.Path)
		if err != nil {
			b.Fatal(err)
		}
		box := f.s.Box.Square()
		for _, c := range []struct {
			name string
			est  *pose.Estimator
		}{{"model", alone}, {"model+expert-gate", gated}, {"model+expert-density", dens}} {
			b.Run(f.name+"/"+c.name, func(b *testing.B) {
				w := c.est.NewWorker()
				var r pose.Result
				b.ReportAllocs()
				for b.Loop() {
					r = w.Estimate(img, box)
				}
				b.ReportMetric(math.Abs(r.Angles[0]-f.s.Yaw), "yaw-error-deg")
				b.ReportMetric(float64(r.Iterations), "iterations")
			})
		}
	}
}
