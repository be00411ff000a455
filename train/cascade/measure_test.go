package cascade

import (
	"fmt"
	"image"
	"testing"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// False detections are counted on frames of the pictures measured: each
// whole picture at 640×480 and its 640×480 tiles. The held-out third of
// the training folder, or (-face-free) every picture of a folder no
// cascade mined.
func TestFaceFreeFrames(t *testing.T) {
	pic := func(name string, w, h int) Picture {
		return Picture{Name: name, Img: Image{Pix: make([]uint8, w*h), W: w, H: h}}
	}
	pics := []Picture{pic("a.jpg", 1280, 960), pic("b.jpg", 700, 500), pic("c.jpg", 1920, 480)}
	for _, c := range []struct {
		measured func(string) bool
		want     int
	}{
		{func(string) bool { return true }, (1 + 4) + (1 + 1) + (1 + 3)},
		{func(n string) bool { return n == "a.jpg" }, 1 + 4},
		{func(string) bool { return false }, 0},
	} {
		frames := FaceFreeFrames(pics, c.measured)
		if len(frames) != c.want {
			t.Errorf("%d frames, want %d", len(frames), c.want)
		}
		for _, f := range frames {
			if f.Rect.Dx() != 640 || f.Rect.Dy() != 480 {
				t.Errorf("a frame of %v, want 640×480", f.Rect)
			}
		}
	}
}

// A photograph's detections count as found in its |yaw| bin when one
// finds the labelled face, as false otherwise (near where it overlaps the
// face); published boxes count the same way.
func TestCountsByYaw(t *testing.T) {
	face := feature.Box{X: 100, Y: 100, W: 80, H: 80}
	s := dataset.Sample{Yaw: -62, HasYaw: true, Box: face}
	var r Counts
	on := dface(face)
	off := dface(feature.Box{X: 400, Y: 300, W: 60, H: 60})
	near := dface(feature.Box{X: 150, Y: 150, W: 80, H: 80})
	pub := func([]detect.Face, *image.Gray) []feature.Box { return []feature.Box{near.Box} }
	r.count(s, []detect.Face{on, off, near}, pub, nil)
	s.Yaw = 80
	r.count(s, []detect.Face{off}, nil, nil)
	if r.Found != [6]int{4: 1} || r.Total != [6]int{4: 1, 5: 1} {
		t.Errorf("found %v of %v, want the 60–75 face found and the 75–90 one missed", r.Found, r.Total)
	}
	if r.Falses != 3 || r.Near != 1 || r.PubFalses != 1 || r.PubNear != 1 || r.Photos != 2 {
		t.Errorf("falses %d (near %d), published %d (near %d), photos %d; want 3 (1), 1 (1), 2", r.Falses, r.Near, r.PubFalses, r.PubNear, r.Photos)
	}
	if yawBin(89.9) != 5 || yawBin(-15) != 1 || yawBin(14.99) != 0 || yawBin(120) != 5 {
		t.Error("yaw bins: want 0–15, 15–30, … 75–90 and beyond in the last")
	}
}

func dface(b feature.Box) detect.Face { return detect.Face{Box: b} }

// Phantoms averages the boxes over every detector and frame: a face
// photograph's boxes and a blank frame's none, each seen by two
// detectors; what posed would publish is counted apart.
func TestPhantoms(t *testing.T) {
	d, err := detect.New(detect.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	face, err := dataset.LoadGray(datatest.File(t, "pointing04", "Person02", "person02145+0-15.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(d.Detect(face))
	if n == 0 {
		t.Fatal("facefinder finds no face on a frontal Pointing'04 photograph")
	}
	blank := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range blank.Pix {
		blank.Pix[i] = 128
	}
	one := func([]detect.Face, *image.Gray) []feature.Box { return []feature.Box{{W: 1, H: 1}} }
	raw, pub := Phantoms([]*detect.Detector{d, d}, []*image.Gray{face, blank}, one)
	if raw != float64(n)/2 || pub != 1 {
		t.Errorf("%d boxes on the photograph, none on the blank frame: %g boxes and %g published per frame, want %g and 1", n, raw, pub, float64(n)/2)
	}
	if raw, pub := Phantoms(nil, nil, nil); raw != 0 || pub != 0 {
		t.Errorf("nothing measured: %g, %g", raw, pub)
	}
}

// The windows of about 1 in n persons calibrate, all of a person's or
// none, and the counts say how many windows and persons.
func TestFaceSetCalibration(t *testing.T) {
	var samples []dataset.Sample
	var f FaceSet
	for p := range 200 {
		samples = append(samples, dataset.Sample{Set: "aflw2000", Subject: fmt.Sprintf("image%05d", p)})
		for range 3 { // three windows a face
			f.Windows = append(f.Windows, Window{})
			f.Sample = append(f.Sample, p)
		}
	}
	marks, windows, persons := f.Calibration(samples, 5)
	if windows != 3*persons || persons < 20 || persons > 60 {
		t.Errorf("%d windows of %d persons calibrate, want 3 a person and about 40 of 200", windows, persons)
	}
	for i := 0; i < len(marks); i += 3 {
		if marks[i] != marks[i+1] || marks[i] != marks[i+2] || marks[i] != Calibrates(samples[i/3], 5) {
			t.Fatalf("person %d: windows marked %v %v %v", i/3, marks[i], marks[i+1], marks[i+2])
		}
	}
}
