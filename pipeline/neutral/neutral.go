// Package neutral holds the neutral pose posed reports angles against: the
// pose a person holds when looking "straight ahead" for them (a driver at
// the road, a camera mounted off axis). It is set in the configuration, or
// measured on command (set/zero) from the primary face and kept in the
// state directory; a face's angles are then composed with it as rotations.
package neutral

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
)

// ErrDetectOff is what a measurement asked for while detection is off
// returns (the control's privacy switch).
var ErrDetectOff = errors.New("detection is off (privacy switch)")

// zeroFile is the file, in the state directory, holding a measured
// neutral pose (message.Zero as JSON).
const zeroFile = "zero.json"

// minZeroFrames is how many frames of the primary face a measured zero
// needs.
const minZeroFrames = 3

// neutralPose is a neutral pose as the state reports it and as the
// rotation the frame loop composes with.
type neutralPose struct {
	msg *message.Zero
	r   rotation.Matrix
}

// Pose is the neutral pose and its measurement. The frame loop reads
// the pose and the measuring flag without a lock.
type Pose struct {
	StateDir string
	Log      *slog.Logger
	// Clock times a measurement (set/zero's seconds) and dates its result;
	// nil: the wall clock.
	Clock clock.Clock

	changes   chan struct{}               // Changed
	failures  chan error                  // Failed
	pose      atomic.Pointer[neutralPose] // nil: none
	cfg       Options
	measuring atomic.Bool
	gen       atomic.Uint64     // bumped by each start, clear and stop: a measurement ends only if still the latest
	stopTimer func() bool       // cancels the measurement's end (guarded by mu)
	mu        sync.Mutex        // guards samples and stopTimer
	samples   []rotation.Matrix // while measuring: the primary face's poses so far
	learn     learner           // zero.learn (the frame loop's)
	relearn   atomic.Bool       // set/zero clear: learning drops its poses at the next frame
}

// Head is the rotation of a face's pose, if its yaw and pitch are known
// (a model without roll counts it as 0).
func Head(f *message.Face) (rotation.Matrix, bool) {
	if !f.Yaw.Set || !f.Pitch.Set {
		return rotation.Matrix{}, false
	}
	return rotation.Head(f.Yaw.V, f.Pitch.V, f.Roll.V), true
}

// Options are the neutral pose's: one set by hand (angles in degrees; all
// 0: none), how long set/zero averages the primary face, and whether the
// pose is learnt while none is set, forgotten after Forget without a
// primary face. pipeline/assemble makes them from the zero block.
type Options struct {
	Yaw, Pitch, Roll float64
	Seconds          float64
	Learn            bool
	Forget           time.Duration
}

// New returns the neutral pose a measured one in stateDir, else cfg's
// (none if all its angles are 0).
func New(stateDir string, cfg Options, log *slog.Logger) *Pose {
	n := &Pose{StateDir: stateDir, Log: log, changes: make(chan struct{}, 1), failures: make(chan error, 1)}
	n.learn.on, n.learn.forget = cfg.Learn, cfg.Forget
	n.learn.status, n.learn.lastPublish = Calibrating, message.Learn{Status: Calibrating}
	n.load(cfg)
	if p := n.pose.Load(); p != nil && p.msg.Source == "learnt" {
		n.learn.learnt, n.learn.status, n.learn.lastPublish = true, Learnt, message.Learn{Status: Learnt, Progress: 1}
	}
	return n
}

// load sets the neutral pose: a measured one from the state directory,
// else the configuration's (none if all its angles are 0).
func (c *Pose) load(cfg Options) {
	c.cfg = cfg
	if c.StateDir != "" {
		f := filepath.Join(c.StateDir, zeroFile)
		b, err := regular.ReadFile(f)
		switch {
		case err == nil:
			var m message.Zero
			if err := json.Unmarshal(b, &m); err != nil || (m.Source != "measured" && m.Source != "learnt") || m.Source == "learnt" && !cfg.Learn || !(m.Yaw >= -180 && m.Yaw <= 180 && m.Pitch >= -180 && m.Pitch <= 180 && m.Roll >= -180 && m.Roll <= 180) {
				c.Log.Warn("ignoring a damaged neutral pose", "file", f, "err", err)
			} else {
				c.set(&m)
				return
			}
		case !errors.Is(err, os.ErrNotExist):
			// Unreadable or too large: said, not silently ignored.
			c.Log.Warn("cannot read the measured neutral pose: using the configuration's", "file", f, "err", err)
		}
	}
	if cfg.Yaw != 0 || cfg.Pitch != 0 || cfg.Roll != 0 {
		c.set(&message.Zero{Yaw: cfg.Yaw, Pitch: cfg.Pitch, Roll: cfg.Roll, Source: "config"})
	} else {
		c.set(nil)
	}
}

func (c *Pose) set(m *message.Zero) {
	if m == nil {
		c.pose.Store(nil)
		return
	}
	c.pose.Store(&neutralPose{msg: m, r: rotation.Head(m.Yaw, m.Pitch, m.Roll)})
}

// Rotation returns the neutral pose as a rotation, nil if none is set.
func (c *Pose) Rotation() *rotation.Matrix {
	if c == nil {
		return nil
	}
	if p := c.pose.Load(); p != nil {
		return &p.r
	}
	return nil
}

// State is the neutral pose for the state message (nil: none).
func (c *Pose) State() *message.Zero {
	if c == nil {
		return nil
	}
	if p := c.pose.Load(); p != nil {
		return p.msg
	}
	return nil
}

// Sample gives a measurement under way the primary face of a processed
// frame.
func (c *Pose) Sample(f *message.Face) {
	if c == nil || !c.measuring.Load() {
		return
	}
	r, ok := Head(f)
	if !ok {
		return
	}
	c.mu.Lock()
	if len(c.samples) < 10000 {
		c.samples = append(c.samples, r)
	}
	c.mu.Unlock()
}

// Command carries out set/zero: it starts measuring the neutral pose
// over the payload's seconds (zero.seconds if none), or clears it
// ("clear"). A measurement needs detection on.
func (c *Pose) Command(payload []byte, detecting bool) error {
	arg := strings.TrimSpace(string(payload))
	secs := c.cfg.Seconds
	switch {
	case strings.EqualFold(arg, "clear"):
		// A measurement under way is cancelled: it would set what was
		// just cleared when it ends.
		if c.cancel() {
			c.Log.Info("neutral pose measurement cancelled by clear")
		}
		if c.StateDir != "" {
			if err := os.Remove(filepath.Join(c.StateDir, zeroFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("forgetting the neutral pose: %w", err)
			}
		}
		c.load(c.cfg)
		// Learning starts afresh: from the old samples it would learn the
		// pose just cleared again (the frame loop drops them: Observe).
		c.relearn.Store(true)
		c.Log.Info("neutral pose cleared", "now", c.State())
		c.changed()
		return nil
	case arg == "" || strings.EqualFold(arg, "PRESS"):
	default:
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v > 0 && v <= 60) {
			return fmt.Errorf("payload %q: want nothing, PRESS, clear, or seconds (0 < s ≤ 60)", arg)
		}
		secs = v
	}
	if !detecting {
		return ErrDetectOff
	}
	if !c.measuring.CompareAndSwap(false, true) {
		return errors.New("a neutral pose is being measured already")
	}
	gen := c.gen.Add(1)
	c.mu.Lock()
	c.samples = c.samples[:0]
	c.stopTimer = clock.Or(c.Clock).AfterFunc(time.Duration(secs*float64(time.Second)), func() { c.finish(gen) })
	c.mu.Unlock()
	c.Log.Info("measuring the neutral pose", "seconds", secs)
	return nil
}

// cancelZero stops a measurement under way (it sets nothing) and reports
// whether there was one.
func (c *Pose) cancel() bool {
	c.gen.Add(1)
	c.mu.Lock()
	if c.stopTimer != nil {
		c.stopTimer()
		c.stopTimer = nil
	}
	c.mu.Unlock()
	return c.measuring.Swap(false)
}

// Stop ends the measurement with its pipeline (a reload, a shutdown): a
// neutral pose being measured is dropped, not set later behind the next
// pipeline's back.
func (c *Pose) Stop() {
	if c != nil && c.cancel() {
		c.Log.Warn("neutral pose measurement interrupted (posed is restarting or stopping): send set/zero again")
	}
}

// finishZero ends a measurement: the mean pose of the samples becomes the
// neutral pose, kept in the state directory; too few samples is an error
// on the error topic, and the neutral pose stays as it was.
func (c *Pose) finish(gen uint64) {
	// Held to the end: a clear or stop waits for it, then undoes it.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen { // cleared or stopped meanwhile
		return
	}
	c.measuring.Store(false)
	c.stopTimer = nil
	samples := append([]rotation.Matrix(nil), c.samples...)
	if len(samples) < minZeroFrames {
		c.fail(fmt.Errorf("the primary face was seen in %d frames while measuring, fewer than %d: neutral pose unchanged", len(samples), minZeroFrames))
		return
	}
	y, p, r := rotation.Mean(samples).Angles()
	m := &message.Zero{Yaw: message.Hundredths(y), Pitch: message.Hundredths(p), Roll: message.Hundredths(r), Source: "measured", Frames: len(samples), Set: clock.Or(c.Clock).Now().UTC()}
	if c.StateDir != "" {
		b, _ := json.Marshal(m)
		if err := regular.WriteFile(filepath.Join(c.StateDir, zeroFile), b); err != nil {
			c.Log.Warn("the neutral pose is set but will not outlive a restart", "err", err)
		}
	}
	c.set(m)
	c.Log.Info("neutral pose set", "yaw", m.Yaw, "pitch", m.Pitch, "roll", m.Roll, "frames", m.Frames)
	c.changed()
}

// fail reports a measurement that set nothing: logged, and on Failed for
// the error topic (the frame loop's).
func (c *Pose) fail(err error) {
	c.Log.Warn("neutral pose not measured", "err", err)
	select {
	case c.failures <- err:
	default: // one waits already: the loop has not run since
	}
}

// changed signals Changed.
func (c *Pose) changed() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

// Changed is signalled after the pose changes (measured, cleared, learnt,
// or the learning's status): the frame loop publishes the state. nil for
// a nil Pose (a nil channel is never ready).
func (c *Pose) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.changes
}

// Failed gives a set/zero measurement that ended without setting a pose,
// for the error topic (the frame loop's); nil for a nil Pose.
func (c *Pose) Failed() <-chan error {
	if c == nil {
		return nil
	}
	return c.failures
}

// Relative returns a face's angles relative to the neutral pose n (Rotation),
// composed as rotations (rotation.Relative), if its yaw and pitch are known.
func Relative(n *rotation.Matrix, f *message.Face) (yaw, pitch, roll float64, ok bool) {
	head, ok := Head(f)
	if !ok || n == nil {
		return 0, 0, 0, false
	}
	yaw, pitch, roll = rotation.Relative(*n, head)
	return yaw, pitch, roll, true
}
