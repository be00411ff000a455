package rotation

import (
	"math"
	"math/rand"
	"testing"
)

func close3(a, b Matrix, tol float64) bool {
	for i := range a {
		for j := range a[i] {
			if math.Abs(a[i][j]-b[i][j]) > tol {
				return false
			}
		}
	}
	return true
}

// Head against the product written out by hand, and Angles as its
// inverse for yaw in (−90°, 90°).
func TestHeadAndAngles(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 1000; i++ {
		y, p, ro := r.Float64()*178-89, r.Float64()*340-170, r.Float64()*340-170
		sy, cy := math.Sincos(y * deg)
		sp, cp := math.Sincos(p * deg)
		sr, cr := math.Sincos(-ro * deg)
		// Rx(p)·Ry(y)·Rz(−r), multiplied out.
		want := Matrix{
			{cy * cr, -cy * sr, sy},
			{sp*sy*cr + cp*sr, -sp*sy*sr + cp*cr, -sp * cy},
			{-cp*sy*cr + sp*sr, cp*sy*sr + sp*cr, cp * cy},
		}
		got := Head(y, p, ro)
		if !close3(got, want, 1e-12) {
			t.Fatalf("Head(%g, %g, %g) = %v, want %v", y, p, ro, got, want)
		}
		gy, gp, gr := got.Angles()
		if math.Abs(gy-y) > 1e-9 || math.Abs(gp-p) > 1e-9 || math.Abs(gr-ro) > 1e-9 {
			t.Fatalf("Angles of Head(%g, %g, %g) = %g, %g, %g", y, p, ro, gy, gp, gr)
		}
	}
}

// Relative undoes the neutral pose: n·Head(Relative(n, r)) = r; for
// rotations about one axis from a frontal neutral it is a subtraction.
func TestRelative(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 500; i++ {
		n := Head(r.Float64()*120-60, r.Float64()*80-40, r.Float64()*60-30)
		h := Head(r.Float64()*120-60, r.Float64()*80-40, r.Float64()*60-30)
		y, p, ro := Relative(n, h)
		if back := n.Mul(Head(y, p, ro)); !close3(back, h, 1e-9) {
			t.Fatalf("n·Head(Relative(n, r)) ≠ r")
		}
	}
	y, p, ro := Relative(Head(30, 0, 0), Head(45, 0, 0))
	if math.Abs(y-15) > 1e-9 || math.Abs(p) > 1e-9 || math.Abs(ro) > 1e-9 {
		t.Errorf("45° from a 30° neutral: %g, %g, %g, want 15, 0, 0", y, p, ro)
	}
	// A head seen from the side (neutral yaw −40°) that nods by 20°:
	// relative to its neutral, pitch 20 and nothing else.
	n := Head(-40, 0, 0)
	nod := n.Mul(Head(0, 20, 0))
	y, p, ro = Relative(n, nod)
	if math.Abs(y) > 1e-9 || math.Abs(p-20) > 1e-9 || math.Abs(ro) > 1e-9 {
		t.Errorf("a nod seen from the side: %g, %g, %g, want 0, 20, 0", y, p, ro)
	}
}

// Mean is a rotation, equals its input when all agree, and is the mean
// pose of small spreads.
func TestMean(t *testing.T) {
	h := Head(20, -10, 5)
	if m := Mean([]Matrix{h, h, h}); !close3(m, h, 1e-12) {
		t.Errorf("Mean of equal rotations: %v", m)
	}
	m := Mean([]Matrix{Head(18, -10, 5), Head(22, -10, 5), Head(20, -12, 5), Head(20, -8, 5)})
	if y, p, r := m.Angles(); math.Abs(y-20) > 0.05 || math.Abs(p+10) > 0.05 || math.Abs(r-5) > 0.05 {
		t.Errorf("Mean of a small spread: %g, %g, %g, want about 20, −10, 5", y, p, r)
	}
	if p := m.Mul(m.T()); !close3(p, Matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, 1e-12) {
		t.Errorf("Mean is not orthonormal: m·mᵀ = %v", p)
	}
}
