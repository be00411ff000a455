package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/publish"
)

// zeroFile is the file, in the state directory, holding a measured
// neutral pose (publish.ZeroMsg as JSON).
const zeroFile = "zero.json"

// minZeroFrames is how many frames of the primary face a measured zero
// needs.
const minZeroFrames = 3

// neutralPose is a neutral pose as the state reports it and as the
// rotation the frame loop composes with.
type neutralPose struct {
	msg *publish.ZeroMsg
	r   rotation.Matrix
}

// zero is the neutral pose and its measurement. The frame loop reads the
// pose and the measuring flag without a lock.
type zero struct {
	pose      atomic.Pointer[neutralPose] // nil: none
	cfg       config.Zero
	measuring atomic.Bool
	gen       atomic.Uint64     // bumped by each start, clear and stop: a measurement ends only if still the latest
	timer     *time.Timer       // the measurement's end (guarded by mu)
	mu        sync.Mutex        // guards samples and timer
	samples   []rotation.Matrix // while measuring: the primary face's poses so far
}

// headOf is the rotation of a face's pose, if its yaw and pitch are known
// (a model without roll counts it as 0).
func headOf(f track.Face) (rotation.Matrix, bool) {
	if !f.Has[0] || !f.Has[1] {
		return rotation.Matrix{}, false
	}
	return rotation.Head(f.Angles[0], f.Angles[1], f.Angles[2]), true
}

// loadZero sets the neutral pose: a measured one from the state
// directory, else the configuration's (none if all its angles are 0).
func (c *Control) loadZero(cfg config.Zero) {
	c.zero.cfg = cfg
	if c.StateDir != "" {
		f := filepath.Join(c.StateDir, zeroFile)
		b, err := config.ReadFileLimited(f)
		switch {
		case err == nil:
			var m publish.ZeroMsg
			if err := json.Unmarshal(b, &m); err != nil || m.Source != "measured" || !(m.Yaw >= -180 && m.Yaw <= 180 && m.Pitch >= -180 && m.Pitch <= 180 && m.Roll >= -180 && m.Roll <= 180) {
				c.Log.Warn("ignoring a damaged neutral pose", "file", f, "err", err)
			} else {
				c.setNeutral(&m)
				return
			}
		case !errors.Is(err, os.ErrNotExist):
			// Unreadable or too large: said, not silently ignored.
			c.Log.Warn("cannot read the measured neutral pose: using the configuration's", "file", f, "err", err)
		}
	}
	if cfg.Yaw != 0 || cfg.Pitch != 0 || cfg.Roll != 0 {
		c.setNeutral(&publish.ZeroMsg{Yaw: cfg.Yaw, Pitch: cfg.Pitch, Roll: cfg.Roll, Source: "config"})
	} else {
		c.setNeutral(nil)
	}
}

func (c *Control) setNeutral(m *publish.ZeroMsg) {
	if m == nil {
		c.zero.pose.Store(nil)
		return
	}
	c.zero.pose.Store(&neutralPose{msg: m, r: rotation.Head(m.Yaw, m.Pitch, m.Roll)})
}

// Neutral returns the neutral pose as a rotation, nil if none is set.
func (c *Control) Neutral() *rotation.Matrix {
	if c == nil {
		return nil
	}
	if p := c.zero.pose.Load(); p != nil {
		return &p.r
	}
	return nil
}

// ZeroState is the neutral pose for the state message (nil: none).
func (c *Control) ZeroState() *publish.ZeroMsg {
	if c == nil {
		return nil
	}
	if p := c.zero.pose.Load(); p != nil {
		return p.msg
	}
	return nil
}

// Sample gives a measurement under way the primary face of a processed
// frame.
func (c *Control) Sample(f track.Face) {
	if c == nil || !c.zero.measuring.Load() {
		return
	}
	r, ok := headOf(f)
	if !ok {
		return
	}
	c.zero.mu.Lock()
	if len(c.zero.samples) < 10000 {
		c.zero.samples = append(c.zero.samples, r)
	}
	c.zero.mu.Unlock()
}

// zeroCommand starts measuring the neutral pose over the payload's
// seconds (zero.seconds if none), or clears it ("clear").
func (c *Control) zeroCommand(payload []byte) error {
	arg := strings.TrimSpace(string(payload))
	secs := c.zero.cfg.Seconds
	switch {
	case strings.EqualFold(arg, "clear"):
		// A measurement under way is cancelled: it would set what was
		// just cleared when it ends.
		if c.cancelZero() {
			c.Log.Info("neutral pose measurement cancelled by clear")
		}
		if c.StateDir != "" {
			if err := os.Remove(filepath.Join(c.StateDir, zeroFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("forgetting the neutral pose: %w", err)
			}
		}
		c.loadZero(c.zero.cfg)
		c.Log.Info("neutral pose cleared", "now", c.ZeroState())
		c.signal()
		return nil
	case arg == "" || strings.EqualFold(arg, "PRESS"):
	default:
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v > 0 && v <= 60) {
			return fmt.Errorf("payload %q: want nothing, PRESS, clear, or seconds (0 < s ≤ 60)", arg)
		}
		secs = v
	}
	if !c.Detecting() {
		return ErrDetectOff
	}
	if !c.zero.measuring.CompareAndSwap(false, true) {
		return errors.New("a neutral pose is being measured already")
	}
	gen := c.zero.gen.Add(1)
	c.zero.mu.Lock()
	c.zero.samples = c.zero.samples[:0]
	c.zero.timer = time.AfterFunc(time.Duration(secs*float64(time.Second)), func() { c.finishZero(gen) })
	c.zero.mu.Unlock()
	c.Log.Info("measuring the neutral pose", "seconds", secs)
	return nil
}

// cancelZero stops a measurement under way (it sets nothing) and reports
// whether there was one.
func (c *Control) cancelZero() bool {
	c.zero.gen.Add(1)
	c.zero.mu.Lock()
	if c.zero.timer != nil {
		c.zero.timer.Stop()
		c.zero.timer = nil
	}
	c.zero.mu.Unlock()
	return c.zero.measuring.Swap(false)
}

// Stop ends the control with its pipeline (a reload, a shutdown): a
// neutral pose being measured is dropped, not set later behind the next
// pipeline's back.
func (c *Control) Stop() {
	if c != nil && c.cancelZero() {
		c.Log.Warn("neutral pose measurement interrupted (posed is restarting or stopping): send set/zero again")
	}
}

// finishZero ends a measurement: the mean pose of the samples becomes the
// neutral pose, kept in the state directory; too few samples is an error
// on the error topic, and the neutral pose stays as it was.
func (c *Control) finishZero(gen uint64) {
	// Held to the end: a clear or stop waits for it, then undoes it.
	c.zero.mu.Lock()
	defer c.zero.mu.Unlock()
	if c.zero.gen.Load() != gen { // cleared or stopped meanwhile
		return
	}
	c.zero.measuring.Store(false)
	c.zero.timer = nil
	samples := append([]rotation.Matrix(nil), c.zero.samples...)
	if len(samples) < minZeroFrames {
		c.fail(publish.CommandZero, fmt.Errorf("the primary face was seen in %d frames while measuring, fewer than %d: neutral pose unchanged", len(samples), minZeroFrames))
		return
	}
	y, p, r := rotation.Mean(samples).Angles()
	m := &publish.ZeroMsg{Yaw: r2(y), Pitch: r2(p), Roll: r2(r), Source: "measured", Frames: len(samples), Set: time.Now().UTC()}
	if c.StateDir != "" {
		b, _ := json.Marshal(m)
		if err := config.WriteStateFile(filepath.Join(c.StateDir, zeroFile), b); err != nil {
			c.Log.Warn("the neutral pose is set but will not outlive a restart", "err", err)
		}
	}
	c.setNeutral(m)
	c.Log.Info("neutral pose set", "yaw", m.Yaw, "pitch", m.Pitch, "roll", m.Roll, "frames", m.Frames)
	c.signal()
}
