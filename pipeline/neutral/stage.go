package neutral

import (
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/frame"
)

// Frame measures and learns the neutral pose from the frame's primary face,
// makes every face's published angles relative to it (the camera's kept
// beside, as raw_*) and says its status (frame.Stage).
func (c *Pose) Frame(f *frame.Frame) {
	if f.Primary >= 0 {
		c.Sample(&f.Faces[f.Primary])
		c.Observe(&f.Faces[f.Primary], f.Time)
	} else {
		c.Observe(nil, f.Time)
	}
	n := c.Rotation()
	for i := range f.Faces {
		m := &f.Faces[i]
		y, p, r, ok := Relative(n, m)
		if !ok {
			continue
		}
		m.RawYaw, m.RawPitch, m.RawRoll = m.Yaw, m.Pitch, m.Roll
		m.Yaw, m.Pitch = message.Some(y), message.Some(p)
		if m.Roll.Set {
			m.Roll = message.Some(r)
		}
	}
	f.Neutral = c.Status()
}

// Idle says the neutral pose's status while no frame comes (frame.Idler).
func (c *Pose) Idle(f *frame.Frame, why string) { f.Neutral = c.Status() }

// Status is the neutral pose's status for the attention summary: set (by
// hand or in the configuration), learnt, calibrating or none.
func (c *Pose) Status() string {
	if z := c.State(); z != nil {
		if z.Source == "learnt" {
			return "learnt"
		}
		return "set"
	}
	if m := c.Learning(); m != nil && m.Status == Calibrating {
		return "calibrating"
	}
	return "none"
}
