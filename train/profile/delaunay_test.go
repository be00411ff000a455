package profile

import (
	"math"
	"math/rand/v2"
	"testing"
)

// No point lies inside a triangle's circumcircle, and the triangles tile
// the points' hull: here a square with its corners among the points,
// border points on its edges (cocircular, as a warp's are).
func TestDelaunay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pts := [][2]float64{{0, 0}, {100, 0}, {0, 100}, {100, 100}, {50, 0}, {50, 100}, {0, 50}, {100, 50}}
	for i := 0; i < 60; i++ {
		pts = append(pts, [2]float64{1 + 98*rng.Float64(), 1 + 98*rng.Float64()})
	}
	tris := delaunay(pts)
	var sum float64
	for _, tr := range tris {
		a, b, c := pts[tr[0]], pts[tr[1]], pts[tr[2]]
		sum += math.Abs((b[0]-a[0])*(c[1]-a[1])-(b[1]-a[1])*(c[0]-a[0])) / 2
		// In-circle determinant, in float64 from the definition.
		for i, p := range pts {
			if i == tr[0] || i == tr[1] || i == tr[2] {
				continue
			}
			ax, ay := a[0]-p[0], a[1]-p[1]
			bx, by := b[0]-p[0], b[1]-p[1]
			cx, cy := c[0]-p[0], c[1]-p[1]
			det := (ax*ax+ay*ay)*(bx*cy-cx*by) - (bx*bx+by*by)*(ax*cy-cx*ay) + (cx*cx+cy*cy)*(ax*by-bx*ay)
			orient := (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
			if det*math.Copysign(1, orient) > 1e-6 {
				t.Fatalf("point %v inside the circumcircle of %v %v %v", p, a, b, c)
			}
		}
	}
	if math.Abs(sum-100*100) > 1e-6 {
		t.Errorf("triangles cover %.3f, want the square's 10000", sum)
	}
	if want := 2*len(pts) - 2 - 8; len(tris) != want {
		t.Errorf("%d triangles, want 2n−2−h = %d", len(tris), want)
	}
}
