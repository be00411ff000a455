package headpose

import (
	"image"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

func randomImage(rng *rand.Rand, w, h int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	// Smooth structure plus noise, so that bilinear samples are not all
	// equal and a wrong sampling position shows.
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := 128 + 60*math.Sin(float64(x)/7) + 50*math.Cos(float64(y)/5+float64(x)/11) + 10*rng.NormFloat64()
			img.Pix[y*img.Stride+x] = clampGrey(v)
		}
	}
	return img
}

// The rotated crop samples as feature.Crop does: unrotated it gives the same
// patch, and rotated by 90° it gives the patch of the image whose pixels
// were turned by 90° counter-clockwise (within one grey level: the two
// round their sums differently).
func TestCropRotatedMatchesCrop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 64
	src := randomImage(rng, 200, 200)
	want, got := make([]uint8, n*n), make([]uint8, n*n)
	worst := func() int {
		w := 0
		for i := range want {
			w = max(w, int(math.Abs(float64(want[i])-float64(got[i]))))
		}
		return w
	}
	for _, box := range []feature.Box{{X: 50, Y: 60, W: 100, H: 100}, {X: 70.3, Y: 81.7, W: 40, H: 40}, {X: -20, Y: 150, W: 90, H: 90}} {
		feature.Crop(want, n, src, box)
		cx, cy := box.Centre()
		cropRotated(got, n, src, box, cx, cy, 0)
		if d := worst(); d > 1 {
			t.Errorf("box %v unrotated: differs from Crop by %d grey levels", box, d)
		}
	}
	// Turn the pixels: new[N−1−i][j] = old[j][i] is a 90° counter-clockwise
	// turn about the image's centre (100, 100).
	turned := image.NewGray(src.Rect)
	for y := 0; y < 200; y++ {
		for x := 0; x < 200; x++ {
			turned.Pix[(199-x)*turned.Stride+y] = src.Pix[y*src.Stride+x]
		}
	}
	box := feature.Box{X: 55, Y: 45, W: 90, H: 90}
	feature.Crop(want, n, turned, box)
	cropRotated(got, n, src, box, 100, 100, 90)
	if d := worst(); d > 1 {
		t.Errorf("rotated by 90°: differs from the crop of the turned image by %d grey levels", d)
	}
	cropRotated(got, n, src, box, 100, 100, -90)
	if d := worst(); d < 20 {
		t.Errorf("rotated by −90°: matches the +90° turn (%d levels): the test cannot see the direction", d)
	}
}

// Augmented views carry labels that follow their change: a rotated view's
// angles are the composed rotation of the image's by the drawn angle, the
// photometric views keep the image's labels; all of them have features
// of their own. Only the sets asked for are augmented, and TrainingSet
// takes every view, each moved box, and mirrors only the sets asked for.
func TestAugmentedViews(t *testing.T) {
	p04, aflw := bothSets(t)
	samples := append(slices.Clone(p04[:20]), aflw[:20]...)
	aug := []Augmentation{{Kind: Rotate, N: 2}, {Kind: Blur, N: 1}, {Kind: Noise, N: 1}, {Kind: LowRes, N: 1}, {Kind: Gamma, N: 1}, {Kind: NIR, N: 1}}
	b, err := NewBank(samples, BankOptions{Shifts: 1, Seed: 7, Augment: aug, AugmentSets: []string{"aflw2000"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nirDiffers := 0
	for i, s := range samples {
		views := b.ViewsOf[i]
		want := 1
		if s.Set == "aflw2000" {
			want = 1 + 2 + 5
		}
		if len(views) != want {
			t.Fatalf("%s (%s): %d views, want %d", s.Path, s.Set, len(views), want)
		}
		base := b.Views[views[0]]
		for _, k := range views[1:] {
			v := b.Views[k]
			if v.Aug.Kind == Rotate {
				y, p, r := dataset.RotateInPlane(s.Yaw, s.Pitch, s.Roll, v.Amount)
				if math.Abs(v.Yaw-y)+math.Abs(v.Pitch-p)+math.Abs(v.Roll-r) > 1e-9 || math.Abs(v.Amount) > 30 {
					t.Errorf("%s rotated by %.1f°: labels %.2f %.2f %.2f, want %.2f %.2f %.2f", s.Path, v.Amount, v.Yaw, v.Pitch, v.Roll, y, p, r)
				}
			} else if v.Yaw != s.Yaw || v.Pitch != s.Pitch || v.Roll != s.Roll {
				t.Errorf("%s %s: labels changed", s.Path, v.Aug)
			}
			dist := 0.0
			for d := range v.Feat[0] {
				dist += math.Abs(float64(v.Feat[0][d] - base.Feat[0][d]))
			}
			// Equalisation undoes a gamma curve but for the levels it
			// merges: a small γ can leave the features as they were; a
			// grey photograph's red channel is its luma.
			if v.Aug.Kind == NIR && dist >= 1 {
				nirDiffers++
			}
			if dist < 1 && v.Aug.Kind != Gamma && v.Aug.Kind != NIR {
				t.Errorf("%s %s (amount %.2f): features equal the image's (L1 %.3g)", s.Path, v.Aug, v.Amount, dist)
			}
		}
	}
	if nirDiffers < 15 {
		t.Errorf("NIR views differ from the luma on %d of 20 colour photographs", nirDiffers)
	}
	o := Options{Variant: VariantPoseBB, Angles: []string{pose.Yaw, pose.Pitch}, Flip: []string{"aflw2000"}}
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	tt, y := o.TrainingSet(b, idx)
	// Pointing'04: 20 images × 1 view × 2 boxes; AFLW2000: 20 × 8 views × 2 boxes × 2 (mirrored).
	if n, _ := y.Dims(); n != 20*2+20*8*2*2 {
		t.Errorf("%d training rows, want %d", n, 20*2+20*8*2*2)
	}
	// The last AFLW2000 row is a mirrored one: yaw and dx change sign.
	n, _ := tt.Dims()
	last := b.Views[b.ViewsOf[39][len(b.ViewsOf[39])-1]]
	if tt.At(n-1, 0) != -last.Yaw || tt.At(n-1, 2) != -last.Target(1).DX {
		t.Errorf("last row yaw %g dx %g, want the mirror of %g, %g", tt.At(n-1, 0), tt.At(n-1, 2), last.Yaw, last.Target(1).DX)
	}
	if _, err := ParseAugmentations("rotate:2:120"); err == nil {
		t.Error("a rotation beyond ±90° was accepted")
	}
	// camera draws one of blur, lowres and nir per view.
	cb, err := NewBank(samples[20:26], BankOptions{Seed: 1, Augment: []Augmentation{{Kind: Camera, N: 4}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[AugKind]int{}
	for _, v := range cb.Views {
		kinds[v.Aug.Kind]++
	}
	if kinds[""] != 6 || kinds[Blur]+kinds[LowRes]+kinds[NIR] != 24 || kinds[Blur] == 0 || kinds[LowRes] == 0 || kinds[NIR] == 0 {
		t.Errorf("camera views: %v", kinds)
	}
	if a, err := ParseAugmentations("rotate:2:20, blur"); err != nil || len(a) != 2 || a[0].Max != 20 || a[1].N != 1 {
		t.Errorf("ParseAugmentations: %v, %v", a, err)
	}
	for _, bad := range []string{"sharpen:1", "blur:x", "noise:1:1:1", "blur:0"} {
		if _, err := ParseAugmentations(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A face box entirely outside its image is an error naming the file, not
// an all-zero feature row.
func TestBoxOutsideImageRefused(t *testing.T) {
	p04, _ := bothSets(t)
	s := p04[0]
	s.Box = feature.Box{X: 5000, Y: 10, W: 50, H: 50}
	_, err := NewBank([]dataset.Sample{p04[1], s}, BankOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(s.Path)) || !strings.Contains(err.Error(), "outside the 384×288 image") {
		t.Errorf("box outside the image: %v", err)
	}
}

// Backdrop views put a picture behind the studio faces whose wall the
// matte finds, keep their labels and the face's own pixels, draw their
// pictures from the bank's, and are for the sets named only. Without
// pictures the bank refuses them.
func TestBackdropViews(t *testing.T) {
	p04, aflw := bothSets(t)
	samples := append(slices.Clone(p04[:12]), aflw[:6]...)
	rng := rand.New(rand.NewPCG(2, 3))
	pics := []*image.Gray{randomImage(rng, 640, 480), randomImage(rng, 500, 700)}
	aug := []Augmentation{{Kind: Backdrop, N: 2}}
	if _, err := NewBank(samples, BankOptions{Augment: aug}, nil); err == nil || !strings.Contains(err.Error(), "pictures") {
		t.Errorf("backdrop views without pictures: %v, want an error", err)
	}
	b, err := NewBank(samples, BankOptions{Seed: 3, Augment: aug, AugmentSets: []string{"pointing04"}, Backdrops: pics}, nil)
	if err != nil {
		t.Fatal(err)
	}
	backed, differ := 0, 0
	for i, s := range samples {
		views := b.ViewsOf[i]
		if s.Set == "aflw2000" {
			if len(views) != 1 {
				t.Errorf("%s: %d views, want only its own", s.Path, len(views))
			}
			continue
		}
		if len(views) == 1 {
			continue // the matte did not hold
		}
		if len(views) != 3 {
			t.Fatalf("%s: %d views, want 1 or 3", s.Path, len(views))
		}
		backed++
		base := b.Views[views[0]]
		for _, k := range views[1:] {
			v := b.Views[k]
			if v.Yaw != s.Yaw || v.Pitch != s.Pitch || v.Aug.Kind != Backdrop {
				t.Errorf("%s %s: labels %g %g, want the image's %g %g", s.Path, v.Aug, v.Yaw, v.Pitch, s.Yaw, s.Pitch)
			}
			dist := 0.0
			for d := range v.Feat[0] {
				dist += math.Abs(float64(v.Feat[0][d] - base.Feat[0][d]))
			}
			// A box wholly on the person (a head bowed low) sees no wall.
			if dist >= 1 {
				differ++
			}
		}
		img := b.backdrop(i, b.Views[views[1]].Amount)
		// The face's own pixels stay; the wall's change.
		cx, cy := s.Box.Centre()
		if at := img.GrayAt(int(cx), int(cy)); at != b.Images[i].GrayAt(int(cx), int(cy)) {
			t.Errorf("%s: the middle of the face changed", s.Path)
		}
		if img.GrayAt(10, 10) == b.Images[i].GrayAt(10, 10) && img.GrayAt(373, 10) == b.Images[i].GrayAt(373, 10) {
			t.Errorf("%s: the wall above the head kept its pixels", s.Path)
		}
	}
	if backed < 10 {
		t.Errorf("%d of 12 Pointing'04 photographs got backdrop views, want 10 or more", backed)
	}
	if differ < 2*backed*4/5 {
		t.Errorf("%d of %d backdrop views have features of their own, want 4 in 5", differ, 2*backed)
	}
	if a, err := ParseAugmentations("backdrop:2"); err != nil || a[0].String() != "backdrop:2" {
		t.Errorf("ParseAugmentations(backdrop:2): %v, %v", a, err)
	}
	if _, err := ParseAugmentations("backdrop:1:3"); err == nil {
		t.Error("backdrop with an amount accepted")
	}
}
