package feature

import (
	"math"
	"math/rand/v2"
	"testing"
)

// landmarkRef computes the landmark features the long way, in float64:
// the eye frame by an explicit rotation matrix of the eye line's angle
// (not LandmarkFeatures' unit vector), distances by square roots of sums.
func landmarkRef(box Box, l Landmarks) [LandmarkDim]float64 {
	var out [LandmarkDim]float64
	s := math.Sqrt(box.W * box.H)
	cx, cy := box.X+box.W/2, box.Y+box.H/2
	for i := range 5 {
		out[2*i] = (l[2*i] - cx) / s
		out[2*i+1] = (l[2*i+1] - cy) / s
	}
	theta := math.Atan2(l[3]-l[1], l[2]-l[0])
	c, sn := math.Cos(-theta), math.Sin(-theta)
	mx, my := (l[0]+l[2])/2, (l[1]+l[3])/2
	ax, ay := (l[6]+l[8])/2, (l[7]+l[9])/2
	h := math.Sqrt((ax-mx)*(ax-mx) + (ay-my)*(ay-my))
	d := math.Sqrt((l[2]-l[0])*(l[2]-l[0]) + (l[3]-l[1])*(l[3]-l[1]))
	for j, p := range []int{2, 3, 4} {
		px, py := l[2*p]-mx, l[2*p+1]-my
		out[10+2*j] = (c*px - sn*py) / h
		out[10+2*j+1] = (sn*px + c*py) / h
	}
	out[16] = d / h
	out[17] = d / s
	out[18] = theta
	return out
}

func randomFace(rng *rand.Rand) (Box, Landmarks) {
	box := Box{X: 50 + 100*rng.Float64(), Y: 40 + 100*rng.Float64(), W: 60 + 80*rng.Float64(), H: 60 + 80*rng.Float64()}
	var l Landmarks
	for i := range 5 {
		l[2*i] = box.X + box.W*(0.2+0.6*rng.Float64())
		l[2*i+1] = box.Y + box.H*(0.2+0.6*rng.Float64())
	}
	return box, l
}

// The features match the float64 reference on random faces, to float32
// precision.
func TestLandmarkFeaturesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	got := make([]float32, LandmarkDim)
	for n := range 500 {
		box, l := randomFace(rng)
		LandmarkFeatures(got, box, &l)
		want := landmarkRef(box, l)
		for d := range want {
			if math.Abs(float64(got[d])-want[d]) > 1e-5*math.Max(1, math.Abs(want[d])) {
				t.Fatalf("face %d, feature %d: %g, the reference %g", n, d, got[d], want[d])
			}
		}
	}
}

// The face's geometry, not where it is: moving and scaling the face and its
// box together changes no feature; turning the points about the eyes'
// middle changes the eye line's angle by the turn and leaves the eye
// frame's seven features as they were.
func TestLandmarkFeaturesInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := make([]float32, LandmarkDim), make([]float32, LandmarkDim)
	for range 100 {
		box, l := randomFace(rng)
		LandmarkFeatures(a, box, &l)
		k, dx, dy := 0.5+2*rng.Float64(), 300*rng.Float64(), -100*rng.Float64()
		moved := Box{X: box.X*k + dx, Y: box.Y*k + dy, W: box.W * k, H: box.H * k}
		var ml Landmarks
		for i := range 5 {
			ml[2*i], ml[2*i+1] = l[2*i]*k+dx, l[2*i+1]*k+dy
		}
		LandmarkFeatures(b, moved, &ml)
		for d := range a {
			if math.Abs(float64(a[d]-b[d])) > 1e-4 {
				t.Fatalf("moved ×%.2f +(%.0f, %.0f): feature %d %g → %g", k, dx, dy, d, a[d], b[d])
			}
		}
		turn := 0.4 * (rng.Float64() - 0.5)
		mx, my := (l[0]+l[2])/2, (l[1]+l[3])/2
		c, s := math.Cos(turn), math.Sin(turn)
		var tl Landmarks
		for i := range 5 {
			x, y := l[2*i]-mx, l[2*i+1]-my
			tl[2*i], tl[2*i+1] = mx+c*x-s*y, my+s*x+c*y
		}
		LandmarkFeatures(b, box, &tl)
		for d := 10; d < 17; d++ {
			if math.Abs(float64(a[d]-b[d])) > 1e-4 {
				t.Fatalf("turned %.2f rad: eye-frame feature %d %g → %g", turn, d, a[d], b[d])
			}
		}
		if got := float64(b[18] - a[18]); math.Abs(math.Remainder(got-turn, 2*math.Pi)) > 1e-5 {
			t.Fatalf("turned %.4f rad: the eye line's angle moved %.4f", turn, got)
		}
	}
}

// A mirrored face's points are the mirror image with right and left
// traded: mirroring twice gives the face back, and in the eye frame the
// mirror's nose is the face's with its sideways coordinate negated.
func TestMirrorLandmarks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a, b := make([]float32, LandmarkDim), make([]float32, LandmarkDim)
	for range 100 {
		box, l := randomFace(rng)
		axis := box.X + box.W/2
		m := MirrorLandmarks(&l, axis)
		back := MirrorLandmarks(&m, axis)
		for i := range back {
			if math.Abs(back[i]-l[i]) > 1e-9 {
				t.Fatalf("mirrored twice: %v, want %v", back, l)
			}
		}
		if m[0] != 2*axis-l[2] || m[1] != l[3] {
			t.Fatalf("the mirror's right eye is at (%g, %g), want the left eye's mirror (%g, %g)", m[0], m[1], 2*axis-l[2], l[3])
		}
		LandmarkFeatures(a, box, &l)
		LandmarkFeatures(b, box, &m)
		if math.Abs(float64(a[10]+b[10])) > 1e-4 || math.Abs(float64(a[11]-b[11])) > 1e-4 {
			t.Fatalf("nose in the eye frame (%g, %g), mirrored (%g, %g)", a[10], a[11], b[10], b[11])
		}
	}
}

// Points on one another give zeros in the eye frame, never infinities.
func TestLandmarkFeaturesDegenerate(t *testing.T) {
	var l Landmarks
	for i := range 5 {
		l[2*i], l[2*i+1] = 100, 100
	}
	dst := make([]float32, LandmarkDim)
	LandmarkFeatures(dst, Box{X: 50, Y: 50, W: 100, H: 100}, &l)
	for d, v := range dst {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("feature %d is %g", d, v)
		}
	}
}
