// Package frame is what the stages after the tracker share: one frame, its
// faces, and the small interface each stage implements. The frame loop
// (pipeline) fills a Frame from the tracker, hands it to its stages in
// order — zones, neutral, attention, the live view — and publishes what
// they made of it; cmd/posed builds the list.
package frame

import (
	"image"
	"time"

	"github.com/edgepose/posed/message"
)

// Frame is one processed frame. A stage reads what the stages before it
// wrote and writes its own part; nothing in it outlives the next frame
// (the loop reuses its storage).
type Frame struct {
	Seq   uint64
	Time  time.Time // captured
	Image *image.Gray
	// Faces are the tracker's faces, largest first, in the form they are
	// published but at full precision: the loop fills the track, box,
	// score, view and camera-relative angles, and each stage its fields
	// (zones; angles relative to the neutral pose; target, dwell and
	// attention). The loop rounds the copy it publishes (message.Face.Round).
	Faces []message.Face
	// Primary is the index of the face that matters (-1: none): the
	// largest unless the zones stage chooses otherwise.
	Primary int
	// Neutral is the neutral pose's status (set, learnt, calibrating,
	// none), for the attention summary.
	Neutral string
	// Events are the attention events that started or ended with this
	// frame; Attention the attention summary if it changed (nil: as
	// before). The loop publishes both.
	Events    []message.Event
	Attention *message.Attention
}

// Size returns the frame's width and height.
func (f *Frame) Size() (w, h int) {
	if f.Image == nil {
		return 0, 0
	}
	return f.Image.Rect.Dx(), f.Image.Rect.Dy()
}

// Stage does its part of each processed frame, in the frame loop's
// goroutine. It must not block.
type Stage interface {
	Frame(f *Frame)
}

// Why frames stopped coming, for Idler.
const (
	Starting = ""               // the loop starts: nothing seen yet
	Paused   = "paused"         // detection switched off
	Offline  = "camera_offline" // the camera went away
	Stopped  = "stopped"        // posed stops or reloads
)

// Idler is a stage that keeps state across frames and must hear when
// there are none: it ends what was in progress (why says why) and may
// write f's Neutral, Events and Attention, which the loop publishes. f has
// no image and no faces.
type Idler interface {
	Idle(f *Frame, why string)
}
