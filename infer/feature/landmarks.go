package feature

import (
	"fmt"
	"math"

	"github.com/edgepose/posed/infer/gllim"
)

// The five landmarks of the face network (infer/yunet): right eye, left
// eye, nose tip, right and left mouth corners, as the person sees them (the
// right eye is on the picture's left), x then y in the frame's pixels.
type Landmarks [10]float64

// Point returns landmark i's position.
func (l *Landmarks) Point(i int) (x, y float64) { return l[2*i], l[2*i+1] }

// Landmark indices.
const (
	RightEye = iota
	LeftEye
	Nose
	RightMouth
	LeftMouth
)

// LandmarkDim is the length of the landmark feature vector (LandmarkFeatures).
const LandmarkDim = 19

// landmarkVersion changes whenever LandmarkFeatures computes something
// else from the same points.
const landmarkVersion = 1

// LandmarkRecipe describes LandmarkFeatures for a model file.
func LandmarkRecipe() gllim.FeatureRecipe {
	return gllim.FeatureRecipe{Name: "landmarks5", Version: landmarkVersion}
}

// CheckLandmarkRecipe returns an error unless r is LandmarkRecipe.
func CheckLandmarkRecipe(r gllim.FeatureRecipe) error {
	if want := LandmarkRecipe(); r.Name != want.Name || r.Version != want.Version {
		return fmt.Errorf("feature: model was trained on features %s v%d, this build computes landmark features %s v%d", r.Name, r.Version, want.Name, want.Version)
	}
	return nil
}

// LandmarkFeatures writes the geometry of the five points l of a face
// whose network box is box into dst (LandmarkDim values), in two frames
// (docs/method.md §6):
//
//   - the box's (10): each point's offset from the box centre in box sizes
//     s = √(W·H), which carries where the features sit on the head — the
//     nose toward a side as the head turns, the points up or down as it
//     nods;
//   - the eyes' (7): origin between the eyes, x along the eye line, both
//     axes in units of h, the distance from between the eyes to between the
//     mouth corners: the nose's and the mouth corners' coordinates (6) and
//     the eye distance (1) — ratios of the face's own proportions, which do
//     not depend on where the box was put;
//
// then the eye distance over s (1) and the eye line's angle in radians
// (1), which is most of the roll. Degenerate points (the eyes on one
// another, or the mouth on the eyes) give zeros in the eye frame rather
// than infinities.
func LandmarkFeatures(dst []float32, box Box, l *Landmarks) {
	_ = dst[LandmarkDim-1]
	cx, cy := box.Centre()
	s := math.Sqrt(box.W * box.H)
	if !(s > 0) {
		s = 1
	}
	for i := range 5 {
		x, y := l.Point(i)
		dst[2*i] = float32((x - cx) / s)
		dst[2*i+1] = float32((y - cy) / s)
	}
	rx, ry := l.Point(RightEye)
	lx, ly := l.Point(LeftEye)
	ex, ey := lx-rx, ly-ry // eye line, right eye to left eye
	d := math.Hypot(ex, ey)
	mx, my := (rx+lx)/2, (ry+ly)/2
	ax, ay := (l[2*RightMouth]+l[2*LeftMouth])/2, (l[2*RightMouth+1]+l[2*LeftMouth+1])/2
	h := math.Hypot(ax-mx, ay-my)
	eye := dst[10:17]
	if d > 1e-9 && h > 1e-9 {
		ux, uy := ex/d, ey/d // the eye frame's x axis; y is x turned 90° clockwise in the image (down the face)
		for j, p := range [3]int{Nose, RightMouth, LeftMouth} {
			px, py := l.Point(p)
			px, py = px-mx, py-my
			eye[2*j] = float32((px*ux + py*uy) / h)
			eye[2*j+1] = float32((-px*uy + py*ux) / h)
		}
		eye[6] = float32(d / h)
	} else {
		clear(eye)
	}
	dst[17] = float32(d / s)
	dst[18] = float32(math.Atan2(ey, ex))
}

// MirrorLandmarks returns the points of the mirror image of a face with
// points l, mirrored about the vertical line x = axis: each point's x is
// reflected and the right and left points trade places (the mirror of a
// right eye is a left eye).
func MirrorLandmarks(l *Landmarks, axis float64) Landmarks {
	var m Landmarks
	from := [5]int{LeftEye, RightEye, Nose, LeftMouth, RightMouth}
	for i, j := range from {
		x, y := l.Point(j)
		m[2*i], m[2*i+1] = 2*axis-x, y
	}
	return m
}
