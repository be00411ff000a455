// Package control carries out posed's commands (publish's set/ topics): the
// detection switch (the privacy switch, kept in the state directory and
// failing closed), snapshots from the live view, measuring or clearing the
// neutral pose, and reloading the configuration. It answers each command
// with what publish is to send back; it publishes nothing itself.
package control

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/web"
)

// ErrDetectOff: detection is switched off (the privacy switch): no frame
// is processed, published or shown.
var ErrDetectOff = neutral.ErrDetectOff

// Commands holds what commands change and carries them out: the detection
// switch (kept in the state directory across restarts), snapshots, and
// reloading the configuration.
type Commands struct {
	StateDir string
	View     *web.View
	Neutral  *neutral.Pose
	Log      *slog.Logger

	act     Actions
	detect  atomic.Bool
	changed chan struct{}
}

// Actions are what commands do outside the control, given when it is
// made.
type Actions struct {
	// Reload loads the configuration again and, if it is valid, has posed
	// restart with it; its error says why not. nil: reload refused.
	Reload func() error
	// Speed takes the vehicle's speed in km/h (set/speed: the driver
	// profile's gating). nil: the command is refused.
	Speed func(kmh float64) error
}

// detectFile is the file, in the state directory, holding ON or OFF.
const detectFile = "detect"

// New returns a control with the detection switch as the state directory
// last recorded it (on if nothing was recorded), carrying out set/zero on
// n and set/reload and set/speed with a. The switch fails closed: a
// recorded state
// that cannot be read (damaged, too large, a directory, unreadable) starts
// posed paused, and says so.
func New(stateDir string, view *web.View, n *neutral.Pose, a Actions, log *slog.Logger) *Commands {
	c := &Commands{StateDir: stateDir, View: view, Neutral: n, Log: log, act: a, changed: make(chan struct{}, 1)}
	on := readSwitch(stateDir, log)
	c.detect.Store(on)
	c.apply(on)
	return c
}

// readSwitch returns the detection switch recorded in stateDir: on when
// nothing was recorded; off, logged as an error, when the record exists
// but cannot be read — someone may have switched the camera's processing
// off, and it must stay off until they switch it on.
func readSwitch(stateDir string, log *slog.Logger) bool {
	if stateDir == "" {
		return true
	}
	path := filepath.Join(stateDir, detectFile)
	b, err := regular.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err == nil {
		var on bool
		if on, err = message.ParseSwitch(b); err == nil {
			return on
		}
	}
	log.Error("the recorded detection switch cannot be read: starting with detection off (privacy switch) until set/detect ON", "file", path, "err", err)
	return false
}

// Restore sets the switch as a previous run in this process left it
// (a reload), without recording it: it was recorded then, or could not be.
func (c *Commands) Restore(on bool) {
	c.detect.Store(on)
	c.apply(on)
}

// Signal tells the loop that the state changed (a switch, the neutral
// pose): Changed fires.
func (c *Commands) Signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Detecting reports whether frames are to be processed.
func (c *Commands) Detecting() bool { return c == nil || c.detect.Load() }

// Changed is signalled when the detection switch or the neutral pose
// changes.
func (c *Commands) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.changed
}

// apply makes the view follow on.
func (c *Commands) apply(on bool) {
	if on {
		c.View.Off(nil)
	} else {
		c.View.Off(ErrDetectOff)
	}
}

// SetDetect switches detection and records it. A switch that cannot be
// recorded (state directory missing, read-only, full) is switched all the
// same — someone switching the camera's processing off must find it off —
// and the returned warning says it will not survive a restart.
func (c *Commands) SetDetect(on bool) (warning error) {
	if c.StateDir != "" {
		v := "OFF\n"
		if on {
			v = "ON\n"
		}
		if err := regular.WriteFile(filepath.Join(c.StateDir, detectFile), []byte(v)); err != nil {
			warning = fmt.Errorf("switched %s, but not recorded (%w): after a restart it will be as recorded before", onOff(on), err)
		}
	}
	if c.detect.Swap(on) != on {
		c.Log.Info("detection switched", "on", on)
	}
	c.apply(on)
	c.Signal()
	return warning
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Handle carries out one command (publish.CommandHandler) and says what
// to send back. An error means nothing was changed.
func (c *Commands) Handle(name string, payload []byte) (message.Reply, error) {
	switch name {
	case message.CommandDetect:
		on, err := message.ParseSwitch(payload)
		if err != nil {
			return message.Reply{}, err
		}
		return message.Reply{Detect: &on, Warning: c.SetDetect(on)}, nil
	case message.CommandSnapshot:
		if !c.Detecting() {
			return message.Reply{}, ErrDetectOff
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		j, err := c.View.Snapshot(ctx)
		if err != nil {
			return message.Reply{}, err
		}
		return message.Reply{Snapshot: j}, nil
	case message.CommandZero:
		return message.Reply{}, c.Neutral.Command(payload, c.Detecting())
	case message.CommandSpeed:
		if c.act.Speed == nil {
			return message.Reply{}, errors.New("speed is taken by the driver profile only (attention.profile: driver)")
		}
		v, err := parseSpeed(payload)
		if err != nil {
			return message.Reply{}, err
		}
		return message.Reply{}, c.act.Speed(v)
	case message.CommandReload:
		if c.act.Reload == nil {
			return message.Reply{}, errors.New("reload is not available here")
		}
		return message.Reply{}, c.act.Reload()
	}
	known := []string{message.CommandDetect, message.CommandSnapshot, message.CommandZero, message.CommandReload, message.CommandSpeed}
	return message.Reply{}, fmt.Errorf("unknown command %q (known: %s)", name, strings.Join(known, ", "))
}

// speedText is a speed as people write one: digits, and maybe a decimal
// point and more digits (not 1_0, 0x1p4, 1e2, -0 or +5, which
// strconv.ParseFloat takes).
var speedText = regexp.MustCompile(`^[0-9]{1,6}(\.[0-9]{1,6})?$`)

// parseSpeed reads the payload of set/speed: km/h, as speedText.
func parseSpeed(payload []byte) (float64, error) {
	s := strings.TrimSpace(string(payload))
	if !speedText.MatchString(s) {
		return 0, fmt.Errorf("speed %.40q: want a number of km/h, such as 50 or 12.5", payload)
	}
	return strconv.ParseFloat(s, 64)
}
