package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/attention"
	"github.com/edgepose/posed/pipeline/control"
	"github.com/edgepose/posed/pipeline/frame"
	"github.com/edgepose/posed/pipeline/metrics"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/zones"
)

// scriptSource delivers its items in order: a frame (by sequence number)
// once the previous frame has been processed, or an error at once; then
// device.ErrEnd, or blocks until ctx ends if hold is set.
type scriptSource struct {
	items     []any // uint64 (a frame's Seq) or error
	processed chan struct{}
	hold      bool
	i         int
	frames    int
	step      time.Duration // if set, frame n is stamped n·step after a fixed time (else now)
}

func (s *scriptSource) Next(ctx context.Context, f *device.Frame) error {
	if s.i == len(s.items) {
		if s.frames > 0 {
			<-s.processed
			s.frames = 0
		}
		if s.hold {
			<-ctx.Done()
			return ctx.Err()
		}
		return device.ErrEnd
	}
	it := s.items[s.i]
	s.i++
	if err, ok := it.(error); ok {
		return err
	}
	if s.frames > 0 {
		select {
		case <-s.processed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.frames++
	if f.Gray == nil {
		f.Gray = image.NewGray(image.Rect(0, 0, 64, 48))
	}
	f.Seq, f.Time = it.(uint64), time.Now()
	if s.step > 0 {
		f.Time = time.Unix(1000, 0).Add(time.Duration(f.Seq) * s.step)
	}
	return nil
}

// scriptTracker reports faces[seq] faces for frame seq.
type scriptTracker struct {
	faces     map[uint64]int
	processed chan struct{}
	seq       uint64
	mu        sync.Mutex
}

func (t *scriptTracker) ProcessAt(img *image.Gray, at time.Time) []track.Face {
	t.mu.Lock()
	t.seq++
	n := t.faces[t.seq]
	t.mu.Unlock()
	var out []track.Face
	for i := 0; i < n; i++ {
		out = append(out, track.Face{ID: uint64(i + 1), Box: feature.Box{X: 10.123, Y: 5, W: 20, H: 20}, Score: 3.14159,
			Angles: [3]float64{12.345, -3.21, 0}, Std: [3]float64{5, 6, 7}, Has: [3]bool{true, true, false}})
	}
	defer func() { t.processed <- struct{}{} }()
	return out
}

func (t *scriptTracker) Timing() track.Timing {
	return track.Timing{Detected: true, Detect: time.Millisecond}
}

// recorder is a Publisher that keeps everything.
type recorder struct {
	mu            sync.Mutex
	poses         []message.Pose
	primaries     []int
	states        []message.State
	cameras       []message.Camera
	stats         []message.Stats
	noFaces       int
	attention     []message.Attention
	events        []message.Event
	commandErrors []string
}

// Pose keeps a deep copy: the loop reuses the message and its faces.
func (r *recorder) Pose(m *message.Pose, primary int) {
	c := *m
	c.Faces = nil
	for _, f := range m.Faces {
		f.Zones = append([]string(nil), f.Zones...)
		c.Faces = append(c.Faces, f)
	}
	r.mu.Lock()
	r.poses = append(r.poses, c)
	r.primaries = append(r.primaries, primary)
	r.mu.Unlock()
}
func (r *recorder) Stats(m message.Stats) {
	r.mu.Lock()
	r.stats = append(r.stats, m)
	r.mu.Unlock()
}
func (r *recorder) NoFaces() { r.mu.Lock(); r.noFaces++; r.mu.Unlock() }
func (r *recorder) CommandError(command string, err error) {
	r.mu.Lock()
	r.commandErrors = append(r.commandErrors, command+": "+err.Error())
	r.mu.Unlock()
}
func (r *recorder) Event(e message.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}
func (r *recorder) Retain(topic string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m := v.(type) {
	case message.State:
		r.states = append(r.states, m)
	case message.Camera:
		r.cameras = append(r.cameras, m)
	case message.Attention:
		m.Active = append([]string(nil), m.Active...)
		r.attention = append(r.attention, m)
	default:
		panic(fmt.Sprintf("unexpected retained %s: %T", topic, v))
	}
}

func newScript(items []any, faces map[uint64]int) (*scriptSource, *scriptTracker, *recorder) {
	ch := make(chan struct{}, 1)
	return &scriptSource{items: items, processed: ch}, &scriptTracker{faces: faces, processed: ch}, &recorder{}
}

// The loop publishes a pose for every frame with faces and one when they
// go, keeps the retained state's face count current, skips and counts bad
// frames (logging each distinct error once), says READY, and leaves a
// stopped state, no faces and an offline camera when the replay ends.
func TestLoopPublishes(t *testing.T) {
	bad := fmt.Errorf("%w: frame 3.jpg: truncated", device.ErrBadFrame)
	items := []any{uint64(1), uint64(2), bad, uint64(3), bad, uint64(4), uint64(5), uint64(6)}
	src, trk, pub := newScript(items, map[uint64]int{1: 1, 2: 1, 3: 1, 6: 2})
	var logs bytes.Buffer
	var notes []string
	l := &Loop{Source: src, Tracker: trk, Publisher: pub, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		State: message.State{Device: "cam", Camera: "replay"}, Notify: func(s string) { notes = append(notes, s) }}
	if err := l.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var seqs []string
	for _, p := range pub.poses {
		seqs = append(seqs, fmt.Sprintf("%d:%d", p.Seq, len(p.Faces)))
	}
	if got := strings.Join(seqs, " "); got != "1:1 2:1 3:1 4:0 6:2" {
		t.Errorf("poses (seq:faces) %s, want 1:1 2:1 3:1 4:0 6:2", got)
	}
	f := pub.poses[0].Faces[0]
	if f.Box != [4]float64{10.12, 5, 30.12, 25} || f.Score != 3.14 || f.Yaw != message.Some(12.35) || f.Pitch != message.Some(-3.21) || f.Roll.Set || f.YawStd != message.Some(5) {
		t.Errorf("face message %+v", f)
	}
	var states []string
	for _, s := range pub.states {
		states = append(states, fmt.Sprintf("%s:%d", s.Status, s.Faces))
		if s.Schema != message.SchemaVersion || s.Device != "cam" {
			t.Errorf("state %+v", s)
		}
	}
	if got := strings.Join(states, " "); got != "running:0 running:1 running:0 running:2 stopped:0" {
		t.Errorf("states %s", got)
	}
	if n := len(pub.cameras); n != 1 || pub.cameras[0].Status != "offline" || pub.noFaces != 1 {
		t.Errorf("at the end: cameras %+v, NoFaces %d", pub.cameras, pub.noFaces)
	}
	m := l.Metrics
	if m.FramesIn.Load() != 6 || m.FramesProcessed.Load() != 6 || m.FramesBad.Load() != 2 || m.FramesDropped.Load() != 0 || m.Faces.Load() != 5 {
		t.Errorf("counters in %d processed %d bad %d dropped %d faces %d", m.FramesIn.Load(), m.FramesProcessed.Load(), m.FramesBad.Load(), m.FramesDropped.Load(), m.Faces.Load())
	}
	if n := strings.Count(logs.String(), "frame dropped"); n != 1 {
		t.Errorf("the same bad frame logged %d times, want once:\n%s", n, logs.String())
	}
	if len(notes) == 0 || notes[0] != "READY=1" {
		t.Errorf("notifications %v", notes)
	}
}

// While the source has nothing, statistics still go out every StatsEvery
// and the watchdog is pinged while the camera is offline; cancelling the
// context stops the loop with the context's error and the stopped state.
func TestLoopStatsWatchdogCancel(t *testing.T) {
	src, trk, pub := newScript([]any{uint64(1)}, map[uint64]int{1: 1})
	src.hold = true
	var mu sync.Mutex
	dogs := 0
	l := &Loop{Source: src, Tracker: trk, Publisher: pub, StatsEvery: 20 * time.Millisecond, Watchdog: 20 * time.Millisecond,
		Notify: func(s string) {
			if s == "WATCHDOG=1" {
				mu.Lock()
				dogs++
				mu.Unlock()
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Three rounds of stats and of watchdog pings (every 20 ms), the
	// camera offline all along.
	wait.Until(10*time.Second, func() bool {
		pub.mu.Lock()
		st := len(pub.stats)
		pub.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		return st >= 3 && dogs >= 3
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v", err)
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.stats) < 3 || pub.stats[len(pub.stats)-1].FramesProcessed != 1 {
		t.Errorf("stats: %+v", pub.stats)
	}
	mu.Lock()
	defer mu.Unlock()
	if dogs < 3 {
		t.Errorf("%d watchdog pings with the camera offline, want one every 20 ms", dogs)
	}
	if last := pub.states[len(pub.states)-1]; last.Status != "stopped" || last.Faces != 0 {
		t.Errorf("last state %+v", last)
	}
}

// streamSource delivers a frame every period until ctx ends, like a
// camera.
type streamSource struct {
	period time.Duration
	seq    uint64
}

func (s *streamSource) Next(ctx context.Context, f *device.Frame) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.period):
	}
	if f.Gray == nil {
		f.Gray = image.NewGray(image.Rect(0, 0, 64, 48))
	}
	s.seq++
	f.Seq, f.Time = s.seq, time.Now()
	return nil
}

// With the privacy switch off no frame is processed, yet frames arrive:
// the watchdog keeps being told (systemd would otherwise restart posed
// every WatchdogSec for as long as the switch is off) and /healthz says
// paused, not failing. (Failed before: no ping after the switch, and
// "last frame … ago".)
func TestPausedKeepsWatchdogAndHealth(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	ctl := control.New("", nil, neutral.New("", neutral.Options{}, log), control.Actions{}, log)
	ctl.SetDetect(false)
	trk := &scriptTracker{faces: map[uint64]int{}, processed: make(chan struct{}, 100)}
	var mu sync.Mutex
	dogs := 0
	l := &Loop{Source: &streamSource{period: 5 * time.Millisecond}, Tracker: trk, Publisher: &recorder{}, Control: ctl,
		Watchdog: 40 * time.Millisecond,
		Notify: func(s string) {
			if s == "WATCHDOG=1" {
				mu.Lock()
				dogs++
				mu.Unlock()
			}
		}}
	l.Metrics = metrics.New(metrics.Sources{})
	l.Metrics.CameraOnline.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Frames arrive and are dropped unseen; the watchdog hears of them.
	wait.Until(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return dogs >= 4 && l.Metrics.FramesIn.Load() >= 20
	})
	ok, why := l.Metrics.Healthy(100 * time.Millisecond)
	cancel()
	<-done
	if n := l.Metrics.FramesProcessed.Load(); n != 0 {
		t.Errorf("%d frames processed while paused", n)
	}
	if !ok || !strings.Contains(why, "paused") {
		t.Errorf("healthz while paused: %v %q", ok, why)
	}
	mu.Lock()
	defer mu.Unlock()
	if dogs < 4 {
		t.Errorf("%d watchdog pings while paused with 20 frames arriving, want one every 20 ms", dogs)
	}
}

// endSource delivers one frame, then device.ErrEnd.
type endSource struct{ n int }

func (s *endSource) Next(_ context.Context, f *device.Frame) error {
	if s.n++; s.n > 1 {
		return device.ErrEnd
	}
	f.Gray, f.Seq, f.Time = image.NewGray(image.Rect(0, 0, 64, 48)), 1, time.Now()
	return nil
}

// The frame still pending when capture ends (a replay's last frame, or
// the frame in hand as the daemon stops) goes through the privacy switch
// like any other: with detection off it is dropped unseen. The loop is
// held at READY until capture has ended with the frame pending, so its
// select has both the frame and the end to choose from; over 32 runs the
// end is taken first with the frame pending about 16 times (each run
// alone picks it with probability 1/2).
func TestEndOfCaptureKeepsPrivacy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := range 32 {
		ctl := control.New("", nil, neutral.New("", neutral.Options{}, log), control.Actions{}, log)
		ctl.SetDetect(false)
		trk := &scriptTracker{faces: map[uint64]int{1: 1}, processed: make(chan struct{}, 4)}
		l := &Loop{Source: &endSource{}, Tracker: trk, Publisher: &recorder{}, Control: ctl, Log: log}
		l.Notify = func(s string) {
			if s != "READY=1" {
				return
			}
			wait.Until(10*time.Second, func() bool { return len(l.ended) > 0 })
		}
		if err := l.Run(context.Background()); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if n := l.Metrics.FramesProcessed.Load(); n != 0 || trk.seq != 0 {
			t.Fatalf("run %d: detection off, yet %d frames processed (the tracker saw %d)", run, n, trk.seq)
		}
		if !l.Metrics.Paused.Load() || l.Metrics.FramesIn.Load() != 1 {
			t.Fatalf("run %d: paused %v, %d frames in: the last frame was not dropped unseen", run, l.Metrics.Paused.Load(), l.Metrics.FramesIn.Load())
		}
	}
}

// slowTracker takes 5 ms a frame, like a busy machine, and sees one face.
type slowTracker struct{}

func (slowTracker) ProcessAt(*image.Gray, time.Time) []track.Face {
	time.Sleep(5 * time.Millisecond)
	return []track.Face{{ID: 1, Box: feature.Box{X: 1, Y: 1, W: 20, H: 20}, Has: [3]bool{true, true, false}}}
}
func (slowTracker) Timing() track.Timing { return track.Timing{} }

// An unpaced replay (fps 0) is processed frame by frame however slow the
// processing: Lossless makes capture wait instead of replacing the
// pending frame. Without it the same replay loses frames (the control).
func TestLosslessReplayProcessesEveryFrame(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	for i := range n {
		g := image.NewGray(image.Rect(0, 0, 64, 48))
		g.Pix[i] = 255
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%03d.png", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, g); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	cfg := config.Source{Path: dir}
	if !assemble.Lossless(cfg) {
		t.Fatal("an unpaced replay is not lossless")
	}
	if assemble.Lossless(config.Source{Path: dir, FPS: 15}) || assemble.Lossless(config.Source{Path: "/dev/video0"}) {
		t.Fatal("a paced replay or a camera is lossless")
	}
	for _, lossless := range []bool{true, false} {
		src, err := assemble.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pub := &recorder{}
		l := &Loop{Source: src, Tracker: slowTracker{}, Publisher: pub, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Lossless: lossless}
		if err := l.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		src.Close()
		m := l.Metrics
		if !lossless {
			if m.FramesDropped.Load() == 0 {
				t.Errorf("control: the replay lost no frame to a 5 ms tracker (%d processed)", m.FramesProcessed.Load())
			}
			continue
		}
		if m.FramesProcessed.Load() != n || m.FramesDropped.Load() != 0 || len(pub.poses) != n {
			t.Errorf("lossless: %d of %d frames processed, %d dropped, %d poses", m.FramesProcessed.Load(), n, m.FramesDropped.Load(), len(pub.poses))
		}
		for i, p := range pub.poses {
			if p.Seq != uint64(i+1) {
				t.Fatalf("pose %d is frame %d", i, p.Seq)
			}
		}
	}
}

// timedTracker records the times the loop gives its frames.
type timedTracker struct{ at []time.Time }

func (t *timedTracker) ProcessAt(_ *image.Gray, at time.Time) []track.Face {
	t.at = append(t.at, at)
	return nil
}
func (t *timedTracker) Timing() track.Timing { return track.Timing{} }

// An unpaced replay's frames reach the tracker FrameTime apart, its
// frame n at n·FrameTime, however fast posed reads them (the filter would
// take milliseconds between frames for a head's turn between them); a
// paced source's frames keep their capture times.
func TestReplayFrameTime(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		f, _ := os.Create(filepath.Join(dir, fmt.Sprintf("%03d.png", i)))
		png.Encode(f, image.NewGray(image.Rect(0, 0, 32, 24)))
		f.Close()
	}
	for _, c := range []struct {
		src  config.Source
		want time.Duration
	}{
		{config.Source{Path: dir}, time.Second / 15},
		{config.Source{Path: dir, FPS: 30, Unpaced: true}, time.Second / 30},
		{config.Source{Path: dir, FPS: 60}, 0},
		{config.Source{Path: "/dev/video0"}, 0},
	} {
		if got := assemble.ReplayFrameTime(c.src); got != c.want {
			t.Errorf("%+v: frame time %v, want %v", c.src, got, c.want)
		}
	}
	src, err := assemble.Open(config.Source{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tr := &timedTracker{}
	l := &Loop{Source: src, Tracker: tr, Publisher: &recorder{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Lossless: true, FrameTime: time.Second / 15}
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(tr.at) != 5 {
		t.Fatalf("%d frames processed, want 5", len(tr.at))
	}
	for i, at := range tr.at {
		if want := time.Unix(0, 0).Add(time.Duration(i+1) * (time.Second / 15)); !at.Equal(want) {
			t.Errorf("frame %d at %v, want %v", i+1, at, want)
		}
	}
}

// The attention topic follows the primary face, change-driven: unknown
// (no face) at the start, the face's state while it is there, unknown
// when it goes, and stopped as posed stops; a driver's distraction in
// progress ends as the camera goes offline.
func TestLoopAttention(t *testing.T) {
	src, trk, pub := newScript([]any{uint64(1), uint64(2), uint64(3), uint64(4), uint64(5)}, map[uint64]int{1: 1, 2: 1, 3: 1, 5: 1})
	// No doubt: this tests the loop's publishing, not the stage's rules
	// (the scripted face is 2.3° inside the camera cone's edge).
	a := config.Default().Attention
	a.Doubt = 0
	att, err := assemble.Attention(a)
	if err != nil {
		t.Fatal(err)
	}
	l := &Loop{Source: src, Tracker: trk, Publisher: pub, Stages: []frame.Stage{Attention(att)}}
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range pub.attention {
		got = append(got, fmt.Sprintf("%s/%s/%s", m.State, m.Reason, m.Neutral))
		if m.Time.Before(time.Now().Add(-time.Minute)) || m.Schema != message.SchemaVersion {
			t.Errorf("attention message %+v: no time, or no schema", m)
		}
	}
	// The scripted face (yaw 12.3°, pitch −3.2°: 12.7° from the lens)
	// is outside the camera cone less its margin: away.
	want := "unknown/no_face/none away//none unknown/no_face/none away//none unknown/stopped/none"
	if strings.Join(got, " ") != want {
		t.Errorf("attention summaries %q, want %q", strings.Join(got, " "), want)
	}
	if f := pub.poses[0].Faces[0]; f.Attention != attention.StateAway || !f.Target.On || f.Target.Known {
		t.Errorf("face %+v: want attention away, target null", f)
	}

	// The driver looks away (off the road) for long enough, then posed
	// stops: the distraction ends, dated by the last frame.
	a = config.Default().Attention
	a.Doubt = 0
	a.Profile, a.Targets = "driver", map[string]config.AttentionTarget{"road": {Yaw: []float64{-5, 5}, Pitch: []float64{-5, 5}}}
	a.Driver.Long = 100 * time.Millisecond
	att, _ = assemble.Attention(a)
	src, trk, pub = newScript([]any{uint64(1), uint64(2), uint64(3)}, map[uint64]int{1: 1, 2: 1, 3: 1})
	src.step = 100 * time.Millisecond
	l = &Loop{Source: src, Tracker: trk, Publisher: pub, Stages: []frame.Stage{Attention(att)}}
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, e := range pub.events {
		evs = append(evs, fmt.Sprintf("%s/%s/%s@%v", e.Kind, e.Phase, e.Why, e.Time.Sub(time.Unix(1000, 0))))
	}
	if got, want := strings.Join(evs, " "), "long_distraction/start/@200ms long_distraction/end/stopped@300ms"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// errorsTo is a recorder that also hands each command error to a channel.
type errorsTo struct {
	recorder
	errs chan string
}

func (e *errorsTo) CommandError(command string, err error) { e.errs <- command + ": " + err.Error() }

// A set/zero measurement that saw too few frames of a face ends on the
// error topic, through the loop (the neutral pose's Failed), and a
// measurement that sets the pose makes the loop publish the state again
// (its Changed): the neutral pose is built knowing no publisher.
func TestZeroOutcomesReachThePublisher(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	clk := clock.NewManual(time.Unix(1000, 0))
	n := neutral.New("", neutral.Options{Seconds: 1}, log)
	n.Clock = clk
	ctl := control.New("", nil, n, control.Actions{}, log)
	pub := &errorsTo{errs: make(chan string, 1)}
	trk := &scriptTracker{faces: map[uint64]int{}, processed: make(chan struct{}, 1000)}
	l := &Loop{Source: &streamSource{period: 5 * time.Millisecond}, Tracker: trk, Publisher: pub, Control: ctl, Neutral: n,
		Metrics: metrics.New(metrics.Sources{}), Log: log, Stages: []frame.Stage{zones.New(zones.Options{Mode: "largest"}), n}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := ctl.Handle(message.CommandZero, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // the measurement ends with no face seen
	select {
	case e := <-pub.errs:
		if !strings.HasPrefix(e, "zero: ") || !strings.Contains(e, "fewer than") {
			t.Errorf("error topic: %q", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed measurement never reached the error topic")
	}
	// Faces from now on: a measurement sets the pose, and the loop
	// publishes the state with it.
	trk.mu.Lock()
	for q := trk.seq + 1; q < trk.seq+100000; q++ {
		trk.faces[q] = 1
	}
	trk.mu.Unlock()
	// The record holds every frame of the first measurement too: empty it,
	// so that the frames counted below are frames of this one (a slow
	// machine, qemu, had read more of them than five).
	for len(trk.processed) > 0 {
		<-trk.processed
	}
	if _, err := ctl.Handle(message.CommandZero, nil); err != nil {
		t.Fatal(err)
	}
	// Eight frames read after the command: at most one of them began before
	// it, and the last may still be in the stages, so at least six reach
	// the measurement, more than minZeroFrames.
	for range 8 {
		<-trk.processed
	}
	clk.Advance(2 * time.Second)
	wait.For(t, 10*time.Second, "a state with the measured pose", func() bool {
		for len(trk.processed) > 0 {
			<-trk.processed // the tracker's record of frames, kept from filling
		}
		select {
		case e := <-pub.errs:
			t.Fatalf("the second measurement failed: %s", e)
		default:
		}
		pub.mu.Lock()
		defer pub.mu.Unlock()
		if k := len(pub.states); k > 0 {
			z := pub.states[k-1].Zero
			return z != nil && z.Source == "measured" && math.Abs(z.Yaw-12.35) < 0.01
		}
		return false
	})
}
