package dataset

import "math"

// Rotation is a 3×3 rotation matrix, row-major.
type Rotation [3][3]float64

// The angles of every labels.csv (the AFLW2000-3D convention) describe the
// rotation that turns a frontal head into the labelled one:
//
//	R = Rx(pitch) · Ry(yaw) · Rz(−roll)
//
// in a right-handed camera frame with x to the image's right, y up (image
// rows run the other way) and z towards the viewer, where Rx, Ry, Rz are
// the right-handed rotations about those axes. The 3-D landmarks of
// AFLW2000-3D confirm it: un-rotating every face by its labels gives one
// mean shape (TestPoseConventionFitsLandmarks), which no other order or
// choice of signs does nearly as well. Pitch > 0 looks up, yaw > 0 turns
// the nose to the image's left, roll > 0 turns the head clockwise as seen
// in the image.

func rotX(a float64) Rotation {
	c, s := math.Cos(a), math.Sin(a)
	return Rotation{{1, 0, 0}, {0, c, -s}, {0, s, c}}
}

func rotY(a float64) Rotation {
	c, s := math.Cos(a), math.Sin(a)
	return Rotation{{c, 0, s}, {0, 1, 0}, {-s, 0, c}}
}

func rotZ(a float64) Rotation {
	c, s := math.Cos(a), math.Sin(a)
	return Rotation{{c, -s, 0}, {s, c, 0}, {0, 0, 1}}
}

// Mul returns r·q.
func (r Rotation) Mul(q Rotation) Rotation {
	var out Rotation
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
func (r Rotation) T() Rotation {
	var out Rotation
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			out[i][j] = r[j][i]
		}
	}
	return out
}

const deg = math.Pi / 180

// HeadRotation returns R = Rx(pitch)·Ry(yaw)·Rz(−roll) for angles in degrees.
func HeadRotation(yaw, pitch, roll float64) Rotation {
	return rotX(pitch * deg).Mul(rotY(yaw * deg)).Mul(rotZ(-roll * deg))
}

// Angles returns the yaw, pitch and roll (degrees) of R = Rx(p)·Ry(y)·Rz(−r).
// With Ry·Rz written out, R[0][2] = sin y, R[0][0] = cos y·cos r,
// R[0][1] = cos y·sin r, R[1][2] = −sin p·cos y, R[2][2] = cos p·cos y;
// yaw is taken in [−90°, 90°], as the data sets label it.
func (r Rotation) Angles() (yaw, pitch, roll float64) {
	yaw = math.Asin(math.Max(-1, math.Min(1, r[0][2])))
	roll = math.Atan2(r[0][1], r[0][0])
	pitch = math.Atan2(-r[1][2], r[2][2])
	return yaw / deg, pitch / deg, roll / deg
}

// RotateInPlane returns the labels of a head whose image is rotated by theta
// degrees about the camera axis, counter-clockwise as seen in the image: the
// rotations compose, R' = Rz(θ)·R, so that for a turned head an in-plane
// rotation moves yaw and pitch too, not roll alone. For a frontal head it
// is roll' = roll − θ.
func RotateInPlane(yaw, pitch, roll, theta float64) (float64, float64, float64) {
	return rotZ(theta * deg).Mul(HeadRotation(yaw, pitch, roll)).Angles()
}

// RotatePoint moves the image point (x, y) (x to the right, y down) by the
// in-plane rotation of RotateInPlane: theta degrees counter-clockwise as
// seen in the image, about (cx, cy).
func RotatePoint(x, y, cx, cy, theta float64) (float64, float64) {
	c, s := math.Cos(theta*deg), math.Sin(theta*deg)
	dx, dy := x-cx, y-cy
	// In a y-up frame the point (dx, −dy) turns to (c·dx + s·dy, s·dx − c·dy);
	// flip y back.
	return cx + c*dx + s*dy, cy - s*dx + c*dy
}
