package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/publish"
)

// ErrDetectOff: detection is switched off (the privacy switch): no frame
// is processed, published or shown.
var ErrDetectOff = errors.New("detection is off (privacy switch)")

// Commander is what the control publishes besides the loop's messages.
type Commander interface {
	SetDetect(on bool)
	Snapshot(jpeg []byte)
	CommandError(name string, err error)
}

// Control holds what commands change and carries them out: the detection
// switch (kept in the state directory across restarts), snapshots, and
// reloading the configuration.
type Control struct {
	StateDir string
	View     *View
	Pub      Commander
	// Reload loads the configuration again and, if it is valid, has posed
	// restart with it; its error says why not. nil: reload refused.
	Reload func() error
	Log    *slog.Logger

	detect  atomic.Bool
	changed chan struct{}
	zero    zero
}

// detectFile is the file, in the state directory, holding ON or OFF.
const detectFile = "detect"

// NewControl returns a control with the detection switch as the state
// directory last recorded it (on if nothing was recorded), and the
// neutral pose measured last, else zero's. Attach gives it its publisher.
// The switch fails closed: a recorded state that cannot be read (damaged,
// too large, a directory, unreadable) starts posed paused, and says so.
func NewControl(stateDir string, view *View, log *slog.Logger, zero config.Zero) *Control {
	c := &Control{StateDir: stateDir, View: view, Log: log, changed: make(chan struct{}, 1)}
	on := readSwitch(stateDir, log)
	c.detect.Store(on)
	c.apply(on)
	c.loadZero(zero)
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
	b, err := config.ReadFileLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err == nil {
		var on bool
		if on, err = publish.ParseSwitch(b); err == nil {
			return on
		}
	}
	log.Error("the recorded detection switch cannot be read: starting with detection off (privacy switch) until set/detect ON", "file", path, "err", err)
	return false
}

// Restore sets the switch as a previous run in this process left it
// (a reload), without recording it: it was recorded then, or could not be.
func (c *Control) Restore(on bool) {
	c.detect.Store(on)
	c.apply(on)
}

// signal tells the loop that the state changed.
func (c *Control) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// fail reports an error of a command that finished later.
func (c *Control) fail(name string, err error) {
	if c.Pub != nil {
		c.Pub.CommandError(name, err)
	} else {
		c.Log.Warn("command failed", "command", name, "err", err)
	}
}

// Attach sets the publisher of the switch and publishes its state.
func (c *Control) Attach(pub Commander) {
	c.Pub = pub
	pub.SetDetect(c.Detecting())
}

// Detecting reports whether frames are to be processed.
func (c *Control) Detecting() bool { return c == nil || c.detect.Load() }

// Changed is signalled when the detection switch changes.
func (c *Control) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.changed
}

// apply makes the view and the published switch follow on.
func (c *Control) apply(on bool) {
	if on {
		c.View.Off(nil)
	} else {
		c.View.Off(ErrDetectOff)
	}
	if c.Pub != nil {
		c.Pub.SetDetect(on)
	}
}

// SetDetect switches detection, records it and publishes it. A switch
// that cannot be recorded (state directory missing, read-only, full) is
// switched all the same — someone switching the camera's processing off
// must find it off — and reported: it will not survive a restart.
func (c *Control) SetDetect(on bool) error {
	if c.StateDir != "" {
		v := "OFF\n"
		if on {
			v = "ON\n"
		}
		if err := config.WriteStateFile(filepath.Join(c.StateDir, detectFile), []byte(v)); err != nil {
			c.fail(publish.CommandDetect, fmt.Errorf("switched %s, but not recorded (%w): after a restart it will be as recorded before", onOff(on), err))
		}
	}
	if c.detect.Swap(on) != on {
		c.Log.Info("detection switched", "on", on)
	}
	c.apply(on)
	c.signal()
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Handle carries out one command (publish.CommandHandler). An error means
// nothing was changed.
func (c *Control) Handle(name string, payload []byte) error {
	switch name {
	case publish.CommandDetect:
		on, err := publish.ParseSwitch(payload)
		if err != nil {
			return err
		}
		return c.SetDetect(on)
	case publish.CommandSnapshot:
		if !c.Detecting() {
			return ErrDetectOff
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		j, err := c.View.Snapshot(ctx)
		if err != nil {
			return err
		}
		c.Pub.Snapshot(j)
		return nil
	case publish.CommandZero:
		return c.zeroCommand(payload)
	case publish.CommandReload:
		if c.Reload == nil {
			return errors.New("reload is not available here")
		}
		return c.Reload()
	}
	known := []string{publish.CommandDetect, publish.CommandSnapshot, publish.CommandZero, publish.CommandReload}
	return fmt.Errorf("unknown command %q (known: %s)", name, strings.Join(known, ", "))
}
