package dataset

import (
	"math"

	"github.com/edgepose/posed/infer/rotation"
)

// Rotation is a head rotation in the labels' convention (infer/rotation:
// R = Rx(pitch)·Ry(yaw)·Rz(−roll), pitch > 0 looking up, yaw > 0 the nose
// to the image's left, roll > 0 clockwise as seen).
type Rotation = rotation.Matrix

const deg = math.Pi / 180

func rotX(a float64) Rotation { return rotation.X(a) }
func rotY(a float64) Rotation { return rotation.Y(a) }
func rotZ(a float64) Rotation { return rotation.Z(a) }

// HeadRotation returns R = Rx(pitch)·Ry(yaw)·Rz(−roll) for angles in degrees.
func HeadRotation(yaw, pitch, roll float64) Rotation { return rotation.Head(yaw, pitch, roll) }

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
