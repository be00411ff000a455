// Package attention is the frame's stage after the neutral pose: it says
// which named target each face looks at, and since when. A target is a
// region of head directions (yaw and pitch ranges, or a cone around a
// direction) in one of three frames:
//
//   - neutral: the angles as published, relative to the person's neutral
//     pose where one is set (a driver's road, mirrors, cluster);
//   - camera: the camera's frame, the estimate turned by the face's ray
//     (a television fixed in the room, seen by people anywhere in the frame);
//   - ray: the estimate itself, relative to the ray through the face: the
//     built-in target "camera", looking at the device (a robot's eyes, a
//     screen's camera), wherever the face is in the frame.
//
// Hysteresis keeps noise at a border from flickering: a face enters a
// target only `margin` degrees inside it and leaves it only `margin`
// degrees outside, and a new target must hold for `dwell` before it
// becomes the face's. See ../shared/docs/ATTENTION.md, "Geometry".
package attention

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/publish"
)

// Frame is where a target's directions are measured.
type Frame int

const (
	Neutral Frame = iota // the published angles (relative to the neutral pose, if set)
	Camera               // the camera's frame: the estimate turned by the face's ray
	Ray                  // the estimate itself: relative to the ray through the face
)

// CameraTarget is the built-in target: looking at the device.
const CameraTarget = "camera"

// Target is a named region of head directions, in degrees.
type Target struct {
	Name  string
	Frame Frame
	// A box of directions: yaw in [Yaw[0], Yaw[1]], pitch in
	// [Pitch[0], Pitch[1]]; or, with Radius > 0, a cone of that
	// angular radius around (Yaw[0], Pitch[0]).
	Yaw, Pitch [2]float64
	Radius     float64
	// Fallback targets count only where no other target holds the face
	// (the built-in camera: a driver's road wins over it).
	Fallback bool
}

// centre is the target's central direction.
func (t *Target) centre() (yaw, pitch float64) {
	if t.Radius > 0 {
		return t.Yaw[0], t.Pitch[0]
	}
	return (t.Yaw[0] + t.Yaw[1]) / 2, (t.Pitch[0] + t.Pitch[1]) / 2
}

// contains reports whether (yaw, pitch) is inside the target shrunk by
// inset degrees (a negative inset grows it).
func (t *Target) contains(yaw, pitch, inset float64) bool {
	if t.Radius > 0 {
		return angleBetween(yaw, pitch, t.Yaw[0], t.Pitch[0]) <= t.Radius-inset
	}
	return yaw >= t.Yaw[0]+inset && yaw <= t.Yaw[1]-inset && pitch >= t.Pitch[0]+inset && pitch <= t.Pitch[1]-inset
}

// angleBetween is the angle, in degrees, between the two head directions
// (the nose's direction of each pose, roll aside).
func angleBetween(y1, p1, y2, p2 float64) float64 {
	a, b := nose(y1, p1), nose(y2, p2)
	d := a[0]*b[0] + a[1]*b[1] + a[2]*b[2]
	return math.Acos(math.Max(-1, math.Min(1, d))) / deg
}

const deg = math.Pi / 180

// nose is the unit direction the head of pose (yaw, pitch) points to.
func nose(yaw, pitch float64) [3]float64 {
	r := rotation.Head(yaw, pitch, 0)
	return [3]float64{r[0][2], r[1][2], r[2][2]}
}

// Options of the stage.
type Options struct {
	Targets []Target
	// FOV is the camera's horizontal field of view in degrees: the face's
	// ray follows from it (focal length = half the width / tan(FOV/2)).
	FOV    float64
	Margin float64       // hysteresis, degrees
	Dwell  time.Duration // a new target holds this long before it counts
}

// Stage follows each tracked face's target. It is used by the frame loop
// alone (not safe for concurrent use).
type Stage struct {
	o     Options
	names []string // names[i] is Targets[i].Name: what messages point to
	faces map[uint64]*faceState
	gen   uint64
}

// faceState is one track's target and the target it may be moving to.
type faceState struct {
	target, pending  int // indices into the targets, -1: none
	since, pendingAt time.Time
	seen             uint64 // the last frame (gen) it was in
}

// New checks o and returns the stage.
func New(o Options) (*Stage, error) {
	if !(o.FOV > 0 && o.FOV < 180) {
		return nil, fmt.Errorf("attention: field of view %g°: want 0 < fov < 180", o.FOV)
	}
	if !(o.Margin >= 0 && o.Margin < 45) || o.Dwell < 0 {
		return nil, fmt.Errorf("attention: margin %g°, dwell %v: want 0 ≤ margin < 45 and dwell ≥ 0", o.Margin, o.Dwell)
	}
	s := &Stage{o: o, faces: map[uint64]*faceState{}}
	s.o.Targets = append([]Target(nil), o.Targets...)
	// Fixed order (by name): which of two overlapping targets with the
	// same distance wins must not depend on a map.
	sort.Slice(s.o.Targets, func(i, j int) bool { return s.o.Targets[i].Name < s.o.Targets[j].Name })
	for _, t := range s.o.Targets {
		if t.Radius < 0 || t.Radius == 0 && (t.Yaw[0] >= t.Yaw[1] || t.Pitch[0] >= t.Pitch[1]) {
			return nil, fmt.Errorf("attention: target %q: an empty region", t.Name)
		}
		s.names = append(s.names, t.Name)
	}
	return s, nil
}

// Apply sets the target and dwell of each face of a w×h frame seen at now.
// A face without a yaw and pitch looks at no known target. Tracks not seen
// in the frame are forgotten.
func (s *Stage) Apply(faces []publish.FaceMsg, w, h int, now time.Time) {
	if s == nil {
		return
	}
	s.gen++
	for i := range faces {
		f := &faces[i]
		st := s.faces[f.Track]
		cand := s.target(f, w, h, st)
		if st == nil {
			st = &faceState{target: cand, pending: cand, since: now, pendingAt: now}
			s.faces[f.Track] = st
		}
		st.seen = s.gen
		switch {
		case cand == st.target:
			st.pending = cand
		case cand != st.pending:
			st.pending, st.pendingAt = cand, now
		}
		if st.pending != st.target && now.Sub(st.pendingAt) >= s.o.Dwell {
			// The gaze moved when the new target was first seen.
			st.target, st.since = st.pending, st.pendingAt
		}
		f.Target = publish.Label{On: true}
		if st.target >= 0 {
			f.Target.Name, f.Target.Known = s.names[st.target], true
		}
		f.Dwell = publish.Some(math.Round(now.Sub(st.since).Seconds()*100) / 100)
	}
	for id, st := range s.faces {
		if st.seen != s.gen {
			delete(s.faces, id)
		}
	}
}

// target is the target face f looks at: among those that contain its
// direction, the one whose centre is nearest. The face's current target
// holds until it is margin degrees outside it; another must be entered
// margin degrees inside.
func (s *Stage) target(f *publish.FaceMsg, w, h int, st *faceState) int {
	if !f.Yaw.Set || !f.Pitch.Set {
		return -1
	}
	cur := -1
	if st != nil {
		cur = st.target
	}
	for _, fallback := range [2]bool{false, true} {
		best, bestD := -1, math.Inf(1)
		for i := range s.o.Targets {
			t := &s.o.Targets[i]
			if t.Fallback != fallback {
				continue
			}
			yaw, pitch := s.direction(f, t.Frame, w, h)
			inset := s.o.Margin
			if i == cur {
				inset = -s.o.Margin
			}
			if !t.contains(yaw, pitch, inset) {
				continue
			}
			cy, cp := t.centre()
			if d := angleBetween(yaw, pitch, cy, cp); d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// direction is the face's head direction (yaw, pitch) in frame fr.
func (s *Stage) direction(f *publish.FaceMsg, fr Frame, w, h int) (yaw, pitch float64) {
	yaw, pitch = f.Yaw.V, f.Pitch.V
	if fr == Neutral {
		return yaw, pitch
	}
	// The estimate itself: the camera's angles (raw) where a neutral pose
	// made the published ones relative.
	roll := f.Roll.V
	if f.RawYaw.Set {
		yaw, pitch, roll = f.RawYaw.V, f.RawPitch.V, f.RawRoll.V
	}
	if fr == Ray {
		return yaw, pitch
	}
	ry, rp := s.Ray(f.Box, w, h)
	cy, cp, _ := rotation.Head(ry, rp, 0).Mul(rotation.Head(yaw, pitch, roll)).Angles()
	return cy, cp
}

// Ray is the pose, in the camera's frame, of a head at box that looks
// straight into the lens: the direction back along its ray. A face right
// of the image's centre that looks at the camera turns its nose to the
// image's left (yaw > 0); one above the centre looks down (pitch < 0).
func (s *Stage) Ray(box [4]float64, w, h int) (yaw, pitch float64) {
	f := float64(w) / 2 / math.Tan(s.o.FOV/2*deg)
	cx, cy := (box[0]+box[2])/2, (box[1]+box[3])/2
	return math.Atan((cx-float64(w)/2)/f) / deg, math.Atan((cy-float64(h)/2)/f) / deg
}

// FromConfig is the stage of the configuration's attention block: its
// targets, and the built-in "camera" (a cone of attention.camera degrees
// around looking into the lens) unless that radius is 0; the configured
// targets win over it where they hold the face.
func FromConfig(a config.Attention) (*Stage, error) {
	o := Options{FOV: a.FOV, Margin: a.Margin, Dwell: a.Dwell}
	if a.Camera > 0 {
		o.Targets = append(o.Targets, Target{Name: CameraTarget, Frame: Ray, Radius: a.Camera, Fallback: true})
	}
	for name, t := range a.Targets {
		tg := Target{Name: name}
		if t.Frame == "camera" {
			tg.Frame = Camera
		}
		if t.Cone != nil {
			tg.Yaw[0], tg.Pitch[0], tg.Radius = t.Cone[0], t.Cone[1], t.Cone[2]
		} else {
			tg.Yaw, tg.Pitch = [2]float64{t.Yaw[0], t.Yaw[1]}, [2]float64{t.Pitch[0], t.Pitch[1]}
		}
		o.Targets = append(o.Targets, tg)
	}
	return New(o)
}
