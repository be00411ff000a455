// Package rotation is the head-pose angle convention as rotations, so
// that poses compose (an in-plane image rotation, a per-installation
// neutral pose) instead of being added angle by angle.
//
// The angles of every data set posed trains on (the AFLW2000-3D
// convention) describe the rotation that turns a frontal head into the
// labelled one:
//
//	R = Rx(pitch) · Ry(yaw) · Rz(−roll)
//
// in a right-handed camera frame with x to the image's right, y up (image
// rows run the other way) and z towards the viewer, where Rx, Ry, Rz are
// the right-handed rotations about those axes. The 3-D landmarks of
// AFLW2000-3D confirm it (train/dataset's TestPoseConventionFitsLandmarks):
// un-rotating every face by its labels gives one mean shape, which no
// other order or choice of signs does nearly as well. Pitch > 0 looks up,
// yaw > 0 turns the nose to the image's left, roll > 0 turns the head
// clockwise as seen in the image.
package rotation

import "math"

// Matrix is a 3×3 rotation matrix, row-major.
type Matrix [3][3]float64

const deg = math.Pi / 180

// X, Y and Z are the right-handed rotations by a radians about the axes.
func X(a float64) Matrix {
	c, s := math.Cos(a), math.Sin(a)
	return Matrix{{1, 0, 0}, {0, c, -s}, {0, s, c}}
}

// Y is the rotation by a radians about the y axis.
func Y(a float64) Matrix {
	c, s := math.Cos(a), math.Sin(a)
	return Matrix{{c, 0, s}, {0, 1, 0}, {-s, 0, c}}
}

// Z is the rotation by a radians about the z axis.
func Z(a float64) Matrix {
	c, s := math.Cos(a), math.Sin(a)
	return Matrix{{c, -s, 0}, {s, c, 0}, {0, 0, 1}}
}

// Mul returns r·q.
func (r Matrix) Mul(q Matrix) Matrix {
	var out Matrix
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 3; k++ {
				out[i][j] += r[i][k] * q[k][j]
			}
		}
	}
	return out
}

// T returns the transpose (the inverse) of r.
func (r Matrix) T() Matrix {
	var out Matrix
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			out[i][j] = r[j][i]
		}
	}
	return out
}

// Head returns R = Rx(pitch)·Ry(yaw)·Rz(−roll) for angles in degrees.
func Head(yaw, pitch, roll float64) Matrix {
	return X(pitch * deg).Mul(Y(yaw * deg)).Mul(Z(-roll * deg))
}

// Angles returns the yaw, pitch and roll (degrees) of R = Rx(p)·Ry(y)·Rz(−r).
// With Ry·Rz written out, R[0][2] = sin y, R[0][0] = cos y·cos r,
// R[0][1] = cos y·sin r, R[1][2] = −sin p·cos y, R[2][2] = cos p·cos y;
// yaw is taken in [−90°, 90°], as the data sets label it.
func (r Matrix) Angles() (yaw, pitch, roll float64) {
	yaw = math.Asin(math.Max(-1, math.Min(1, r[0][2])))
	roll = math.Atan2(r[0][1], r[0][0])
	pitch = math.Atan2(-r[1][2], r[2][2])
	return yaw / deg, pitch / deg, roll / deg
}

// Relative returns the angles of the head rotation r as seen from a
// neutral pose n: Δ = nᵀ·r, the rotation that turns the neutral head into
// this one, in the neutral head's own axes (so that a driver seen from
// the side who nods has pitch, not a mix of pitch and roll).
func Relative(n, r Matrix) (yaw, pitch, roll float64) {
	return n.T().Mul(r).Angles()
}

// Mean returns the rotation nearest (in the Frobenius sense, up to the
// projection below) to the mean of rs: the elementwise mean made
// orthonormal again by Gram–Schmidt on its rows. For the small spread of
// a head held still it is the mean pose.
func Mean(rs []Matrix) Matrix {
	var m Matrix
	for _, r := range rs {
		for i := range m {
			for j := range m[i] {
				m[i][j] += r[i][j] / float64(len(rs))
			}
		}
	}
	// Gram–Schmidt: row 0, row 1 made orthogonal to it, row 2 their cross
	// product (keeps det = +1).
	norm := func(v [3]float64) [3]float64 {
		l := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])
		return [3]float64{v[0] / l, v[1] / l, v[2] / l}
	}
	a := norm(m[0])
	d := a[0]*m[1][0] + a[1]*m[1][1] + a[2]*m[1][2]
	b := norm([3]float64{m[1][0] - d*a[0], m[1][1] - d*a[1], m[1][2] - d*a[2]})
	c := [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
	return Matrix{a, b, c}
}
