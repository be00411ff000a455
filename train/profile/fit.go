package profile

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/rotation"
)

// Face is the mesh fitted to one picture: every vertex in the picture's
// frame (x right and y down in pixels, z toward the camera in the same
// scale, as AFLW2000-3D's pt3d_68), and the similarity that placed it.
type Face struct {
	P [][3]float64
	// R is the fitted rotation in a right-handed frame (x right, y up, z
	// toward the camera); Scale is pixels per millimetre.
	R     rotation.Matrix
	Scale float64
	// Centre is the point the head turns about: 90 mm behind the mean
	// face's nose tip, near the neck's axis.
	Centre [3]float64
}

const (
	centreDepth = 90.0 // mm behind the reference's origin (the nose tip's depth)
	warpSigma   = 25.0 // mm: how far a landmark's residual reaches on the mesh
	warpRidge   = 0.05 // keeps the residual warp smooth where landmarks crowd
)

// Fit places the mesh on a picture's 68 three-dimensional landmarks (pt3d_68
// of AFLW2000-3D): a similarity (scale, rotation, translation) by least
// squares in closed form (S. Umeyama, "Least-squares estimation of
// transformation parameters between two point patterns", IEEE TPAMI 13(4),
// 1991, eqs. 40–42), with each jaw landmark matched to the nearest vertex of
// its side's outline (the jaw landmarks of pt3d_68 lie on the 3-D jaw, which
// the reference marks only as a contour), then the landmarks' residuals
// spread over the mesh by Gaussian radial basis functions so that the mesh
// passes through them.
func (m *Mesh) Fit(lm [68][3]float64) (*Face, error) {
	// The right-handed frame: y up.
	var l [68][3]float64
	for i, p := range lm {
		l[i] = [3]float64{p[0], -p[1], p[2]}
	}
	src, dst := m.pairs(l, nil)
	s, r, t, err := umeyama(src, dst)
	if err != nil {
		return nil, err
	}
	for it := 0; it < 3; it++ {
		src, dst = m.pairs(l, func(p [3]float64) [3]float64 { return apply(s, r, t, p) })
		if s, r, t, err = umeyama(src, dst); err != nil {
			return nil, err
		}
	}
	// Residuals at the matched vertices, spread by RBF interpolation.
	n := len(src)
	res := mat.NewDense(n, 3, nil)
	for i := range src {
		q := apply(s, r, t, src[i])
		for k := 0; k < 3; k++ {
			res.Set(i, k, dst[i][k]-q[k])
		}
	}
	kern := func(a, b [3]float64) float64 { return math.Exp(-dist2(a, b) / (2 * warpSigma * warpSigma)) }
	K := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			K.Set(i, j, kern(src[i], src[j]))
		}
		K.Set(i, i, K.At(i, i)+warpRidge)
	}
	var w mat.Dense
	if err := w.Solve(K, res); err != nil {
		return nil, fmt.Errorf("profile: residual warp: %w", err)
	}
	f := &Face{P: make([][3]float64, len(m.V)), R: r, Scale: s}
	for v, p := range m.V {
		q := apply(s, r, t, p)
		for j := 0; j < n; j++ {
			k := kern(p, src[j])
			if k < 1e-6 {
				continue
			}
			for c := 0; c < 3; c++ {
				q[c] += k * w.At(j, c)
			}
		}
		f.P[v] = [3]float64{q[0], -q[1], q[2]}
	}
	c := apply(s, r, t, [3]float64{0, 0, -centreDepth})
	f.Centre = [3]float64{c[0], -c[1], c[2]}
	return f, nil
}

// pairs returns the mesh's points (src) matched to landmarks (dst, in the
// right-handed frame): each landmark with a vertex; with place (the
// current fit), also each jaw landmark and the vertex of its side's outline
// that the fit puts nearest it.
func (m *Mesh) pairs(l [68][3]float64, place func([3]float64) [3]float64) (src, dst [][3]float64) {
	for i, v := range m.Landmark {
		if v >= 0 {
			src, dst = append(src, m.V[v]), append(dst, l[i])
		}
	}
	if place == nil {
		return src, dst
	}
	for i := 0; i < 17; i++ {
		if i == 8 {
			continue // the chin has its vertex
		}
		side := 0
		if i > 8 {
			side = 1
		}
		best, bd := -1, math.Inf(1)
		for _, v := range m.Contour[side] {
			if d := dist2(place(m.V[v]), l[i]); d < bd {
				best, bd = v, d
			}
		}
		src, dst = append(src, m.V[best]), append(dst, l[i])
	}
	return src, dst
}

// Pose returns the fitted rotation as yaw, pitch and roll in the labels'
// convention (infer/rotation): its frame has x to the image's left and y
// down, the right-handed frame turned half a turn about z.
func (f *Face) Pose() (yaw, pitch, roll float64) {
	return flip(f.R).Angles()
}

// flip conjugates a rotation by the half turn about z, diag(−1, −1, 1),
// which maps the fit's frame to the labels' and back.
func flip(r rotation.Matrix) rotation.Matrix {
	r[0][2], r[1][2], r[2][0], r[2][1] = -r[0][2], -r[1][2], -r[2][0], -r[2][1]
	return r
}

func apply(s float64, r rotation.Matrix, t, p [3]float64) [3]float64 {
	var q [3]float64
	for i := 0; i < 3; i++ {
		q[i] = s*(r[i][0]*p[0]+r[i][1]*p[1]+r[i][2]*p[2]) + t[i]
	}
	return q
}

func dist2(a, b [3]float64) float64 {
	dx, dy, dz := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return dx*dx + dy*dy + dz*dz
}

// umeyama returns the similarity dst ≈ s·R·src + t of least squares.
func umeyama(src, dst [][3]float64) (float64, rotation.Matrix, [3]float64, error) {
	n := float64(len(src))
	var ms, md [3]float64
	for i := range src {
		for k := 0; k < 3; k++ {
			ms[k] += src[i][k] / n
			md[k] += dst[i][k] / n
		}
	}
	cov := mat.NewDense(3, 3, nil)
	var vs float64
	for i := range src {
		for a := 0; a < 3; a++ {
			vs += (src[i][a] - ms[a]) * (src[i][a] - ms[a]) / n
			for b := 0; b < 3; b++ {
				cov.Set(a, b, cov.At(a, b)+(dst[i][a]-md[a])*(src[i][b]-ms[b])/n)
			}
		}
	}
	var svd mat.SVD
	if !svd.Factorize(cov, mat.SVDFull) || vs == 0 {
		return 0, rotation.Matrix{}, [3]float64{}, fmt.Errorf("profile: the landmarks do not span a face")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	d := svd.Values(nil)
	sign := 1.0
	if mat.Det(&u)*mat.Det(&v) < 0 {
		sign = -1
	}
	var r rotation.Matrix
	for a := 0; a < 3; a++ {
		for b := 0; b < 3; b++ {
			r[a][b] = u.At(a, 0)*v.At(b, 0) + u.At(a, 1)*v.At(b, 1) + sign*u.At(a, 2)*v.At(b, 2)
		}
	}
	s := (d[0] + d[1] + sign*d[2]) / vs
	var t [3]float64
	for a := 0; a < 3; a++ {
		t[a] = md[a] - s*(r[a][0]*ms[0]+r[a][1]*ms[1]+r[a][2]*ms[2])
	}
	return s, r, t, nil
}
