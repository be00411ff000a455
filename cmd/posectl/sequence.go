package main

import (
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// runSequence writes the demo sequence `make run` replays: a Pointing'04
// person turning the head (from -data, when the data set is there), or else
// frames made from one photograph moved and rotated frame by frame.
func runSequence(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sequence", flag.ContinueOnError)
	out := fs.String("o", "build/run-sequence", "folder to write the frames into")
	data := fs.String("data", dataRoot(), "data root holding pointing04/")
	fallback := fs.String("fallback", "", "photograph to animate when the data set is missing (e.g. pigo's testdata/sample.jpg)")
	frames := fs.Int("frames", 60, "frames to make from the fallback photograph")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(*out, "*.jpg"))
	for _, f := range old {
		os.Remove(f)
	}
	if n, err := sequenceFromData(*data, *out); err == nil {
		fmt.Fprintf(stdout, "wrote %d frames of Pointing'04 person 7 turning the head to %s\n", n, *out)
		return nil
	} else if *fallback == "" {
		return fmt.Errorf("no data set (%v) and no -fallback photograph", err)
	}
	img, err := dataset.LoadGray(*fallback)
	if err != nil {
		return err
	}
	for i := 0; i < *frames; i++ {
		ph := 2 * math.Pi * float64(i) / float64(*frames)
		g := transform(img, 20*math.Sin(ph), 10*math.Sin(2*ph), 8*math.Sin(ph)*math.Pi/180)
		if err := writeJPEG(filepath.Join(*out, fmt.Sprintf("%04d.jpg", i)), g); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %d frames animated from %s to %s\n", *frames, *fallback, *out)
	return nil
}

// sequenceFromData copies person 7's images at pitch 0 from yaw −90° to
// +90° and back, then at yaw 0 from pitch −60° to +60° and back.
func sequenceFromData(root, out string) (int, error) {
	samples, err := dataset.Read(filepath.Join(root, "pointing04"))
	if err != nil {
		return 0, err
	}
	byPose := map[[2]float64]string{}
	for _, s := range samples {
		if s.Subject == "7" && s.Series == 1 {
			byPose[[2]float64{s.Yaw, s.Pitch}] = s.Path
		}
	}
	var poses [][2]float64
	for y := -90.0; y <= 90; y += 15 {
		poses = append(poses, [2]float64{y, 0})
	}
	for y := 75.0; y >= -75; y -= 15 {
		poses = append(poses, [2]float64{y, 0})
	}
	for _, p := range []float64{-15, -30, -60, -30, -15, 0, 15, 30, 60, 30, 15} {
		poses = append(poses, [2]float64{0, p})
	}
	n := 0
	for _, p := range poses {
		path, ok := byPose[p]
		if !ok {
			return 0, fmt.Errorf("no image of person 7 at yaw %g pitch %g", p[0], p[1])
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("%04d.jpg", n)), b, 0o644); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// transform returns img shifted by (dx, dy) pixels and rotated by angle
// (radians) about its centre, sampled bilinearly with edge replication.
func transform(img *image.Gray, dx, dy, angle float64) *image.Gray {
	b := img.Rect
	out := image.NewGray(b)
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	c, s := math.Cos(angle), math.Sin(angle)
	var patch [1]uint8
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			// Inverse map: output pixel → source position.
			ux, uy := float64(x)+0.5-cx-dx, float64(y)+0.5-cy-dy
			sx, sy := c*ux+s*uy+cx, -s*ux+c*uy+cy
			feature.Crop(patch[:], 1, img, feature.Box{X: float64(b.Min.X) + sx - 0.5, Y: float64(b.Min.Y) + sy - 0.5, W: 1, H: 1})
			out.Pix[y*out.Stride+x] = patch[0]
		}
	}
	return out
}

// writePNG writes img to path as a PNG.
func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJPEG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := jpeg.Encode(f, img, &jpeg.Options{Quality: 90}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
