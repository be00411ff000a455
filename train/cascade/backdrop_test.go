package cascade

import (
	"image"
	"math/rand/v2"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// head is a 192×144 grey picture of a dark disc (a head) left of the
// middle of a lit wall, with noise, and its matte (1 on the disc).
func head(rng *rand.Rand) (*image.Gray, []float32) {
	w, h := 192, 144
	g := image.NewGray(image.Rect(0, 0, w, h))
	alpha := make([]float32, w*h)
	for y := range h {
		for x := range w {
			dx, dy := float64(x)-77, float64(y)-72
			v := 200 + rng.NormFloat64()*2
			if dx*dx+dy*dy <= 36*36 {
				v = 90 + rng.NormFloat64()*10
				alpha[y*w+x] = 1
			}
			g.Pix[y*w+x] = uint8(v)
		}
	}
	return g, alpha
}

// Backdrops change the turned copies of the faces with a matte, and
// nothing else: the windows drawn, the faces without a matte and every
// face's own picture stay as they were.
func TestFacesBackdrops(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var samples []dataset.Sample
	var imgs []*image.Gray
	var boxes []feature.Box
	var mattes [][]float32
	for i, yaw := range []float64{60, -75, 80} {
		img, alpha := head(rng)
		samples = append(samples, dataset.Sample{Set: "pointing04", Yaw: yaw, HasYaw: true})
		imgs = append(imgs, img)
		boxes = append(boxes, feature.Box{X: 47, Y: 42, W: 60, H: 60}) // about the head at x 77
		if i == 2 {
			alpha = nil // no wall found
		}
		mattes = append(mattes, alpha)
	}
	pic := Image{Pix: make([]uint8, 400*300), W: 400, H: 300}
	for i := range pic.Pix {
		pic.Pix[i] = uint8(i % 11 * 20)
	}
	j := Jitter{N: 4, Centre: 0.05, Scale: 0.08, Rotations: 1, Rotate: 10}
	plain := Faces(samples, imgs, boxes, View{40, 90}, j, 1)
	j.Backdrops, j.Mattes = []Image{pic}, mattes
	got := Faces(samples, imgs, boxes, View{40, 90}, j, 1)
	if len(got.Windows) != len(plain.Windows) || len(got.Images) != len(plain.Images) || len(got.Images) != 6 {
		t.Fatalf("%d windows on %d images, want %d on %d = 6", len(got.Windows), len(got.Images), len(plain.Windows), len(plain.Images))
	}
	for i := range got.Windows {
		if got.Windows[i] != plain.Windows[i] {
			t.Fatalf("window %d moved: %v, want %v", i, got.Windows[i], plain.Windows[i])
		}
	}
	for k := range got.Images {
		differ := 0
		for i := range got.Images[k].Pix {
			if got.Images[k].Pix[i] != plain.Images[k].Pix[i] {
				differ++
			}
		}
		turnedWithMatte := k%2 == 1 && k/2 < 2
		if turnedWithMatte && differ < len(got.Images[k].Pix)/3 {
			t.Errorf("image %d (a turned copy of a matted face): %d pixels changed, want the wall's, more than a third", k, differ)
		}
		if !turnedWithMatte && differ != 0 {
			t.Errorf("image %d: %d pixels changed, want none", k, differ)
		}
	}
	// The mirrored face's matte is mirrored with it: its face is still the
	// image's, not the picture's.
	k := 3 // face 1 (yaw −75), turned copy
	w := got.Images[k]
	cx, cy := int(got.Windows[12].C), int(got.Windows[12].R) // its box, undrawn
	if w.Pix[cy*w.W+cx] != plain.Images[k].Pix[cy*w.W+cx] {
		t.Error("the middle of the mirrored face took the backdrop")
	}
}
