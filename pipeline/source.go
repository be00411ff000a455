package pipeline

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/publish"
)

// Open opens the configured source: a V4L2 camera for /dev paths, a
// replay (image folder, MJPEG or Y4M file) otherwise.
func Open(s config.Source) (device.Source, error) {
	if strings.HasPrefix(s.Path, "/dev/") {
		return device.OpenCamera(s.Path, device.CameraOptions{Width: s.Width, Height: s.Height, FPS: s.FPS, Format: s.Format, Buffers: s.Buffers, Timeout: s.Timeout})
	}
	return device.OpenReplay(s.Path, device.ReplayOptions{FPS: s.FPS, Loop: s.Loop})
}

// Lossless reports whether every frame of the source should be processed
// (Loop.Lossless): a replay with no pace (fps 0) is read as fast as posed
// processes it, not faster.
func Lossless(s config.Source) bool {
	return !strings.HasPrefix(s.Path, "/dev/") && s.FPS == 0
}

// NewSource is the configured source, re-opened with backoff when it
// fails or vanishes; each change of its status is counted in met, logged,
// and published (retained) on the camera topic, and Home Assistant hears
// that no face is seen while it is offline.
func NewSource(s config.Source, deviceID string, pub Publisher, met *Metrics, log *slog.Logger) *device.Reopening {
	return &device.Reopening{
		Open:    func() (device.Source, error) { return Open(s) },
		Backoff: s.Reopen, MaxWait: s.ReopenMax,
		OnStatus: func(st device.Status) {
			met.CameraOnline.Store(st.Online)
			if st.Online {
				met.CameraErr.Store("")
			} else {
				met.CameraErr.Store(fmt.Sprintf("%v (retry in %v)", st.Err, st.Retry.Round(time.Millisecond)))
			}
			msg := publish.CameraMsg{Schema: publish.SchemaVersion, Device: deviceID, Camera: s.Path, Status: "online", Changed: time.Now()}
			if !st.Online {
				msg.Status, msg.Error, msg.RetryS = "offline", st.Err.Error(), st.Retry.Seconds()
				log.Warn("camera offline", "camera", s.Path, "err", st.Err, "retry", st.Retry)
				pub.NoFaces()
			} else {
				log.Info("camera online", "camera", s.Path)
			}
			pub.Retain(publish.TopicCamera, msg)
		},
	}
}
