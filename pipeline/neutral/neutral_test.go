package neutral

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/message"
)

func quietNeutral(dir string, logs *bytes.Buffer) *Pose {
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	n := New(dir, Options{Seconds: 3}, slog.New(slog.NewTextHandler(logs, nil)))
	n.Clock = clock.NewManual(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	return n
}

// advance moves a neutral's manual clock.
func advance(c *Pose, d time.Duration) { c.Clock.(*clock.Manual).Advance(d) }

func frontFace() *message.Face {
	return &message.Face{Yaw: message.Some(20), Pitch: message.Some(5), Roll: message.Some(0)}
}

// set/zero clear during a measurement cancels it (before, the measurement
// set the pose when it ended, undoing the clear), and a measurement stopped
// by a reload drops its measurement (before, it was written to the state
// directory and applied only after the next restart).
func TestZeroMeasurementCancelled(t *testing.T) {
	for _, how := range []string{"clear", "stop"} {
		dir := t.TempDir()
		c := quietNeutral(dir, nil)
		if err := c.Command([]byte("0.2"), true); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			c.Sample(frontFace())
		}
		if how == "clear" {
			if err := c.Command([]byte("clear"), true); err != nil {
				t.Fatal(err)
			}
		} else {
			c.Stop()
		}
		advance(c, 400*time.Millisecond)
		if z := c.State(); z != nil {
			t.Errorf("%s during a measurement: neutral pose %+v set when it ended", how, z)
		}
		if _, err := os.Stat(filepath.Join(dir, zeroFile)); !os.IsNotExist(err) {
			t.Errorf("%s during a measurement: %s written", how, zeroFile)
		}
	}
	// Not cancelled, it sets the pose.
	c := quietNeutral(t.TempDir(), nil)
	c.Command([]byte("0.1"), true)
	for range 5 {
		c.Sample(frontFace())
	}
	advance(c, 99*time.Millisecond)
	if z := c.State(); z != nil {
		t.Errorf("neutral pose %+v set before the measurement's 0.1 s ended", z)
	}
	advance(c, time.Millisecond)
	if z := c.State(); z == nil || z.Frames != 5 || !z.Set.Equal(time.Date(2026, 11, 27, 8, 0, 0, 100e6, time.UTC)) {
		t.Errorf("measured neutral pose %+v, want 5 frames set at the measurement's end", z)
	}
}

// A measured neutral pose that cannot be read is logged, not silently
// ignored; a neutral pose from the configuration says no measurement time
// (before: "set":"0001-01-01T00:00:00Z").
func TestZeroFileAndConfigState(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, zeroFile), 0o700)
	var logs bytes.Buffer
	quietNeutral(dir, &logs)
	if !strings.Contains(logs.String(), "cannot read the measured neutral pose") {
		t.Errorf("an unreadable %s is not logged: %s", zeroFile, logs.String())
	}
	c := New("", Options{Yaw: 10}, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	b, _ := json.Marshal(c.State())
	if strings.Contains(string(b), "set") {
		t.Errorf("a configured neutral pose: %s", b)
	}
}
