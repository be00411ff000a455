package detect

import (
	"fmt"
	"image"
	"os"
	"testing"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/train/dataset/datatest"
)

// BenchmarkScan: facefinder over a 640×480 frame with the daemon's
// settings (faces of 60–400 px), by pigo's RunCascade (the floor this
// package must beat) and by the scanner, in the same run.
func BenchmarkScan(b *testing.B) {
	g := datatest.Frame640(b)
	ff := mustFacefinder(b)
	p := DefaultParams()
	sp := scanParams{p.MinSize, p.MaxSize, p.Shift, p.Scale}
	ref, _ := pigo.NewPigo().Unpack(facefinder)
	b.Run("pigo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref.RunCascade(pigo.CascadeParams{MinSize: p.MinSize, MaxSize: p.MaxSize, ShiftFactor: p.Shift, ScaleFactor: p.Scale,
				ImageParams: pigo.ImageParams{Pixels: g.Pix, Rows: 480, Cols: 640, Dim: g.Stride}}, 0)
		}
	})
	b.Run("scanner", func(b *testing.B) {
		var sc scanner
		var w []Window
		b.ReportAllocs()
		for b.Loop() {
			w = sc.scan(w[:0], ff, g.Pix, g.Stride, 480, 640, sp)
		}
	})
}

// BenchmarkTurned: the embedded turned cascade's two views over a 640×480
// frame, at its default scan and at coarser ones, beside facefinder and
// pigo in the same run (the floor: pigo's facefinder alone).
func BenchmarkTurned(b *testing.B) {
	g := datatest.Frame640(b)
	p := DefaultParams()
	ref, _ := pigo.NewPigo().Unpack(facefinder)
	b.Run("pigo-facefinder", func(b *testing.B) {
		for b.Loop() {
			ref.RunCascade(pigo.CascadeParams{MinSize: p.MinSize, MaxSize: p.MaxSize, ShiftFactor: p.Shift, ScaleFactor: p.Scale,
				ImageParams: pigo.ImageParams{Pixels: g.Pix, Rows: 480, Cols: 640, Dim: g.Stride}}, 0)
		}
	})
	// A candidate cascade (a file of posectl cascade) at the default
	// turned scan, to compare with the embedded one before shipping it.
	if path := os.Getenv("POSED_TURNED_CASCADE"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		c, err := ParseCascade(raw)
		if err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		b.Run("candidate-both-views", func(b *testing.B) {
			scanBothViews(b, c, g, scanParams{p.MinSize, p.MaxSize, p.TurnedShift, p.TurnedScale})
		})
	}
	// The default turned scan with the Go walk (walkFour), as on a board
	// without the vector walk: ARM and purego builds.
	b.Run("both-views-go-walk", func(b *testing.B) {
		prev := useVectorWalk(false)
		defer useVectorWalk(prev)
		scanBothViews(b, Turned(), g, scanParams{p.MinSize, p.MaxSize, p.TurnedShift, p.TurnedScale})
	})
	for _, s := range [][2]float64{{0.1, 1.1}, {0.1, 1.2}, {0.15, 1.1}, {0.15, 1.2}} {
		b.Run(fmt.Sprintf("both-views-%g-%g", s[0], s[1]), func(b *testing.B) {
			scanBothViews(b, Turned(), g, scanParams{p.MinSize, p.MaxSize, s[0], s[1]})
		})
	}
}

// scanBothViews times cascade c, as it is and mirrored, over frame g.
func scanBothViews(b *testing.B, c *Cascade, g *image.Gray, sp scanParams) {
	var sc scanner
	var w []Window
	m := c.Mirrored()
	for b.Loop() {
		w = sc.scan(w[:0], c, g.Pix, g.Stride, 480, 640, sp)
		w = sc.scan(w, m, g.Pix, g.Stride, 480, 640, sp)
	}
}
