package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/track"
)

// commander records what a Control publishes.
type commander struct {
	mu     sync.Mutex
	detect []bool
	errs   []string
}

func (c *commander) SetDetect(on bool) { c.mu.Lock(); c.detect = append(c.detect, on); c.mu.Unlock() }
func (c *commander) Snapshot([]byte)   {}
func (c *commander) CommandError(name string, err error) {
	c.mu.Lock()
	c.errs = append(c.errs, name+": "+err.Error())
	c.mu.Unlock()
}

// The privacy switch fails closed: a recorded state that exists but
// cannot be read starts posed paused, with an error in the log; nothing
// recorded starts it on. (Before, every unreadable record turned
// detection on, most of them silently.)
func TestSwitchFailsClosed(t *testing.T) {
	cases := map[string]func(dir string){
		"garbage":     func(dir string) { os.WriteFile(filepath.Join(dir, detectFile), []byte("\x00maybe"), 0o600) },
		"a directory": func(dir string) { os.Mkdir(filepath.Join(dir, detectFile), 0o700) },
		"over 1 MiB": func(dir string) {
			os.WriteFile(filepath.Join(dir, detectFile), bytes.Repeat([]byte("ON\n"), config.MaxFileSize), 0o600)
		},
		"a state directory that is a file": nil,
	}
	for name, damage := range cases {
		dir := t.TempDir()
		if damage != nil {
			damage(dir)
		} else {
			dir = filepath.Join(dir, "file")
			os.WriteFile(dir, nil, 0o600)
		}
		var logs bytes.Buffer
		c := NewControl(dir, nil, slog.New(slog.NewTextHandler(&logs, nil)), config.Zero{})
		if c.Detecting() {
			t.Errorf("%s: detection on", name)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "detection off") {
			t.Errorf("%s: not logged as an error: %s", name, logs.String())
		}
	}
	if c := NewControl(t.TempDir(), nil, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), config.Zero{}); !c.Detecting() {
		t.Error("nothing recorded: detection off")
	}
}

// set/detect OFF is carried out even when it cannot be recorded, and the
// reply says it will not survive a restart. (Before: refused, and
// detection kept running.) A full disk leaves no empty temporary file.
func TestSwitchOffWhenUnrecordable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := NewControl(dir, nil, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), config.Zero{})
	pub := &commander{}
	c.Attach(pub)
	os.RemoveAll(dir) // the state directory vanished
	if err := c.Handle("detect", []byte("OFF")); err != nil {
		t.Fatalf("OFF refused: %v", err)
	}
	if c.Detecting() {
		t.Error("detection still on")
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.errs) != 1 || !strings.Contains(pub.errs[0], "not recorded") || !strings.Contains(pub.errs[0], "restart") {
		t.Errorf("replies: %v", pub.errs)
	}
	if len(pub.detect) == 0 || pub.detect[len(pub.detect)-1] {
		t.Errorf("published switch: %v", pub.detect)
	}
}

// WriteStateFile leaves no temporary file when writing fails.
func TestStateFileNoLeftover(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	if err := os.Symlink("/dev/full", path+".tmp"); err != nil {
		t.Fatal(err)
	}
	err := config.WriteStateFile(path, []byte("ON\n"))
	if err == nil || !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no space") {
		t.Fatalf("writing to a full device: %v", err)
	}
	if _, err := os.Lstat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func quietControl(t *testing.T, dir string, logs *bytes.Buffer) *Control {
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	return NewControl(dir, nil, slog.New(slog.NewTextHandler(logs, nil)), config.Zero{Seconds: 3})
}

func frontFace() track.Face {
	return track.Face{Angles: [3]float64{20, 5, 0}, Has: [3]bool{true, true, true}}
}

// set/zero clear during a measurement cancels it (before, the measurement
// set the pose when it ended, undoing the clear), and a control stopped
// by a reload drops its measurement (before, it was written to the state
// directory and applied only after the next restart).
func TestZeroMeasurementCancelled(t *testing.T) {
	for _, how := range []string{"clear", "stop"} {
		dir := t.TempDir()
		c := quietControl(t, dir, nil)
		if err := c.Handle("zero", []byte("0.2")); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			c.Sample(frontFace())
		}
		if how == "clear" {
			if err := c.Handle("zero", []byte("clear")); err != nil {
				t.Fatal(err)
			}
		} else {
			c.Stop()
		}
		time.Sleep(400 * time.Millisecond)
		if z := c.ZeroState(); z != nil {
			t.Errorf("%s during a measurement: neutral pose %+v set when it ended", how, z)
		}
		if _, err := os.Stat(filepath.Join(dir, zeroFile)); !os.IsNotExist(err) {
			t.Errorf("%s during a measurement: %s written", how, zeroFile)
		}
	}
	// Not cancelled, it sets the pose.
	c := quietControl(t, t.TempDir(), nil)
	c.Handle("zero", []byte("0.1"))
	for range 5 {
		c.Sample(frontFace())
	}
	time.Sleep(300 * time.Millisecond)
	if z := c.ZeroState(); z == nil || z.Frames != 5 {
		t.Errorf("measured neutral pose %+v", z)
	}
}

// A measured neutral pose that cannot be read is logged, not silently
// ignored; a neutral pose from the configuration says no measurement time
// (before: "set":"0001-01-01T00:00:00Z").
func TestZeroFileAndConfigState(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, zeroFile), 0o700)
	var logs bytes.Buffer
	quietControl(t, dir, &logs)
	if !strings.Contains(logs.String(), "cannot read the measured neutral pose") {
		t.Errorf("an unreadable %s is not logged: %s", zeroFile, logs.String())
	}
	c := NewControl("", nil, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), config.Zero{Yaw: 10})
	b, _ := json.Marshal(c.ZeroState())
	if strings.Contains(string(b), "set") {
		t.Errorf("a configured neutral pose: %s", b)
	}
}
