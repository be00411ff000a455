// Package pipeline is posed's frame loop. A frame's way:
//
//	device (camera or replay, turned upright: device.Oriented)
//	  → capture goroutine → a one-frame slot (the newest frame wins)
//	  → Tracker (infer/track: detection, tracking, pose)
//	  → the stages, in order, each doing its part of one frame.Frame:
//	    zones (pipeline/zones: the zones of each face, the primary face)
//	    → neutral (pipeline/neutral: angles relative to the neutral pose)
//	    → attention (pipeline/attention: the target each face looks at)
//	    → the live view (pipeline/web)
//	  → Publisher (publish: MQTT)
//
// The processing goroutine is the only one that publishes the frame's
// messages, the state and the camera's status; pipeline/metrics counts it
// all for /metrics and /healthz, and pipeline/control's commands switch
// detection and change the neutral pose between frames. cmd/posed wires
// the real parts; the interfaces are the loop's own, so its tests use
// small fakes.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/control"
	"github.com/edgepose/posed/pipeline/frame"
	"github.com/edgepose/posed/pipeline/metrics"
	"github.com/edgepose/posed/pipeline/neutral"
)

// Source delivers frames: device.Reopening (a camera or replay that is
// re-opened when it fails). Next fills f or returns an error: device.ErrEnd
// at the end of a replay, device.ErrFrameSize or device.ErrBadFrame for a
// frame to skip, anything else stops the loop.
type Source interface {
	Next(ctx context.Context, f *device.Frame) error
}

// Tracker turns a frame into faces: track.Tracker.
type Tracker interface {
	// ProcessAt runs on a frame captured at a time (the angles' filter
	// moves each face by the time since the last frame).
	ProcessAt(img *image.Gray, at time.Time) []track.Face
	Timing() track.Timing
}

// Publisher takes what the loop reports: publish.Publisher. Its methods
// must not block.
type Publisher interface {
	// Pose takes a frame's faces and the index of the primary one (-1:
	// none); it reads m during the call only.
	Pose(m *message.Pose, primary int)
	Retain(topic string, v any)
	Stats(message.Stats)
	NoFaces()
	Event(message.Event)
	// CommandError answers a command on the error topic after the
	// command's own reply (a set/zero measurement that set nothing).
	CommandError(command string, err error)
}

// Loop is one run of the frame loop. Set its fields, then call Run once.
type Loop struct {
	Source    Source
	Tracker   Tracker
	Publisher Publisher
	Metrics   *metrics.Metrics // metrics.New(metrics.Sources{}) if nil
	Log       *slog.Logger
	// State is the retained state message: Run fills in the number of
	// faces, publishes it as running at the start and as stopped (with
	// no faces and the camera offline) at the end.
	State      message.State
	StatsEvery time.Duration // how often statistics are published
	// Watchdog, if not 0, is systemd's watchdog interval: Notify("WATCHDOG=1")
	// is sent every half of it while frames flow or the camera is being
	// re-opened. Notify also gets "READY=1" once the loop runs.
	Watchdog time.Duration
	Notify   func(state string)
	// Control, if not nil, can switch detection off: frames are then
	// read and dropped unprocessed, and the state says "paused".
	Control *control.Commands
	// Stages do their part of each processed frame, in order (cmd/posed
	// builds the list: zones, neutral, attention, the live view); those
	// that are frame.Idlers also hear when frames stop coming. A stage
	// switched off is not in the list. Without a zones stage the primary
	// face is the largest.
	Stages []frame.Stage
	// Neutral, if not nil, is the neutral pose the state message reports
	// (its stage is in Stages).
	Neutral *neutral.Pose
	// Lossless makes capture wait for the processing of the frame before
	// it instead of replacing it, so that every frame is processed: for a
	// replay that no clock paces (assemble.Lossless). A camera's
	// frames come whether posed is ready or not: the newest one wins.
	Lossless bool
	// FrameTime, if set, is the time between two frames of such a replay:
	// the tracker's filter is told frame n was taken at n·FrameTime, not
	// when posed got to it (as fast as it processes them, a replay's
	// frames would be milliseconds apart, and a head seem to turn
	// thousands of degrees a second). 0: the frames' capture times.
	FrameTime time.Duration

	// The last processed frame's number and size, for the message that
	// says the faces went when detection is switched off.
	lastSeq      uint64
	lastW, lastH int
	// The learning's state, double-buffered (learningState).
	learnBuf  [2]message.Learn
	learnFlip bool
	// live: frames reached the stages since they were last idle.
	live bool
	// The frame the stages share, the pose message and the faces'
	// storage, reused frame after frame.
	fr    frame.Frame
	msg   message.Pose
	faces []message.Face // the frame's
	pub   []message.Face // the pose message's: the frame's, rounded

	mu      sync.Mutex
	pending *device.Frame
	free    []*device.Frame
	ready   chan struct{} // a frame is pending (capacity 1)
	camMu   sync.Mutex
	cams    []device.Status // camera status changes not yet published
	camSeen chan struct{}   // cams is not empty (capacity 1)
	taken   chan struct{}   // the pending frame was taken (capacity 1; Lossless)
	ended   chan error      // capture's reason to stop
	badSeen map[string]bool // bad-frame errors already logged (capture only)
}

// maxBadLogged bounds the distinct bad-frame errors remembered, so that a
// camera sending endless different corrupt frames cannot grow the set.
const maxBadLogged = 256

// Run processes frames until ctx ends (it then returns ctx's error), the
// source ends (a replay that does not loop: nil) or fails for good.
func (l *Loop) Run(ctx context.Context) error {
	if l.Metrics == nil {
		l.Metrics = metrics.New(metrics.Sources{})
	}
	if l.Log == nil {
		l.Log = slog.Default()
	}
	if l.StatsEvery <= 0 {
		l.StatsEvery = 30 * time.Second
	}
	notify := l.Notify
	if notify == nil {
		notify = func(string) {}
	}
	l.State.Schema, l.State.Status, l.State.Faces = message.SchemaVersion, l.status(), 0
	l.State.Zero, l.State.Learning = l.Neutral.State(), l.learningState()
	l.Publisher.Retain(message.TopicState, l.State)
	l.idle(frame.Starting)
	defer l.stopped()

	l.free = []*device.Frame{{}, {}, {}}
	l.ready = make(chan struct{}, 1)
	l.camMu.Lock()
	if l.camSeen == nil {
		l.camSeen = make(chan struct{}, 1)
	}
	l.camMu.Unlock()
	l.taken = make(chan struct{}, 1)
	l.ended = make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.ended <- l.capture(cctx)
	}()
	defer wg.Wait()
	notify("READY=1")

	statsEvery := time.NewTicker(l.StatsEvery)
	defer statsEvery.Stop()
	var dog <-chan time.Time
	if l.Watchdog > 0 {
		t := time.NewTicker(l.Watchdog / 2)
		defer t.Stop()
		dog = t.C
	}
	var lastDog int64
	st := statsMark{at: time.Now()}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-l.ended:
			// Process what is left (dropped unseen while the privacy
			// switch is off, as any frame), then stop.
			l.next()
			if errors.Is(err, device.ErrEnd) {
				l.Log.Info("replay finished")
				return nil
			}
			return err
		case <-l.ready:
			l.next()
		case <-l.camSeen:
			l.publishCamera()
		case <-l.Control.Changed():
			l.controlChanged()
		case <-l.Neutral.Changed():
			l.controlChanged()
		case err := <-l.Neutral.Failed():
			l.Publisher.CommandError(message.CommandZero, err)
		case <-dog:
			lastDog = l.pingWatchdog(notify, lastDog)
		case now := <-statsEvery.C:
			st = l.stats(now, st)
		}
	}
}

// pingWatchdog tells systemd that the process is alive and its loops turn:
// frames are flowing (processed, or skipped while paused) since the last
// ping (lastFrame then), or the camera is offline and being re-opened with
// backoff (camera health is the camera topic, the metrics and /healthz).
// A camera said to be online whose frames stop, or a processing loop that
// hangs, lets systemd restart the service. It returns the frame time to
// compare the next ping with.
func (l *Loop) pingWatchdog(notify func(string), lastFrame int64) int64 {
	met := l.Metrics
	if last := met.LastFrame.Load(); last != lastFrame || !met.CameraOnline.Load() {
		notify("WATCHDOG=1")
		return last
	}
	return lastFrame
}

// stopped publishes, as the loop ends, what must stay retained after posed
// stops and agree with "available: offline": no faces seen, the camera not
// in use.
func (l *Loop) stopped() {
	l.State.Status, l.State.Faces = "stopped", 0
	l.idle(frame.Stopped)
	l.Publisher.NoFaces()
	l.Publisher.Retain(message.TopicState, l.State)
	l.Publisher.Retain(message.TopicCamera, message.Camera{Schema: message.SchemaVersion, Device: l.State.Device,
		Camera: l.State.Camera, Status: "offline", Error: "posed stopped", Changed: time.Now()})
}

// next processes the pending frame, or, while the privacy switch is off,
// drops it unseen: it came, so the watchdog and /healthz still hear the
// loop turn.
func (l *Loop) next() {
	f := l.take()
	met := l.Metrics
	switch {
	case f == nil:
	case l.Control.Detecting():
		met.Paused.Store(false)
		l.process(f)
	default:
		met.Paused.Store(true)
		met.LastFrame.Store(time.Now().UnixNano())
		l.release(f)
		l.pause()
	}
}

// controlChanged follows a command: the switch turned off says the faces
// went; a changed status or neutral pose is published in the state.
func (l *Loop) controlChanged() {
	if !l.Control.Detecting() {
		l.pause()
	}
	s, z, lm := l.status(), l.Neutral.State(), l.learningState()
	if s != l.State.Status || z != l.State.Zero || lm != l.State.Learning {
		l.State.Status, l.State.Zero, l.State.Learning = s, z, lm
		l.Publisher.Retain(message.TopicState, l.State)
	}
}

// learningState is the learning of the neutral pose for the state: one of
// two loop-owned values (so that a change shows as another pointer), nil
// when there is none.
func (l *Loop) learningState() *message.Learn {
	m := l.Neutral.Learning()
	if m == nil {
		return nil
	}
	if cur := l.State.Learning; cur != nil && *cur == *m {
		return cur
	}
	l.learnFlip = !l.learnFlip
	dst := &l.learnBuf[0]
	if l.learnFlip {
		dst = &l.learnBuf[1]
	}
	*dst = *m
	return dst
}

// statsMark is when the last statistics went out, and the frames
// processed then.
type statsMark struct {
	at        time.Time
	processed uint64
}

// stats publishes the statistics at now, the rate over the time since
// last; it returns the mark for the next.
func (l *Loop) stats(now time.Time, last statsMark) statsMark {
	met := l.Metrics
	p := met.FramesProcessed.Load()
	l.Publisher.Stats(message.Stats{
		UptimeS: round3(now.Sub(met.Started).Seconds()), FramesIn: met.FramesIn.Load(), FramesProcessed: p,
		FramesDropped: met.FramesDropped.Load(), FramesBad: met.FramesBad.Load(),
		FPS: round3(float64(p-last.processed) / now.Sub(last.at).Seconds()), Faces: met.Faces.Load(),
		LatencyP50Ms: round3(1000 * met.Stages[metrics.StageLatency].Median()),
	})
	return statsMark{at: now, processed: p}
}

// dropBad counts a frame the source could not deliver (undecodable or of
// the wrong size) and logs it the first time its error is seen: a replay
// that loops over one bad file says so once, not once per loop.
func (l *Loop) dropBad(err error) {
	l.Metrics.FramesBad.Add(1)
	msg := err.Error()
	if l.badSeen[msg] || len(l.badSeen) > maxBadLogged {
		return
	}
	if l.badSeen == nil {
		l.badSeen = map[string]bool{}
	}
	l.badSeen[msg] = true
	if len(l.badSeen) > maxBadLogged {
		l.Log.Warn("frame dropped; further bad frames are only counted (frames_bad)", "err", err, "bad_frames", l.Metrics.FramesBad.Load())
		return
	}
	l.Log.Warn("frame dropped", "err", err, "bad_frames", l.Metrics.FramesBad.Load())
}

// capture reads frames until the context ends or the source gives up.
func (l *Loop) capture(ctx context.Context) error {
	for {
		l.mu.Lock()
		f := l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		l.mu.Unlock()
		err := l.Source.Next(ctx, f)
		if err != nil {
			l.release(f)
			if errors.Is(err, device.ErrFrameSize) || errors.Is(err, device.ErrBadFrame) {
				l.dropBad(err)
				continue
			}
			return err
		}
		l.Metrics.FramesIn.Add(1)
		l.mu.Lock()
		for l.Lossless && l.pending != nil {
			l.mu.Unlock()
			select {
			case <-l.taken:
			case <-ctx.Done():
				l.release(f)
				return ctx.Err()
			}
			l.mu.Lock()
		}
		if l.pending != nil {
			l.free = append(l.free, l.pending)
			l.Metrics.FramesDropped.Add(1)
		}
		l.pending = f
		l.mu.Unlock()
		select {
		case l.ready <- struct{}{}:
		default:
		}
	}
}

// CameraStatus takes a change of the camera's status from the source
// (device.Reopening.OnStatus, in the capture goroutine): the metrics and
// /healthz hear it at once, the frame loop publishes it.
func (l *Loop) CameraStatus(st device.Status) {
	met := l.Metrics
	met.CameraOnline.Store(st.Online)
	if st.Online {
		met.CameraErr.Store("")
	} else {
		met.CameraErr.Store(fmt.Sprintf("%v (retry in %v)", st.Err, st.Retry.Round(time.Millisecond)))
	}
	l.camMu.Lock()
	if len(l.cams) < maxCamPending {
		l.cams = append(l.cams, st)
	} else {
		l.cams[len(l.cams)-1] = st // the latest is what counts
	}
	if l.camSeen == nil {
		l.camSeen = make(chan struct{}, 1)
	}
	seen := l.camSeen
	l.camMu.Unlock()
	select {
	case seen <- struct{}{}:
	default:
	}
}

// maxCamPending bounds the camera changes waiting for the frame loop.
const maxCamPending = 16

// publishCamera publishes the camera's status changes (retained): offline
// with the reason and the retry, which also tells Home Assistant that no
// face is seen, or online.
func (l *Loop) publishCamera() {
	l.camMu.Lock()
	cams := l.cams
	l.cams = nil
	l.camMu.Unlock()
	for _, st := range cams {
		msg := message.Camera{Schema: message.SchemaVersion, Device: l.State.Device, Camera: l.State.Camera, Status: "online", Changed: time.Now()}
		if !st.Online {
			msg.Status, msg.Error, msg.RetryS = "offline", st.Err.Error(), st.Retry.Seconds()
			l.Log.Warn("camera offline", "camera", l.State.Camera, "err", st.Err, "retry", st.Retry)
			l.Publisher.NoFaces()
			l.idle(frame.Offline)
		} else {
			l.Log.Info("camera online", "camera", l.State.Camera)
		}
		l.Publisher.Retain(message.TopicCamera, msg)
	}
}

// status is the state's status while running: paused while detection is
// switched off.
func (l *Loop) status() string {
	if l.Control.Detecting() {
		return "running"
	}
	return "paused"
}

// pause says, once, that no face is seen any more as detection is off:
// a pose message without faces (which also tells Home Assistant) and the
// state.
func (l *Loop) pause() {
	if l.live {
		l.idle(frame.Paused)
	}
	if l.State.Faces == 0 {
		return
	}
	l.msg = message.Pose{Camera: l.State.Camera, Seq: l.lastSeq, Captured: time.Now(), Width: l.lastW, Height: l.lastH, Faces: l.pub[:0]}
	l.Publisher.Pose(&l.msg, -1)
	l.State.Faces = 0
	l.Publisher.Retain(message.TopicState, l.State)
}

// release returns a frame to the free list.
func (l *Loop) release(f *device.Frame) {
	l.mu.Lock()
	l.free = append(l.free, f)
	l.mu.Unlock()
}

func (l *Loop) take() *device.Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.pending
	l.pending = nil
	select {
	case l.taken <- struct{}{}:
	default:
	}
	return f
}

// process runs the tracker on f and publishes: a pose message when it
// has faces or the last frame had (l.State.Faces), the state when the
// number of faces changes.
func (l *Loop) process(f *device.Frame) {
	defer l.release(f)
	met := l.Metrics
	t0 := time.Now()
	at := f.Time
	if l.FrameTime > 0 {
		at = time.Unix(0, 0).Add(time.Duration(f.Seq) * l.FrameTime)
	}
	faces := l.Tracker.ProcessAt(f.Gray, at)
	tm := l.Tracker.Timing()
	if tm.Detected {
		met.Stages[metrics.StageDetect].Observe(tm.Detect)
	}
	met.Stages[metrics.StagePose].Observe(tm.Pose)
	met.Stages[metrics.StageFrame].Observe(time.Since(t0))
	met.FramesProcessed.Add(1)
	met.Faces.Add(uint64(len(faces)))
	met.Refused.Add(uint64(tm.Refused))
	met.Unconfirmed.Add(uint64(tm.Unconfirmed))
	met.LastFrame.Store(time.Now().UnixNano())
	l.lastSeq, l.lastW, l.lastH = f.Seq, f.Gray.Rect.Dx(), f.Gray.Rect.Dy()
	// The faces, made once at full precision and completed by the
	// stages; the live view draws them; the pose message carries a copy
	// rounded as published.
	fr := &l.fr
	*fr = frame.Frame{Seq: f.Seq, Time: f.Time, Image: f.Gray, Faces: l.faceMsgs(faces), Primary: -1, Neutral: "none"}
	if len(faces) > 0 {
		fr.Primary = 0 // the largest
	}
	for _, s := range l.Stages {
		s.Frame(fr)
	}
	l.live = true
	l.report(fr)
	l.msg = message.Pose{Camera: l.State.Camera, Seq: f.Seq, Captured: f.Time, Width: f.Gray.Rect.Dx(), Height: f.Gray.Rect.Dy(),
		Faces: l.rounded(fr.Faces)}
	if len(faces) > 0 || l.State.Faces > 0 {
		l.Publisher.Pose(&l.msg, fr.Primary)
		met.Stages[metrics.StageLatency].Observe(time.Since(f.Time))
	}
	if len(faces) != l.State.Faces {
		l.State.Faces = len(faces)
		l.Publisher.Retain(message.TopicState, l.State)
	}
}

// report publishes what the stages made of a frame beside its faces: the
// attention events, and the attention summary if it changed (retained).
func (l *Loop) report(fr *frame.Frame) {
	for _, e := range fr.Events {
		l.Publisher.Event(e)
	}
	if m := fr.Attention; m != nil {
		m.Schema, m.Device = message.SchemaVersion, l.State.Device
		if m.Time.IsZero() {
			m.Time = time.Now() // before the first frame
		}
		l.Publisher.Retain(message.TopicAttention, *m)
	}
}

// idle tells the stages that keep state across frames that none comes
// (why: starting, paused, camera offline, stopped): what was in progress
// ends, and what they say of it is published.
func (l *Loop) idle(why string) {
	fr := &l.fr
	*fr = frame.Frame{Time: time.Now(), Primary: -1, Neutral: "none"}
	for _, s := range l.Stages {
		if i, ok := s.(frame.Idler); ok {
			i.Idle(fr, why)
		}
	}
	l.live = false
	l.report(fr)
}

// faceMsgs fills the frame's reused faces from the tracker's (Message);
// the stages add the rest. Nothing is allocated once the buffer has grown
// to the most faces seen.
func (l *Loop) faceMsgs(faces []track.Face) []message.Face {
	if cap(l.faces) < len(faces) {
		l.faces = make([]message.Face, len(faces))
	}
	out := l.faces[:len(faces)]
	for i, f := range faces {
		out[i] = f.Message()
	}
	return out
}

// rounded copies the frame's faces into the pose message's reused buffer,
// rounded as published (message.Face.Round).
func (l *Loop) rounded(faces []message.Face) []message.Face {
	l.pub = append(l.pub[:0], faces...)
	for i := range l.pub {
		l.pub[i].Round()
	}
	return l.pub
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
