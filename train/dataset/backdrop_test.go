package dataset_test

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// studio draws a head (a skin-coloured disc under dark hair) left of the
// middle of a grey wall lit more on the left than on the right, with
// noise, and returns the picture and where the person is. The skin is as
// bright as the wall behind it: only its colour tells them apart.
func studio(w, h int, rng *rand.Rand) (*image.RGBA, []bool) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	person := make([]bool, w*h)
	cx, cy, r := float64(w)*0.4, float64(h)/2, float64(h)/4
	for y := range h {
		for x := range w {
			n := rng.NormFloat64() * 2
			wall := 215 - 30*float64(x)/float64(w) + n
			c := color.RGBA{uint8(wall), uint8(wall), uint8(wall + 3), 255}
			dx, dy := float64(x)-cx, float64(y)-cy
			switch {
			case dx*dx+dy*dy <= r*r && dy < -r/2:
				c = color.RGBA{uint8(60 + n), uint8(45 + n), uint8(35 + n), 255} // hair
				person[y*w+x] = true
			case dx*dx+dy*dy <= r*r:
				c = color.RGBA{uint8(240 + n), uint8(195 + n), uint8(175 + n), 255} // skin
				person[y*w+x] = true
			case y > h*4/5 && math.Abs(dx) < r*1.5:
				c = color.RGBA{uint8(40 + n), uint8(60 + n), uint8(120 + n), 255} // shoulders
				person[y*w+x] = true
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img, person
}

// The matte separates the person from a plain wall, even a face as bright
// as the wall (its colour tells them apart), and errs where there is no
// wall to find.
func TestMatteSeparatesPersonFromWall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	img, person := studio(192, 144, rng)
	alpha, err := dataset.Matte(img)
	if err != nil {
		t.Fatal(err)
	}
	// Away from the edge (two pixels: the smoothing and the soft edge)
	// every pixel is on its side.
	w, h := 192, 144
	wrong, n := 0, 0
	for y := 2; y < h-2; y++ {
		for x := 2; x < w-2; x++ {
			edge := false
			for dy := -2; dy <= 2; dy++ {
				for dx := -2; dx <= 2; dx++ {
					edge = edge || person[(y+dy)*w+x+dx] != person[y*w+x]
				}
			}
			if edge {
				continue
			}
			n++
			if a := alpha[y*w+x]; person[y*w+x] && a != 1 || !person[y*w+x] && a != 0 {
				wrong++
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d pixels away from the edge on the wrong side of the matte", wrong, n)
	}

	noisy := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range noisy.Pix {
		noisy.Pix[i] = uint8(rng.IntN(256))
	}
	if _, err := dataset.Matte(noisy); err == nil {
		t.Error("a picture of noise got a matte, want an error: its borders are no wall")
	}
	grey := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range grey.Pix {
		grey.Pix[i] = 200
	}
	if _, err := dataset.Matte(grey); err == nil {
		t.Error("a bare wall got a matte, want an error: no person stands out")
	}
}

// On Pointing'04's photographs the matte keeps the face and takes the wall
// above and beside the head.
func TestMatteOnPointing04(t *testing.T) {
	for _, name := range []string{"person01152+0+90.jpg", "person01141+0-75.jpg", "person01250+0+60.jpg"} {
		path := datatest.File(t, "pointing04", "Person01", name)
		img, err := dataset.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := dataset.Matte(img)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		samples, err := dataset.Read(datatest.Root(t) + "/pointing04")
		if err != nil {
			t.Fatal(err)
		}
		var box feature.Box
		for _, s := range samples {
			if s.Path == path {
				box = s.Box
			}
		}
		w := img.Bounds().Dx()
		if !dataset.MatteHolds(alpha, w, box) {
			t.Errorf("%s: the matte takes the middle of the face box %v for wall", name, box)
		}
		// The corners above the head are wall.
		for _, p := range [][2]int{{10, 10}, {w - 11, 10}} {
			if a := alpha[p[1]*w+p[0]]; a != 0 {
				t.Errorf("%s: the wall at %v has alpha %g, want 0", name, p, a)
			}
		}
	}
}

// Composite keeps the person's pixels, puts the picture's where the wall
// was and blends the edge; the same seed gives the same crop.
func TestComposite(t *testing.T) {
	im := image.NewGray(image.Rect(0, 0, 40, 30))
	alpha := make([]float32, len(im.Pix))
	for i := range im.Pix {
		im.Pix[i] = 200
		switch x := i % 40; {
		case x < 10:
			alpha[i] = 1
		case x == 10:
			alpha[i] = 0.5
		}
	}
	pic := image.NewGray(image.Rect(0, 0, 300, 200))
	for i := range pic.Pix {
		pic.Pix[i] = uint8(i % 7 * 10) // 0–60, never the wall's 200
	}
	a := dataset.Composite(im, alpha, pic, rand.New(rand.NewPCG(3, 4)))
	b := dataset.Composite(im, alpha, pic, rand.New(rand.NewPCG(3, 4)))
	for i := range a.Pix {
		if a.Pix[i] != b.Pix[i] {
			t.Fatal("the same seed gave another backdrop")
		}
		switch x := i % 40; {
		case x < 10 && a.Pix[i] != 200:
			t.Fatalf("person's pixel %d became %d", i, a.Pix[i])
		case x == 10 && (a.Pix[i] < 100 || a.Pix[i] > 130):
			t.Fatalf("edge pixel %d is %d, want half the person's 200 and half the picture's 0–60", i, a.Pix[i])
		case x > 10 && a.Pix[i] > 60:
			t.Fatalf("wall pixel %d is %d, want the picture's (0–60)", i, a.Pix[i])
		}
	}
}

// Bilinear against a float64 reference on a picture of noise: between
// pixel centres the four neighbours weighed by their distances, and the
// border pixel beyond the edge.
func TestBilinearAgainstFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := image.NewGray(image.Rect(0, 0, 13, 9))
	for i := range g.Pix {
		g.Pix[i] = uint8(rng.IntN(256))
	}
	px := func(i, j int) float64 {
		return float64(g.Pix[max(0, min(8, j))*g.Stride+max(0, min(12, i))])
	}
	for range 2000 {
		x, y := rng.Float64()*15-1, rng.Float64()*11-1
		// Centres at half-integers: the cell's corner pixel and weights.
		cx, cy := math.Max(0, math.Min(12, x-0.5)), math.Max(0, math.Min(8, y-0.5))
		i, j := math.Floor(cx), math.Floor(cy)
		a, b := cx-i, cy-j
		want := (1-a)*(1-b)*px(int(i), int(j)) + a*(1-b)*px(int(i)+1, int(j)) + (1-a)*b*px(int(i), int(j)+1) + a*b*px(int(i)+1, int(j)+1)
		if got := float64(dataset.Bilinear(g, x, y)); math.Abs(got-want) > 0.5+1e-9 {
			t.Fatalf("at %.3f,%.3f: %.0f, want %.3f", x, y, got, want)
		}
	}
}
