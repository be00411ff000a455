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

// zero is the neutral pose and its measurement.
type zero struct {
	mu      sync.Mutex
	neutral *rotation.Matrix
	msg     *publish.ZeroMsg
	cfg     config.Zero
	// While measuring: the samples so far.
	measuring bool
	samples   []rotation.Matrix
}

// loadZero sets the neutral pose: a measured one from the state
// directory, else the configuration's (none if all its angles are 0).
func (c *Control) loadZero(cfg config.Zero) {
	c.zero.cfg = cfg
	if c.StateDir != "" {
		f := filepath.Join(c.StateDir, zeroFile)
		if b, err := config.ReadFileLimited(f); err == nil {
			var m publish.ZeroMsg
			if err := json.Unmarshal(b, &m); err != nil || m.Source != "measured" || !(m.Yaw >= -180 && m.Yaw <= 180 && m.Pitch >= -180 && m.Pitch <= 180 && m.Roll >= -180 && m.Roll <= 180) {
				c.Log.Warn("ignoring a damaged neutral pose", "file", f, "err", err)
			} else {
				c.setNeutral(&m)
				return
			}
		}
	}
	if cfg.Yaw != 0 || cfg.Pitch != 0 || cfg.Roll != 0 {
		c.setNeutral(&publish.ZeroMsg{Yaw: cfg.Yaw, Pitch: cfg.Pitch, Roll: cfg.Roll, Source: "config"})
	} else {
		c.setNeutral(nil)
	}
}

func (c *Control) setNeutral(m *publish.ZeroMsg) {
	c.zero.mu.Lock()
	defer c.zero.mu.Unlock()
	c.zero.msg = m
	if m == nil {
		c.zero.neutral = nil
		return
	}
	r := rotation.Head(m.Yaw, m.Pitch, m.Roll)
	c.zero.neutral = &r
}

// Neutral returns the neutral pose as a rotation, nil if none is set.
func (c *Control) Neutral() *rotation.Matrix {
	if c == nil {
		return nil
	}
	c.zero.mu.Lock()
	defer c.zero.mu.Unlock()
	return c.zero.neutral
}

// ZeroState is the neutral pose for the state message (nil: none).
func (c *Control) ZeroState() *publish.ZeroMsg {
	if c == nil {
		return nil
	}
	c.zero.mu.Lock()
	defer c.zero.mu.Unlock()
	return c.zero.msg
}

// Sample gives the measurement the primary face of a processed frame.
func (c *Control) Sample(f track.Face) {
	if c == nil || !f.Has[0] || !f.Has[1] {
		return
	}
	c.zero.mu.Lock()
	defer c.zero.mu.Unlock()
	if c.zero.measuring && len(c.zero.samples) < 10000 {
		c.zero.samples = append(c.zero.samples, rotation.Head(f.Angles[0], f.Angles[1], f.Angles[2]))
	}
}

// zeroCommand starts measuring the neutral pose over the payload's
// seconds (zero.seconds if none), or clears it ("clear").
func (c *Control) zeroCommand(payload []byte) error {
	arg := strings.TrimSpace(string(payload))
	secs := c.zero.cfg.Seconds
	switch {
	case strings.EqualFold(arg, "clear"):
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
	c.zero.mu.Lock()
	if c.zero.measuring {
		c.zero.mu.Unlock()
		return errors.New("a neutral pose is being measured already")
	}
	c.zero.measuring, c.zero.samples = true, c.zero.samples[:0]
	c.zero.mu.Unlock()
	c.Log.Info("measuring the neutral pose", "seconds", secs)
	time.AfterFunc(time.Duration(secs*float64(time.Second)), c.finishZero)
	return nil
}

// finishZero ends a measurement: the mean pose of the samples becomes the
// neutral pose, kept in the state directory; too few samples is an error
// on the error topic, and the neutral pose stays as it was.
func (c *Control) finishZero() {
	c.zero.mu.Lock()
	samples := append([]rotation.Matrix(nil), c.zero.samples...)
	c.zero.measuring, c.zero.samples = false, c.zero.samples[:0]
	c.zero.mu.Unlock()
	if len(samples) < minZeroFrames {
		c.fail(publish.CommandZero, fmt.Errorf("the primary face was seen in %d frames while measuring, fewer than %d: neutral pose unchanged", len(samples), minZeroFrames))
		return
	}
	y, p, r := rotation.Mean(samples).Angles()
	m := &publish.ZeroMsg{Yaw: round2(y), Pitch: round2(p), Roll: round2(r), Source: "measured", Frames: len(samples), Set: time.Now().UTC()}
	if c.StateDir != "" {
		b, _ := json.Marshal(m)
		f := filepath.Join(c.StateDir, zeroFile)
		err := os.WriteFile(f+".tmp", b, 0o640)
		if err == nil {
			err = os.Rename(f+".tmp", f)
		}
		if err != nil {
			c.Log.Warn("the neutral pose is set but will not outlive a restart", "err", err)
		}
	}
	c.setNeutral(m)
	c.Log.Info("neutral pose set", "yaw", m.Yaw, "pitch", m.Pitch, "roll", m.Roll, "frames", m.Frames)
	c.signal()
}

func round2(v float64) float64 { return r2(v) }
