package annotate

import (
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/edgepose/posed/infer/feature"
)

// The axes follow the angle conventions: a frontal face's nose axis
// projects to a point, yaw +90° points it to the image's left, pitch +90°
// up, and roll turns the up axis clockwise on the image for roll > 0.
func TestAxes(t *testing.T) {
	near := func(a, b [2]float64) bool { return math.Abs(a[0]-b[0]) < 1e-9 && math.Abs(a[1]-b[1]) < 1e-9 }
	cases := []struct {
		angles   [3]float64
		axis     int
		want     [2]float64
		whatSays string
	}{
		{[3]float64{0, 0, 0}, 2, [2]float64{0, 0}, "frontal nose: a point"},
		{[3]float64{0, 0, 0}, 1, [2]float64{0, -1}, "frontal up: image up"},
		{[3]float64{0, 0, 0}, 0, [2]float64{1, 0}, "frontal x: image right"},
		{[3]float64{90, 0, 0}, 2, [2]float64{-1, 0}, "yaw +90: nose to the image's left"},
		{[3]float64{0, 90, 0}, 2, [2]float64{0, -1}, "pitch +90: nose up"},
		{[3]float64{0, 0, 90}, 1, [2]float64{1, 0}, "roll +90: up axis to the image's right"},
	}
	for _, c := range cases {
		if got := Axes(c.angles)[c.axis]; !near(got, c.want) {
			t.Errorf("%s: %v, want %v", c.whatSays, got, c.want)
		}
	}
}

// Faces draws the box, the id and the axes where they belong, and clips
// what leaves the image.
func TestFacesDraws(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 120, 100))
	img := Grey(nil, g)
	Faces(img, []Face{
		{Box: feature.Box{X: 30, Y: 30, W: 40, H: 40}, ID: 17, Angles: [3]float64{90, 0, 0}, Has: [3]bool{true, true, true}},
		{Box: feature.Box{X: 100, Y: 90, W: 80, H: 80}, ID: 3}, // mostly outside
	})
	if c := img.RGBAAt(30, 36); c != BoxColour {
		t.Errorf("left edge of the box: %v", c)
	}
	// Yaw +90: the blue nose axis runs from the centre (50, 50) leftwards.
	if c := img.RGBAAt(38, 50); c != axisRGB[2] {
		t.Errorf("nose axis left of the centre: %v", c)
	}
	if c := img.RGBAAt(62, 50); c == axisRGB[2] {
		t.Errorf("nose axis drawn to the right")
	}
	// "17" above the box: the 1's stem.
	lit := 0
	for y := 18; y < 28; y++ {
		for x := 30; x < 46; x++ {
			if img.RGBAAt(x, y) == BoxColour {
				lit++
			}
		}
	}
	if lit < 20 {
		t.Errorf("the id is not drawn above the box (%d pixels)", lit)
	}
	// Landmarks: a cross at each point, nothing where a face has none.
	img = Grey(nil, g)
	pts := [5][2]float64{{40, 40}, {60, 40}, {50, 50}, {42, 60}, {58, 60}}
	Faces(img, []Face{{Box: feature.Box{X: 30, Y: 30, W: 40, H: 40}, Points: pts, HasPoints: true}})
	for _, p := range pts {
		for _, d := range [][2]int{{0, 0}, {-2, 0}, {2, 0}, {0, -2}, {0, 2}} {
			if c := img.RGBAAt(int(p[0])+d[0], int(p[1])+d[1]); c != PointColour {
				t.Errorf("landmark %v%+v: %v", p, d, c)
			}
		}
	}
	img = Grey(nil, g)
	Faces(img, []Face{{Box: feature.Box{X: 30, Y: 30, W: 40, H: 40}, Points: pts}})
	if c := img.RGBAAt(50, 50); c == PointColour {
		t.Error("landmarks drawn for a face without them")
	}
}

// The attention is written under the box: the target and its dwell in the
// box's colour, an unknown state in the doubt colour.
func TestFacesWritesAttention(t *testing.T) {
	img := Grey(nil, image.NewGray(image.Rect(0, 0, 160, 120)))
	Faces(img, []Face{{Box: feature.Box{X: 10, Y: 10, W: 60, H: 50}, Target: "road", Dwell: 1.25, HasDwell: true, State: "unknown"}})
	count := func(y0, y1 int, c color.RGBA) int {
		n := 0
		for y := y0; y < y1; y++ {
			for x := 10; x < 110; x++ {
				if img.RGBAAt(x, y) == c {
					n++
				}
			}
		}
		return n
	}
	// Line 1 ("road 1.2s") from y = 62, line 2 ("unknown") from y = 76.
	if n := count(62, 76, BoxColour); n < 30 {
		t.Errorf("target line: %d pixels of the box colour", n)
	}
	if n := count(76, 90, doubtColour); n < 30 {
		t.Errorf("state line: %d pixels of the doubt colour", n)
	}
	if n := count(62, 90, color.RGBA{0, 0, 0, 255}); n < 200 {
		t.Errorf("no dark band under the text (%d pixels)", n)
	}
}
