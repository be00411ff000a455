// Package pipeline is posed's frame loop: a capture goroutine reads
// frames from a Source into a one-frame slot (the newest frame wins; one
// not taken in time is dropped and counted), the processing goroutine runs
// the Tracker on it and hands poses, state and statistics to a Publisher,
// and Metrics count it all for /metrics and /healthz. cmd/posed wires the
// real parts (a camera or replay, pigo and the GLLiM model, MQTT); the
// interfaces are the loop's own, so its tests use small fakes.
package pipeline

import (
	"context"
	"errors"
	"image"
	"log/slog"
	"sync"
	"time"

	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/publish"
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
	Process(img *image.Gray) []track.Face
	Timing() track.Timing
}

// Publisher takes what the loop reports: publish.Publisher. Its methods
// must not block.
type Publisher interface {
	Pose(publish.PoseMsg)
	Retain(topic string, v any)
	Stats(publish.StatsMsg)
	NoFaces()
}

// Loop is one run of the frame loop. Set its fields, then call Run once.
type Loop struct {
	Source    Source
	Tracker   Tracker
	Publisher Publisher
	Metrics   *Metrics // NewMetrics() if nil
	Log       *slog.Logger
	// State is the retained state message: Run fills in the number of
	// faces, publishes it as running at the start and as stopped (with
	// no faces and the camera offline) at the end.
	State      publish.StateMsg
	StatsEvery time.Duration // how often statistics are published
	// Watchdog, if not 0, is systemd's watchdog interval: Notify("WATCHDOG=1")
	// is sent every half of it while frames flow or the camera is being
	// re-opened. Notify also gets "READY=1" once the loop runs.
	Watchdog time.Duration
	Notify   func(state string)
	// View, if not nil, is offered every processed frame (live view and
	// snapshots; it costs nothing while nobody watches).
	View *View
	// Control, if not nil, can switch detection off: frames are then
	// read and dropped unprocessed, and the state says "paused". Its
	// neutral pose, if set, makes the published angles relative to it.
	Control *Control
	// Zoning, if not nil, names the zones of each face and chooses the
	// primary face (else the largest).
	Zoning *Zoning
	// Lossless makes capture wait for the processing of the frame before
	// it instead of replacing it, so that every frame is processed: for a
	// replay that no clock paces (Lossless(config.Source)). A camera's
	// frames come whether posed is ready or not: the newest one wins.
	Lossless bool

	// The last processed frame's number and size, for the message that
	// says the faces went when detection is switched off.
	lastSeq      uint64
	lastW, lastH int

	mu      sync.Mutex
	pending *device.Frame
	free    []*device.Frame
	ready   chan struct{}   // a frame is pending (capacity 1)
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
		l.Metrics = NewMetrics()
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
	l.State.Schema, l.State.Status, l.State.Faces = publish.SchemaVersion, l.status(), 0
	l.State.Zero = l.Control.ZeroState()
	l.Publisher.Retain(publish.TopicState, l.State)
	defer func() {
		// What stays retained after posed stops must agree with
		// "available: offline": no faces seen, the camera not in use.
		l.State.Status, l.State.Faces = "stopped", 0
		l.Publisher.NoFaces()
		l.Publisher.Retain(publish.TopicState, l.State)
		l.Publisher.Retain(publish.TopicCamera, publish.CameraMsg{Schema: publish.SchemaVersion, Device: l.State.Device,
			Camera: l.State.Camera, Status: "offline", Error: "posed stopped", Changed: time.Now()})
	}()

	l.free = []*device.Frame{{}, {}, {}}
	l.ready = make(chan struct{}, 1)
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
	met := l.Metrics
	var lastDog int64
	lastStats := time.Now()
	var lastProcessed uint64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-l.ended:
			// Process what is left, then stop.
			if f := l.take(); f != nil {
				l.process(f)
			}
			if errors.Is(err, device.ErrEnd) {
				l.Log.Info("replay finished")
				return nil
			}
			return err
		case <-l.ready:
			f := l.take()
			switch {
			case f == nil:
			case l.Control.Detecting():
				met.Paused.Store(false)
				l.process(f)
			default:
				// Paused: the frame is dropped unseen, but it came, so the
				// watchdog and /healthz still hear the loop turn.
				met.Paused.Store(true)
				met.LastFrame.Store(time.Now().UnixNano())
				l.release(f)
				l.pause()
			}
		case <-l.Control.Changed():
			if !l.Control.Detecting() {
				l.pause()
			}
			if s, z := l.status(), l.Control.ZeroState(); s != l.State.Status || z != l.State.Zero {
				l.State.Status, l.State.Zero = s, z
				l.Publisher.Retain(publish.TopicState, l.State)
			}
		case <-dog:
			// The watchdog says the process is alive and its loops turn:
			// frames are flowing (processed, or skipped while paused), or
			// the camera is offline and being
			// re-opened with backoff (camera health is the camera topic,
			// the metrics and /healthz). A camera said to be online whose
			// frames stop, or a processing loop that hangs, lets systemd
			// restart the service.
			if last := met.LastFrame.Load(); last != lastDog || !met.CameraOnline.Load() {
				lastDog = last
				notify("WATCHDOG=1")
			}
		case now := <-statsEvery.C:
			p := met.FramesProcessed.Load()
			l.Publisher.Stats(publish.StatsMsg{
				UptimeS: round3(now.Sub(met.Started).Seconds()), FramesIn: met.FramesIn.Load(), FramesProcessed: p,
				FramesDropped: met.FramesDropped.Load(), FramesBad: met.FramesBad.Load(),
				FPS: round3(float64(p-lastProcessed) / now.Sub(lastStats).Seconds()), Faces: met.Faces.Load(),
				LatencyP50Ms: round3(1000 * met.Stages[StageLatency].Median()),
			})
			lastStats, lastProcessed = now, p
		}
	}
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
	if l.State.Faces == 0 {
		return
	}
	l.Publisher.Pose(publish.PoseMsg{Camera: l.State.Camera, Seq: l.lastSeq, Captured: time.Now(), Width: l.lastW, Height: l.lastH, Faces: []publish.FaceMsg{}})
	l.State.Faces = 0
	l.Publisher.Retain(publish.TopicState, l.State)
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
	faces := l.Tracker.Process(f.Gray)
	tm := l.Tracker.Timing()
	if tm.Detected {
		met.Stages[StageDetect].Observe(tm.Detect)
	}
	met.Stages[StagePose].Observe(tm.Pose)
	met.Stages[StageFrame].Observe(time.Since(t0))
	met.FramesProcessed.Add(1)
	met.Faces.Add(uint64(len(faces)))
	met.LastFrame.Store(time.Now().UnixNano())
	l.lastSeq, l.lastW, l.lastH = f.Seq, f.Gray.Rect.Dx(), f.Gray.Rect.Dy()
	l.View.Offer(f.Gray, faces)
	prim := l.Zoning.Primary(faces)
	if prim >= 0 {
		l.Control.Sample(faces[prim])
	}
	if len(faces) > 0 || l.State.Faces > 0 {
		msg := publish.PoseMsg{Camera: l.State.Camera, Seq: f.Seq, Captured: f.Time, Width: f.Gray.Rect.Dx(), Height: f.Gray.Rect.Dy(),
			Faces: make([]publish.FaceMsg, 0, len(faces)), Primary: prim}
		neutral := l.Control.Neutral()
		for _, fc := range faces {
			fm := faceMsg(fc)
			cx, cy := fc.Box.Centre()
			fm.Zones = l.Zoning.In(cx, cy)
			if head, ok := headOf(fc); ok && neutral != nil {
				// Relative to the neutral pose, composed as rotations
				// (infer/rotation.Relative); the camera's angles beside.
				fm.RawYaw, fm.RawPitch, fm.RawRoll = fm.Yaw, fm.Pitch, fm.Roll
				y, p, r := rotation.Relative(*neutral, head)
				fm.Yaw, fm.Pitch = ptr2(y), ptr2(p)
				if fc.Has[2] {
					fm.Roll = ptr2(r)
				}
			}
			msg.Faces = append(msg.Faces, fm)
		}
		l.Publisher.Pose(msg)
		met.Stages[StageLatency].Observe(time.Since(f.Time))
	}
	if len(faces) != l.State.Faces {
		l.State.Faces = len(faces)
		l.Publisher.Retain(publish.TopicState, l.State)
	}
}

func faceMsg(f track.Face) publish.FaceMsg {
	b := f.Box
	m := publish.FaceMsg{Track: f.ID, Box: [4]float64{r2(b.X), r2(b.Y), r2(b.X + b.W), r2(b.Y + b.H)}, Score: r2(f.Score), View: f.View.String()}
	if f.Has[0] {
		m.Yaw, m.YawStd = ptr2(f.Angles[0]), ptr2(f.Std[0])
	}
	if f.Has[1] {
		m.Pitch, m.PitchStd = ptr2(f.Angles[1]), ptr2(f.Std[1])
	}
	if f.Has[2] {
		m.Roll, m.RollStd = ptr2(f.Angles[2]), ptr2(f.Std[2])
	}
	return m
}

// ptr2 is a pointer to v rounded to two decimals.
func ptr2(v float64) *float64 { v = r2(v); return &v }

// r2 rounds to two decimals, half away from zero.
func r2(v float64) float64 { return float64(int64(v*100+0.5*sign(v))) / 100 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
