package feature

import (
	"image"
	"math"
	"math/rand/v2"
	"testing"
)

const (
	atanTol = 2e-5 // rad: the polynomial against math.Atan2
	phogTol = 2e-4 // p-HOG against the float64 reference, per value (values ≤ 0.2·~1.1)
)

func randomGray(rng *rand.Rand, w, h int) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i := range g.Pix {
		g.Pix[i] = uint8(rng.IntN(256))
	}
	return g
}

func TestCropKnownAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	src := randomGray(rng, 100, 80)
	src.Rect = src.Rect.Add(image.Pt(10, 20)) // an origin away from 0 is honoured
	p := make([]uint8, 64*64)
	// An integer-aligned 64×64 box copies the pixels.
	Crop(p, 64, src, Box{X: 15, Y: 25, W: 64, H: 64})
	for i := 0; i < 64; i++ {
		for j := 0; j < 64; j++ {
			if want := src.GrayAt(15+j, 25+i).Y; p[i*64+j] != want {
				t.Fatalf("aligned crop (%d,%d): %d, want %d", i, j, p[i*64+j], want)
			}
		}
	}
	// A half-pixel shift of a horizontal ramp interpolates.
	ramp := image.NewGray(image.Rect(0, 0, 200, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 200; x++ {
			ramp.Pix[y*200+x] = uint8(x)
		}
	}
	Crop(p, 64, ramp, Box{X: 10.5, Y: 5, W: 64, H: 64})
	for j := 0; j < 64; j++ {
		// Sample at continuous x = 10.5 + j + 0.5 → pixel-centre coordinate 10.5 + j.
		want := uint8(math.Round(10.5 + float64(j)))
		if p[5*64+j] != want && p[5*64+j] != want-1 {
			t.Fatalf("ramp column %d: %d, want ≈ %d", j, p[5*64+j], want)
		}
	}
	// A box hanging off the left edge replicates column 0.
	Crop(p, 64, ramp, Box{X: -40, Y: 0, W: 64, H: 64})
	if p[0] != 0 || p[30] != 0 || p[63] == 0 {
		t.Errorf("off-image crop: %d %d %d", p[0], p[30], p[63])
	}
	// Shrinking a 1-pixel checkerboard 4× averages it to mid-grey (no aliasing).
	cb := image.NewGray(image.Rect(0, 0, 256, 256))
	for i := range cb.Pix {
		if (i%256+i/256)%2 == 0 {
			cb.Pix[i] = 255
		}
	}
	Crop(p, 64, cb, Box{X: 0, Y: 0, W: 256, H: 256})
	for _, v := range p {
		if v < 120 || v > 135 {
			t.Fatalf("shrunk checkerboard has %d, want ≈ 128", v)
		}
	}
}

// refCrop is an independent float64 Crop, straight from its definition:
// each patch pixel the mean of its s×s bilinear samples, each sample at
// its pixel-centre coordinate clamped to the image (border replication).
func refCrop(n int, src *image.Gray, box Box) []float64 {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	sx, sy := box.W/float64(n), box.H/float64(n)
	nx := min(max(int(math.Ceil(sx-1e-9)), 1), 4)
	ny := min(max(int(math.Ceil(sy-1e-9)), 1), 4)
	px := func(x, y int) float64 { return float64(src.Pix[y*src.Stride+x]) }
	bilinear := func(fx, fy float64) float64 {
		fx = math.Min(math.Max(fx, 0), float64(w-1))
		fy = math.Min(math.Max(fy, 0), float64(h-1))
		x0, y0 := int(fx), int(fy)
		x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
		tx, ty := fx-float64(x0), fy-float64(y0)
		top := px(x0, y0)*(1-tx) + px(x1, y0)*tx
		bot := px(x0, y1)*(1-tx) + px(x1, y1)*tx
		return top*(1-ty) + bot*ty
	}
	bx, by := box.X-float64(src.Rect.Min.X), box.Y-float64(src.Rect.Min.Y)
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var sum float64
			for a := 0; a < ny; a++ {
				fy := by + (float64(i)+(float64(a)+0.5)/float64(ny))*sy - 0.5
				for c := 0; c < nx; c++ {
					fx := bx + (float64(j)+(float64(c)+0.5)/float64(nx))*sx - 0.5
					sum += bilinear(fx, fy)
				}
			}
			out[i*n+j] = sum / float64(nx*ny)
		}
	}
	return out
}

// Crop matches the float64 reference on boxes enlarged, shrunk, shrunk
// past its supersampling cap (a box over 4 patch sides), past its stack
// tables (over 8), sub-pixel, partly and wholly off the image: within one
// grey level of the reference rounded, and within 1e-3 of a level
// everywhere but where the reference sits on a rounding boundary.
func TestCropAgainstFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	src := randomGray(rng, 1280, 960)
	src.Rect = src.Rect.Add(image.Pt(3, 7))
	boxes := []Box{
		{X: 203.2, Y: 150.7, W: 60, H: 60},      // enlarged
		{X: 200, Y: 150, W: 107, H: 107},        // 2×2 samples
		{X: 400.6, Y: 300.1, W: 214, H: 214},    // a landmark look's crop
		{X: 100.3, Y: 90.9, W: 700, H: 650},     // past the cap of 4 samples
		{X: -900, Y: -800, W: 3000, H: 2900},    // past the stack's taps, mostly off the image
		{X: 1250, Y: 940, W: 90, H: 120},        // over the right and bottom edges
		{X: -500, Y: 100, W: 64, H: 64},         // wholly off the image
		{X: 12.25, Y: 33.75, W: 63.5, H: 130.1}, // unequal axes
	}
	for k := 0; k < 40; k++ {
		s := 20 + 400*rng.Float64()
		boxes = append(boxes, Box{X: -50 + 1300*rng.Float64(), Y: -50 + 1000*rng.Float64(), W: s, H: s * (0.8 + 0.4*rng.Float64())})
	}
	for _, n := range []int{64, 128, 37} {
		p := make([]uint8, n*n)
		for _, box := range boxes {
			Crop(p, n, src, box)
			ref := refCrop(n, src, box)
			for i, v := range p {
				d := math.Abs(float64(v) - math.Round(ref[i]))
				frac := ref[i] - math.Floor(ref[i])
				if d > 1 || (d == 1 && math.Abs(frac-0.5) > 1e-3) {
					t.Fatalf("n %d, box %v, pixel %d: %d, the reference %.4f", n, box, i, v, ref[i])
				}
			}
		}
	}
}

func TestEqualize(t *testing.T) {
	// Four levels, equally frequent: they spread over 0, 85, 170, 255.
	p := make([]uint8, 64)
	for i := range p {
		p[i] = uint8(100 + i%4)
	}
	Equalize(p)
	for i, want := range []uint8{0, 85, 170, 255} {
		if p[i] != want {
			t.Errorf("level %d → %d, want %d", 100+i, p[i], want)
		}
	}
	flat := []uint8{7, 7, 7, 7}
	Equalize(flat)
	if flat[0] != 7 {
		t.Errorf("flat patch changed to %d", flat[0])
	}
}

func TestOrientationAgainstAtan2(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	worst := 0.0
	for i := 0; i < 200000; i++ {
		gx, gy := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		if i%50 == 0 {
			gy = 0
		}
		want := math.Atan2(float64(gy), float64(gx))
		if want < 0 {
			want += math.Pi
		}
		if want >= math.Pi {
			want -= math.Pi
		}
		got := float64(orientation(gx, gy)) * math.Pi / Bins
		d := math.Abs(got - want)
		d = math.Min(d, math.Pi-d) // π and 0 are the same unsigned orientation
		worst = math.Max(worst, d)
	}
	t.Logf("worst orientation error %.2g rad", worst)
	if worst > atanTol {
		t.Errorf("orientation error %.2g rad > %g", worst, atanTol)
	}
}

// refPHOG is an independent float64 p-HOG: math.Atan2, every level's cells
// accumulated straight from the pixels, the same voting and L2-Hys.
func refPHOG(p []uint8) []float64 {
	const n = PatchSize
	at := func(x, y int) float64 {
		x = min(max(x, 0), n-1)
		y = min(max(y, 0), n-1)
		return float64(p[y*n+x]) / 255
	}
	var out []float64
	for _, cs := range cellSizes {
		c := n / cs
		hist := make([]float64, c*c*Bins)
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				gx, gy := at(x+1, y)-at(x-1, y), at(x, y+1)-at(x, y-1)
				m := math.Hypot(gx, gy)
				if m == 0 {
					continue
				}
				th := math.Atan2(gy, gx)
				if th < 0 {
					th += math.Pi
				}
				f := th/(math.Pi/Bins) - 0.5
				b0 := int(math.Floor(f))
				w1 := f - float64(b0)
				b0 = (b0 + Bins) % Bins
				b1 := (b0 + 1) % Bins
				cell := ((y/cs)*c + x/cs) * Bins
				hist[cell+b0] += m * (1 - w1)
				hist[cell+b1] += m * w1
			}
		}
		for by := 0; by < c-1; by++ {
			for bx := 0; bx < c-1; bx++ {
				var v []float64
				for _, d := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
					k := ((by+d[0])*c + bx + d[1]) * Bins
					v = append(v, hist[k:k+Bins]...)
				}
				norm := func() float64 {
					s := 0.0
					for _, x := range v {
						s += x * x
					}
					return math.Sqrt(s + hysEps2)
				}
				k := norm()
				for i := range v {
					v[i] = math.Min(v[i]/k, hysClip)
				}
				k = norm()
				for i := range v {
					v[i] /= k
				}
				out = append(out, v...)
			}
		}
	}
	return out
}

func TestPHOGAgainstFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var e Extractor
	d := make([]float32, Dim)
	for trial := 0; trial < 20; trial++ {
		p := make([]uint8, PatchSize*PatchSize)
		// Smooth random texture: a few random sinusoids plus noise.
		fx, fy, ph := rng.Float64()*0.5, rng.Float64()*0.5, rng.Float64()*6
		for y := 0; y < PatchSize; y++ {
			for x := 0; x < PatchSize; x++ {
				v := 128 + 80*math.Sin(fx*float64(x)+fy*float64(y)+ph) + 20*rng.NormFloat64()
				p[y*PatchSize+x] = uint8(math.Min(math.Max(v, 0), 255))
			}
		}
		e.Describe(d, p)
		ref := refPHOG(p)
		if len(ref) != Dim {
			t.Fatalf("reference has %d values, want %d", len(ref), Dim)
		}
		for i := range ref {
			if math.Abs(float64(d[i])-ref[i]) > phogTol {
				t.Fatalf("trial %d value %d: %g, reference %g", trial, i, d[i], ref[i])
			}
		}
	}
}

// Vertical stripes have horizontal gradients, θ = 0, which sits halfway
// between bin 7 (centred at −π/16 ≡ 15π/16) and bin 0 (π/16); horizontal
// stripes have θ = π/2, halfway between bins 3 and 4.
func TestPHOGKnownOrientations(t *testing.T) {
	var e Extractor
	d := make([]float32, Dim)
	for _, c := range []struct {
		name   string
		pix    func(x, y int) uint8
		b0, b1 int
	}{
		{"vertical stripes", func(x, y int) uint8 { return uint8(255 * ((x / 4) % 2)) }, 7, 0},
		{"horizontal stripes", func(x, y int) uint8 { return uint8(255 * ((y / 4) % 2)) }, 3, 4},
	} {
		p := make([]uint8, PatchSize*PatchSize)
		for y := 0; y < PatchSize; y++ {
			for x := 0; x < PatchSize; x++ {
				p[y*PatchSize+x] = c.pix(x, y)
			}
		}
		e.Describe(d, p)
		// First block (the single 32-pixel block), first cell.
		cell := d[:Bins]
		for b, v := range cell {
			on := b == c.b0 || b == c.b1
			if on && v < 0.1 || !on && v > 1e-6 {
				t.Errorf("%s: bin %d = %g (%v)", c.name, b, v, cell)
			}
		}
		if math.Abs(float64(cell[c.b0]-cell[c.b1])) > 1e-6 {
			t.Errorf("%s: bins %d and %d differ: %v", c.name, c.b0, c.b1, cell)
		}
	}
}

// Mirroring the patch left–right maps each cell to its mirror cell and each
// orientation θ to π − θ, i.e. bin b to bin 7 − b.
func TestPHOGMirrorSymmetry(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	p := make([]uint8, PatchSize*PatchSize)
	for i := range p {
		p[i] = uint8(rng.IntN(256))
	}
	m := make([]uint8, len(p))
	for y := 0; y < PatchSize; y++ {
		for x := 0; x < PatchSize; x++ {
			m[y*PatchSize+x] = p[y*PatchSize+PatchSize-1-x]
		}
	}
	var e Extractor
	a, b := make([]float32, Dim), make([]float32, Dim)
	e.Describe(a, p)
	e.Describe(b, m)
	perm := MirrorPermutation()
	for i := range a {
		if math.Abs(float64(b[i]-a[perm[i]])) > 1e-5 {
			t.Fatalf("value %d of the mirrored patch is %g, value %d of the original %g", i, b[i], perm[i], a[perm[i]])
		}
	}
}

// Equalisation makes the descriptor invariant to any strictly increasing
// change of grey levels, such as brightness and contrast.
func TestExtractInvariantToBrightnessContrast(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	img := image.NewGray(image.Rect(0, 0, 120, 120))
	for y := 0; y < 120; y++ {
		for x := 0; x < 120; x++ {
			img.Pix[y*120+x] = uint8(40 + x/2 + rng.IntN(60))
		}
	}
	dim := image.NewGray(img.Rect)
	for i, v := range img.Pix {
		dim.Pix[i] = uint8(10 + int(v)/2) // darker, half the contrast, strictly increasing
	}
	var e Extractor
	a, b := make([]float32, Dim), make([]float32, Dim)
	box := Box{X: 20, Y: 20, W: 64, H: 64}
	e.Extract(a, img, box)
	e.Extract(b, dim, box)
	diff := 0.0
	for i := range a {
		diff = math.Max(diff, math.Abs(float64(a[i]-b[i])))
	}
	// v/2 merges adjacent levels, so equalisation is not exactly the same;
	// the descriptors still agree closely.
	if diff > 0.05 {
		t.Errorf("descriptor changed by up to %g under a brightness/contrast change", diff)
	}
	if a := testing.AllocsPerRun(20, func() { e.Extract(a, img, Box{X: 3.3, Y: 7.1, W: 90, H: 90}) }); a != 0 {
		t.Errorf("Extract allocates %.0f times", a)
	}
}

// Inside is the share of the first box's area within the second; IoU of
// the same pairs follows from it and the areas.
func TestInsideAndIoU(t *testing.T) {
	big := Box{X: 0, Y: 0, W: 100, H: 100}
	for _, c := range []struct {
		a           Box
		inside, iou float64
	}{
		{Box{X: 20, Y: 30, W: 30, H: 30}, 1, 900.0 / 10000},
		{Box{X: 90, Y: 0, W: 20, H: 20}, 0.5, 200.0 / (10000 + 400 - 200)},
		{Box{X: 100, Y: 0, W: 20, H: 20}, 0, 0}, // touching edges share nothing
		{Box{X: -50, Y: -50, W: 200, H: 200}, 0.25, 0.25},
		{Box{X: 10, Y: 10, W: 0, H: 0}, 0, 0},
	} {
		if got := Inside(c.a, big); math.Abs(got-c.inside) > 1e-12 {
			t.Errorf("Inside(%v, %v) = %g, want %g", c.a, big, got, c.inside)
		}
		if got := IoU(c.a, big); math.Abs(got-c.iou) > 1e-12 {
			t.Errorf("IoU(%v, %v) = %g, want %g", c.a, big, got, c.iou)
		}
	}
}
