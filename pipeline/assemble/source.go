package assemble

import (
	"strings"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
)

// Open opens the configured source: a V4L2 camera for /dev paths, a
// replay (image folder, MJPEG or Y4M file) otherwise.
func Open(s config.Source) (device.Source, error) {
	if strings.HasPrefix(s.Path, "/dev/") {
		return device.OpenCamera(s.Path, device.CameraOptions{Width: s.Width, Height: s.Height, FPS: s.FPS, Format: s.Format, Buffers: s.Buffers, Timeout: s.Timeout})
	}
	return device.OpenReplay(s.Path, device.ReplayOptions{FPS: s.FPS, Loop: s.Loop, Unpaced: s.Unpaced})
}

// ReplayFrameTime is the time between two frames of a replay read as
// fast as posed processes it (pipeline.Loop.FrameTime): 1/fps where the
// configuration gives a rate, else 1/15 s (posed's default rate); 0 for a
// paced source, whose frames carry their own times.
func ReplayFrameTime(s config.Source) time.Duration {
	if !Lossless(s) {
		return 0
	}
	if s.FPS > 0 {
		return time.Duration(float64(time.Second) / s.FPS)
	}
	return time.Second / 15
}

// Lossless reports whether every frame of the source should be processed
// (pipeline.Loop.Lossless): a replay with no pace (fps 0, or unpaced) is read as
// fast as posed processes it, not faster.
func Lossless(s config.Source) bool {
	return !strings.HasPrefix(s.Path, "/dev/") && (s.FPS == 0 || s.Unpaced)
}

// NewSource is the configured source, re-opened with backoff when it
// fails or vanishes; each change of its status goes to onStatus
// (pipeline.Loop.CameraStatus).
func NewSource(s config.Source, onStatus func(device.Status)) *device.Reopening {
	return &device.Reopening{
		Open:    func() (device.Source, error) { return Open(s) },
		Backoff: s.Reopen, MaxWait: s.ReopenMax,
		OnStatus: onStatus,
	}
}
