package profile

import (
	"math"
	"sort"
)

// delaunay triangulates points in the plane (Bowyer–Watson: A. Bowyer,
// "Computing Dirichlet tessellations", and D. F. Watson, "Computing the
// n-dimensional Delaunay tessellation", both The Computer Journal 24(2),
// 1981): each point is inserted by removing the triangles whose
// circumcircle holds it and joining it to the hole's edges. O(n²), for the
// hundred or so anchors of a warp.
func delaunay(pts [][2]float64) [][3]int {
	n := len(pts)
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range pts {
		minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
		minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
	}
	d := math.Max(maxX-minX, maxY-minY) + 1
	mx, my := (minX+maxX)/2, (minY+maxY)/2
	all := append(append([][2]float64(nil), pts...),
		[2]float64{mx - 20*d, my - d}, [2]float64{mx, my + 20*d}, [2]float64{mx + 20*d, my - d})
	type tri struct {
		v      [3]int
		cx, cy float64
		r2     float64
	}
	mk := func(a, b, c int) tri {
		ax, ay := all[a][0], all[a][1]
		bx, by := all[b][0], all[b][1]
		cx, cy := all[c][0], all[c][1]
		den := 2 * (ax*(by-cy) + bx*(cy-ay) + cx*(ay-by))
		if den == 0 {
			return tri{v: [3]int{a, b, c}, r2: math.Inf(1)}
		}
		a2, b2, c2 := ax*ax+ay*ay, bx*bx+by*by, cx*cx+cy*cy
		ux := (a2*(by-cy) + b2*(cy-ay) + c2*(ay-by)) / den
		uy := (a2*(cx-bx) + b2*(ax-cx) + c2*(bx-ax)) / den
		return tri{v: [3]int{a, b, c}, cx: ux, cy: uy, r2: (ax-ux)*(ax-ux) + (ay-uy)*(ay-uy)}
	}
	tris := []tri{mk(n, n+1, n+2)}
	for i := 0; i < n; i++ {
		p := all[i]
		edges := map[[2]int]int{}
		kept := tris[:0]
		for _, t := range tris {
			if dx, dy := p[0]-t.cx, p[1]-t.cy; dx*dx+dy*dy < t.r2 {
				for k := 0; k < 3; k++ {
					a, b := t.v[k], t.v[(k+1)%3]
					if a > b {
						a, b = b, a
					}
					edges[[2]int{a, b}]++
				}
				continue
			}
			kept = append(kept, t)
		}
		tris = kept
		// The hole's edges in a fixed order, so that cocircular points (a
		// border's) give the same triangulation every run.
		hole := make([][2]int, 0, len(edges))
		for e, c := range edges {
			if c == 1 {
				hole = append(hole, e)
			}
		}
		sort.Slice(hole, func(a, b int) bool {
			return hole[a][0] < hole[b][0] || hole[a][0] == hole[b][0] && hole[a][1] < hole[b][1]
		})
		for _, e := range hole {
			tris = append(tris, mk(e[0], e[1], i))
		}
	}
	var out [][3]int
	for _, t := range tris {
		if t.v[0] < n && t.v[1] < n && t.v[2] < n {
			out = append(out, t.v)
		}
	}
	return out
}
