package pipeline

import (
	"image"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/frame"
	"github.com/edgepose/posed/pipeline/metrics"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/zones"
)

type noopPub struct{}

func (noopPub) Pose(*message.Pose, int)    {}
func (noopPub) Retain(string, any)         {}
func (noopPub) Stats(message.Stats)        {}
func (noopPub) NoFaces()                   {}
func (noopPub) Event(message.Event)        {}
func (noopPub) CommandError(string, error) {}

type twoFaces struct{ faces []track.Face }

func (t twoFaces) ProcessAt(*image.Gray, time.Time) []track.Face { return t.faces }
func (twoFaces) Timing() track.Timing                            { return track.Timing{Detected: true} }

// BenchmarkProcess is the loop's part of a frame with two faces (zones,
// a neutral pose, attention targets, the messages handed over), the
// tracker and publisher doing nothing.
func BenchmarkProcess(b *testing.B) {
	l, f := benchLoop()
	b.ReportAllocs()
	for b.Loop() {
		l.process(f)
		l.free = l.free[:0]
	}
}

// benchLoop is a loop whose tracker sees two faces, with a zone and a
// neutral pose, publishing nowhere, and a frame for it.
func benchLoop() (*Loop, *device.Frame) {
	faces := []track.Face{
		{ID: 1, Box: feature.Box{X: 100, Y: 80, W: 90, H: 90}, Angles: [3]float64{20, -5, 2}, Std: [3]float64{4, 5, 6}, Has: [3]bool{true, true, true}},
		{ID: 2, Box: feature.Box{X: 400, Y: 100, W: 60, H: 60}, Angles: [3]float64{-50, 3, 0}, Std: [3]float64{4, 5, 6}, Has: [3]bool{true, true, true}},
	}
	n := neutral.New("", neutral.Options{Yaw: 5, Pitch: 2}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	a := config.Default().Attention
	a.Targets = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}, "tv": {Cone: []float64{30, 0, 10}, Frame: "camera"}}
	att, err := assemble.Attention(a)
	if err != nil {
		panic(err)
	}
	z := zones.New(zones.Options{Named: map[string][4]float64{"desk": {0, 0, 320, 480}}, Mode: "largest"})
	l := &Loop{Tracker: twoFaces{faces}, Publisher: noopPub{}, Metrics: metrics.New(metrics.Sources{}), Neutral: n, Stages: []frame.Stage{z, n, Attention(att)}}
	l.free = []*device.Frame{}
	f := &device.Frame{Gray: image.NewGray(image.Rect(0, 0, 640, 480)), Time: time.Now()}
	return l, f
}
