package profile

import (
	"image"
	"math"

	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/train/dataset"
)

// Anchors of the background warp, in units of the face outline's half
// extent about its centre: two rings that stay where they are (a head is
// round, so its silhouette hardly moves as it turns; the neck and shoulders
// do not turn), inside which the face's outline moves with the mesh.
var rings = [...]float64{1.3, 2.0}

const ringPoints = 24

// Move is how far a view turns its face: degrees added to the labels' yaw
// and pitch.
type Move struct{ Yaw, Pitch float64 }

// Turn returns a new picture of the fitted face moved by d about Centre
// (roll kept: the labels' rotation becomes Head(yaw+d.Yaw, pitch+d.Pitch,
// roll); a yaw alone turns the head about its own vertical axis, a pitch
// alone nods it about the camera's horizontal axis, Rx(d.Pitch)·R in the
// labels' composition), and the 68 landmarks moved with it. yaw, pitch and
// roll are the picture's labels.
//
// The mesh is drawn with a depth buffer; each of its triangles takes its
// texture from where it was in the picture, or from its mirror twin's place
// where it was hidden there (300W-LP's symmetric fill). The rest of the
// picture follows a piecewise affine warp over a Delaunay triangulation of
// anchors: the mesh's outline (which turns), two fixed rings about the face
// and the picture's border.
func (m *Mesh) Turn(f *Face, src *image.Gray, lm [68][3]float64, yaw, pitch, roll float64, d Move) (*image.Gray, [68][3]float64) {
	dr := flip(rotation.Head(yaw+d.Yaw, pitch+d.Pitch, roll).Mul(rotation.Head(yaw, pitch, roll).T()))
	c := f.Centre
	turn := func(p [3]float64) [3]float64 {
		// The image frame has y down: rotate in the right-handed frame.
		x, y, z := p[0]-c[0], -(p[1] - c[1]), p[2]-c[2]
		return [3]float64{
			c[0] + dr[0][0]*x + dr[0][1]*y + dr[0][2]*z,
			c[1] - (dr[1][0]*x + dr[1][1]*y + dr[1][2]*z),
			c[2] + dr[2][0]*x + dr[2][1]*y + dr[2][2]*z,
		}
	}
	q := make([][3]float64, len(f.P))
	for v, p := range f.P {
		q[v] = turn(p)
	}
	var out [68][3]float64
	for i, p := range lm {
		out[i] = turn(p)
	}

	if src.Rect.Min != (image.Point{}) { // the frame's pixels from (0, 0)
		src = &image.Gray{Pix: src.Pix[src.PixOffset(src.Rect.Min.X, src.Rect.Min.Y):], Stride: src.Stride,
			Rect: image.Rectangle{Max: src.Rect.Size()}}
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewGray(image.Rect(0, 0, w, h))

	// The background: anchors placed in the picture (from) and where they go (to).
	from, to := m.anchors(f, q, w, h)
	for _, t := range delaunay(to) {
		warpTriangle(dst, src, [3][2]float64{to[t[0]], to[t[1]], to[t[2]]}, [3][2]float64{from[t[0]], from[t[1]], from[t[2]]}, nil, [3]float64{})
	}

	// The face: hidden vertices in the picture take their twin's texture.
	seen := visible(f.P, m.T, w, h, 4*f.Scale)
	depth := make([]float64, w*h)
	for i := range depth {
		depth[i] = math.Inf(-1)
	}
	front := m.front
	for _, t := range m.T {
		a, b, cc := q[t[0]], q[t[1]], q[t[2]]
		if area(a, b, cc)*front <= 0 {
			continue
		}
		tex := t
		if !(seen[t[0]] && seen[t[1]] && seen[t[2]]) {
			tw := [3]int32{m.Twin[t[0]], m.Twin[t[1]], m.Twin[t[2]]}
			if seen[tw[0]] && seen[tw[1]] && seen[tw[2]] {
				tex = tw
			}
		}
		warpTriangle(dst, src,
			[3][2]float64{{a[0], a[1]}, {b[0], b[1]}, {cc[0], cc[1]}},
			[3][2]float64{{f.P[tex[0]][0], f.P[tex[0]][1]}, {f.P[tex[1]][0], f.P[tex[1]][1]}, {f.P[tex[2]][0], f.P[tex[2]][1]}},
			depth, [3]float64{a[2], b[2], cc[2]})
	}
	return dst, out
}

// anchors returns the background warp's anchors in the picture (from) and
// where they go (to): the mesh's outline where it stays in sight (q, the
// turned mesh), two fixed rings about the face, and the picture's border.
func (m *Mesh) anchors(f *Face, q [][3]float64, w, h int) (from, to [][2]float64) {
	var cx, cy float64
	bnd := m.bnd
	for _, v := range bnd {
		cx += f.P[v][0] / float64(len(bnd))
		cy += f.P[v][1] / float64(len(bnd))
	}
	var rx, ry float64
	for _, v := range bnd {
		rx = math.Max(rx, math.Abs(f.P[v][0]-cx))
		ry = math.Max(ry, math.Abs(f.P[v][1]-cy))
	}
	// The outline's vertices that stay in sight pull the background with
	// them; those the turn hides behind the face would fold it.
	inSight := visible(q, m.T, w, h, 4*f.Scale)
	step := (len(bnd) + 39) / 40
	for i := 0; i < len(bnd); i += step {
		v := bnd[i]
		if !inSight[v] {
			continue
		}
		from = append(from, [2]float64{f.P[v][0], f.P[v][1]})
		to = append(to, [2]float64{q[v][0], q[v][1]})
	}
	for _, k := range rings {
		for i := 0; i < ringPoints; i++ {
			a := 2 * math.Pi * float64(i) / ringPoints
			p := [2]float64{cx + k*rx*math.Cos(a), cy + k*ry*math.Sin(a)}
			from, to = append(from, p), append(to, p)
		}
	}
	W, H := float64(w), float64(h)
	for i := 0; i <= 8; i++ {
		t := float64(i) / 8
		for _, p := range [][2]float64{{t * W, -1}, {t * W, H + 1}, {-1, t * H}, {W + 1, t * H}} {
			from, to = append(from, p), append(to, p)
		}
	}
	return from, to
}

// boundary returns the mesh's outline: the vertices of edges that belong to
// one triangle only, in index order.
func (m *Mesh) boundary() []int {
	count := map[[2]int32]int{}
	for _, t := range m.T {
		for i := 0; i < 3; i++ {
			a, b := t[i], t[(i+1)%3]
			if a > b {
				a, b = b, a
			}
			count[[2]int32{a, b}]++
		}
	}
	on := make([]bool, len(m.V))
	for e, n := range count {
		if n == 1 {
			on[e[0]], on[e[1]] = true, true
		}
	}
	var out []int
	for v, ok := range on {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// frontSign is the sign of the signed area, in the picture's frame (y
// down), of the triangles the reference face shows a viewer in front of it.
func (m *Mesh) frontSign() float64 {
	var s float64
	for _, t := range m.T {
		a, b, c := m.V[t[0]], m.V[t[1]], m.V[t[2]]
		flipY := func(p [3]float64) [3]float64 { return [3]float64{p[0], -p[1], p[2]} }
		s += area(flipY(a), flipY(b), flipY(c))
	}
	if s < 0 {
		return -1
	}
	return 1
}

// area is twice the signed area of the triangle's projection on the picture.
func area(a, b, c [3]float64) float64 {
	return (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
}

// visible marks the vertices a camera in front of the picture sees: each
// vertex within tol of the nearest surface drawn at its pixel.
func visible(p [][3]float64, tris [][3]int32, w, h int, tol float64) []bool {
	depth := make([]float64, w*h)
	for i := range depth {
		depth[i] = math.Inf(-1)
	}
	for _, t := range tris {
		a, b, c := p[t[0]], p[t[1]], p[t[2]]
		raster(w, h, [3][2]float64{{a[0], a[1]}, {b[0], b[1]}, {c[0], c[1]}}, func(x, y int, l [3]float64) {
			z := l[0]*a[2] + l[1]*b[2] + l[2]*c[2]
			if i := y*w + x; z > depth[i] {
				depth[i] = z
			}
		})
	}
	seen := make([]bool, len(p))
	for v, q := range p {
		x, y := int(math.Floor(q[0])), int(math.Floor(q[1]))
		if x < 0 || y < 0 || x >= w || y >= h {
			continue
		}
		seen[v] = q[2] >= depth[y*w+x]-tol
	}
	return seen
}

// warpTriangle fills the pixels of the triangle to in dst with src sampled
// bilinearly at the same barycentric place in the triangle from. With a
// depth buffer, only pixels nearer than what is drawn are written, the
// depth interpolated from z.
func warpTriangle(dst, src *image.Gray, to, from [3][2]float64, depth []float64, z [3]float64) {
	w, h := dst.Rect.Dx(), dst.Rect.Dy()
	raster(w, h, to, func(x, y int, l [3]float64) {
		i := y*w + x
		if depth != nil {
			d := l[0]*z[0] + l[1]*z[1] + l[2]*z[2]
			if d <= depth[i] {
				return
			}
			depth[i] = d
		}
		sx := l[0]*from[0][0] + l[1]*from[1][0] + l[2]*from[2][0]
		sy := l[0]*from[0][1] + l[1]*from[1][1] + l[2]*from[2][1]
		dst.Pix[y*dst.Stride+x] = dataset.Bilinear(src, sx, sy)
	})
}

// raster calls fn for every pixel whose centre (x+0.5, y+0.5) lies in the
// triangle t, with its barycentric coordinates.
func raster(w, h int, t [3][2]float64, fn func(x, y int, l [3]float64)) {
	x0 := math.Max(0, math.Floor(math.Min(t[0][0], math.Min(t[1][0], t[2][0]))))
	x1 := math.Min(float64(w-1), math.Ceil(math.Max(t[0][0], math.Max(t[1][0], t[2][0]))))
	y0 := math.Max(0, math.Floor(math.Min(t[0][1], math.Min(t[1][1], t[2][1]))))
	y1 := math.Min(float64(h-1), math.Ceil(math.Max(t[0][1], math.Max(t[1][1], t[2][1]))))
	d := (t[1][0]-t[0][0])*(t[2][1]-t[0][1]) - (t[1][1]-t[0][1])*(t[2][0]-t[0][0])
	if d == 0 {
		return
	}
	const eps = -1e-9
	for y := y0; y <= y1; y++ {
		py := y + 0.5
		for x := x0; x <= x1; x++ {
			px := x + 0.5
			l1 := ((px-t[0][0])*(t[2][1]-t[0][1]) - (py-t[0][1])*(t[2][0]-t[0][0])) / d
			l2 := ((t[1][0]-t[0][0])*(py-t[0][1]) - (t[1][1]-t[0][1])*(px-t[0][0])) / d
			l0 := 1 - l1 - l2
			if l0 < eps || l1 < eps || l2 < eps {
				continue
			}
			fn(int(x), int(y), [3]float64{l0, l1, l2})
		}
	}
}
