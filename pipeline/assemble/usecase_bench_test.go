package assemble

import (
	"image"
	"path/filepath"
	"slices"
	"testing"
	"time"

	pigo "github.com/esimov/pigo/core"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// BenchmarkUseCases: what each example configuration's frame path costs
// over a still scene of 150 frames, its average frame against pigo's
// facefinder frame on the 640×480 frame with a face (detection, as pigo
// runs it), timed alternately so that both see the same machine:
//   - defaults: no configuration (640×480, scan tiles, a scan every 8
//     frames) on that frame (one face), and the same with the scan of
//     before (no tiles, a scan every 15);
//   - car and robot: config/examples/car.yaml, robot.yaml on that frame
//     (one face, 640×480, no tiles);
//   - living-room: config/examples/living-room.yaml (1280×720, the
//     defaults' scan tiles and a scan every 8 frames) on a frame with
//     four faces of about 50 px across the room, and the same without
//     tiles, a scan every 15.
//
// x-pigo is the average frame in pigo frames; pigo-frames/s that times
// the example's frame rate: what a second costs, in pigo frames (a
// Raspberry Pi 4 core's share is that times pigo's frame there).
func BenchmarkUseCases(b *testing.B) {
	face := datatest.Frame640(b)
	room := roomFrame(b)
	cases := []struct {
		name, file string
		img        *image.Gray
		noTiles    bool
	}{
		{"defaults", "", face, false},
		{"defaults-no-tiles", "", face, true},
		{"car", "car.yaml", face, false},
		{"robot", "robot.yaml", face, false},
		{"living-room", "living-room.yaml", room, false},
		{"living-room-no-tiles", "living-room.yaml", room, true},
	}
	ff, err := datatest.Facefinder()
	if err != nil {
		b.Fatal(err)
	}
	p := detect.DefaultParams()
	pigoFrame := func() int {
		raw := ff.RunCascade(pigo.CascadeParams{MinSize: 60, MaxSize: 400, ShiftFactor: p.Shift, ScaleFactor: p.Scale,
			ImageParams: pigo.ImageParams{Pixels: face.Pix, Rows: face.Rect.Dy(), Cols: face.Rect.Dx(), Dim: face.Stride}}, 0)
		return len(ff.ClusterDetections(raw, p.IoU))
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg := config.Default()
			if c.file != "" {
				var err error
				if cfg, err = config.Load(filepath.Join("..", "..", "config", "examples", c.file), Problems); err != nil {
					b.Fatal(err)
				}
			}
			if c.noTiles {
				cfg.Detect.ScanTiles, cfg.Detect.ScanEvery = 0, 15
			}
			tr := shippedTracker(b, cfg)
			const frames = 150
			faces := 0
			var ours, ref []time.Duration
			for b.Loop() {
				tr.Reset()
				t0 := time.Now()
				for range frames {
					faces += len(tr.Process(c.img))
				}
				t1 := time.Now()
				if pigoFrame() == 0 {
					b.Fatal("pigo finds no face")
				}
				ours, ref = append(ours, t1.Sub(t0)/frames), append(ref, time.Since(t1))
			}
			if faces == 0 {
				b.Fatal("no face published")
			}
			slices.Sort(ours)
			slices.Sort(ref)
			r := float64(ours[len(ours)/2]) / float64(ref[len(ref)/2])
			b.ReportMetric(r, "x-pigo")
			b.ReportMetric(r*float64(cfg.Source.FPS), "pigo-frames/s")
			b.ReportMetric(float64(faces)/float64(frames*len(ours)), "faces/frame")
		})
	}
}

// roomFrame is a 1280×720 grey frame with Frame640's face shrunk 3 times
// (to about 50 px) at four places: people across a room.
func roomFrame(b *testing.B) *image.Gray {
	src := datatest.Frame640(b)
	room := image.NewGray(image.Rect(0, 0, 1280, 720))
	for i := range room.Pix {
		room.Pix[i] = 128
	}
	const k = 3
	for _, at := range []image.Point{{100, 150}, {450, 300}, {800, 120}, {1000, 400}} {
		for y := range 480 / k {
			for x := range 640 / k {
				sum := 0
				for dy := range k {
					for dx := range k {
						sum += int(src.Pix[(y*k+dy)*src.Stride+x*k+dx])
					}
				}
				room.Pix[(at.Y+y)*1280+at.X+x] = uint8(sum / (k * k))
			}
		}
	}
	return room
}
