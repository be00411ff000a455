package pipeline

import (
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/frame"
	"github.com/edgepose/posed/pipeline/metrics"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/zones"
	"github.com/edgepose/posed/publish"
	"github.com/edgepose/posed/publish/mqtttest"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// The whole frame path — the daemon's tracker (cascades, face network,
// the default model and its expert) on a real face,
// zones, a neutral pose, the messages encoded and published to a real
// mosquitto — allocates what paho's Publish of the frame's two messages
// allocates, and nothing of its own. The floor is a bare paho client
// publishing the same payloads at the same QoS, in the same run.
func TestFramePathAllocatesOnlyPahos(t *testing.T) {
	img := datatest.Frame640(t)
	// The daemon's frame path (pipeline/assemble) with its defaults but for
	// the schedule: a full detection every third frame and a scan by the
	// face network every second, so that every kind of frame is measured.
	dc := config.Default()
	dc.Model.Path = filepath.Join("..", "models", "default.gllim")
	dc.Detect.Every, dc.Detect.ScanEvery = 3, 2
	est, m, err := assemble.Estimator(dc.Model, dc.Research)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := assemble.Tracker(dc, est, detect.CalibrationOf(m.Calibration))
	if err != nil {
		t.Fatal(err)
	}

	broker := mqtttest.Start(t)
	cfg := publish.DefaultSettings()
	cfg.Broker, cfg.MaxRate, cfg.HAInterval = "tcp://"+broker.Addr(), 0, time.Hour
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// No keepalive pings during the counts (a loaded emulator's 150 frames
	// took minutes, and paho's pings every 30 s made a frame read 41
	// allocations against the floor's 40); the floor's client neither.
	pub, err := publish.New(cfg, "cam", log, nil, publish.WithKeepAlive(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { pub.Shutdown(t.Context()) }()
	wait.For(t, 5*time.Second, "the publisher's connection", func() bool { _, _, ok := pub.Counters(); return ok })
	n := neutral.New("", neutral.Options{Yaw: 5, Pitch: -3}, log)
	z := zones.New(zones.Options{Named: map[string][4]float64{"left": {0, 0, 320, 480}, "all": {0, 0, 640, 480}}, Mode: "largest"})
	l := &Loop{Tracker: tr, Publisher: pub, Metrics: metrics.New(metrics.Sources{}), Log: log, Neutral: n, Stages: []frame.Stage{z, n},
		State: message.State{Device: "cam", Camera: "test"}}
	f := &device.Frame{Gray: img, Time: time.Now()}
	published := func() uint64 { n, _, _ := pub.Counters(); return n }
	frame := func() {
		f.Seq++
		want := published() + 2 // pose and primary
		l.process(f)
		for published() < want {
			runtime.Gosched()
		}
	}
	// The largest messages the frame path publishes (a face's landmarks
	// come every track.landmark_every frames), for the floor below: paho
	// allocates by a packet's size.
	var poseLen, primLen int
	enc := make([]byte, 0, 8192)
	for range 12 { // tracks, buffers and the one HA summary settle
		frame()
		poseLen = max(poseLen, len(message.AppendPose(enc[:0], &l.msg)))
		if len(l.msg.Faces) > 0 {
			primLen = max(primLen, len(message.AppendPrimary(enc[:0], &message.Primary{Face: &l.msg.Faces[0]})))
		}
	}
	if len(l.msg.Faces) == 0 {
		t.Fatal("no face in the test frame")
	}
	l.free = make([]*device.Frame, 0, 400) // release appends here
	posed := testing.AllocsPerRun(150, frame)

	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + broker.Addr()).SetClientID("floor").SetOrderMatters(false).SetKeepAlive(time.Hour))
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("floor client: %v", tok.Error())
	}
	defer c.Disconnect(50)
	payload := make([]byte, max(600, poseLen, primLen))
	qos := byte(cfg.QoS)
	floor := testing.AllocsPerRun(150, func() {
		c.Publish("posed/cam/pose", qos, false, payload[:max(600, poseLen)]).Wait()
		c.Publish("posed/cam/primary", qos, false, payload[:max(300, primLen)]).Wait()
	})
	t.Logf("a frame with %d face(s): %.0f allocations; paho's Publish of two messages (%d and %d bytes) alone: %.0f", len(l.msg.Faces), posed, poseLen, primLen, floor)
	if posed > floor {
		t.Errorf("the frame path allocates %.0f times per frame, paho alone %.0f", posed, floor)
	}
}

// The loop's own part of a frame (zones, neutral pose, messages, the view
// with nobody watching) allocates nothing.
func TestProcessDoesNotAllocate(t *testing.T) {
	l, f := benchLoop()
	l.process(f)
	if a := testing.AllocsPerRun(100, func() { l.process(f); l.free = l.free[:0] }); a != 0 {
		t.Errorf("process allocates %.0f times per frame", a)
	}
}
