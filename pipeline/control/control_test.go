package control

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/pipeline/neutral"
)

// The privacy switch fails closed: a recorded state that exists but
// cannot be read starts posed paused, with an error in the log; nothing
// recorded starts it on. (Before, every unreadable record turned
// detection on, most of them silently.)
func TestSwitchFailsClosed(t *testing.T) {
	cases := map[string]func(dir string){
		"garbage":     func(dir string) { os.WriteFile(filepath.Join(dir, detectFile), []byte("\x00maybe"), 0o600) },
		"a directory": func(dir string) { os.Mkdir(filepath.Join(dir, detectFile), 0o700) },
		"over 1 MiB": func(dir string) {
			os.WriteFile(filepath.Join(dir, detectFile), bytes.Repeat([]byte("ON\n"), regular.MaxSize), 0o600)
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
		c := newControl(dir, &logs)
		if c.Detecting() {
			t.Errorf("%s: detection on", name)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "detection off") {
			t.Errorf("%s: not logged as an error: %s", name, logs.String())
		}
	}
	if c := newControl(t.TempDir(), nil); !c.Detecting() {
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
	c := newControl(dir, nil)
	os.RemoveAll(dir) // the state directory vanished
	r, err := c.Handle("detect", []byte("OFF"))
	if err != nil {
		t.Fatalf("OFF refused: %v", err)
	}
	if c.Detecting() {
		t.Error("detection still on")
	}
	if r.Warning == nil || !strings.Contains(r.Warning.Error(), "not recorded") || !strings.Contains(r.Warning.Error(), "restart") {
		t.Errorf("warning: %v", r.Warning)
	}
	if r.Detect == nil || *r.Detect {
		t.Errorf("switch to publish: %v", r.Detect)
	}
}

// Commands are answered with what to publish, and refused with an error
// that names them; a snapshot or a measurement needs detection on.
func TestHandleReplies(t *testing.T) {
	c := newControl(t.TempDir(), nil)
	if r, err := c.Handle("detect", []byte("ON")); err != nil || r.Detect == nil || !*r.Detect || r.Warning != nil {
		t.Errorf("detect ON: %+v, %v", r, err)
	}
	if _, err := c.Handle("detect", []byte("maybe")); err == nil || !strings.Contains(err.Error(), "maybe") {
		t.Errorf("detect maybe: %v", err)
	}
	if _, err := c.Handle("dance", nil); err == nil || !strings.Contains(err.Error(), "dance") || !strings.Contains(err.Error(), "snapshot") {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := c.Handle("reload", nil); err == nil {
		t.Error("reload without a reloader accepted")
	}
	if _, err := c.Handle("speed", []byte("50")); err == nil || !strings.Contains(err.Error(), "driver") {
		t.Errorf("speed without the driver profile: %v", err)
	}
	var got []float64
	c = New(t.TempDir(), nil, c.Neutral, Actions{Speed: func(v float64) error {
		if v > 500 {
			return errors.New("too fast")
		}
		got = append(got, v)
		return nil
	}}, c.Log)
	for _, p := range []string{"50", " 12.5\n", "fast", "", "900", "1_0", "0x1p4", "-0", "1e2", "+5", "Inf", "NaN", ".5"} {
		_, err := c.Handle("speed", []byte(p))
		if ok := p == "50" || p == " 12.5\n"; (err == nil) != ok {
			t.Errorf("speed %q: %v", p, err)
		}
	}
	if len(got) != 2 || got[0] != 50 || got[1] != 12.5 {
		t.Errorf("speeds taken %v", got)
	}
	c.SetDetect(false)
	for _, cmd := range []string{"snapshot", "zero"} {
		if _, err := c.Handle(cmd, nil); !errors.Is(err, ErrDetectOff) {
			t.Errorf("%s while detection is off: %v", cmd, err)
		}
	}
	select {
	case <-c.Changed():
	default:
		t.Error("switching did not signal the loop")
	}
}

func newControl(dir string, logs *bytes.Buffer) *Commands {
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	log := slog.New(slog.NewTextHandler(logs, nil))
	return New(dir, nil, neutral.New("", neutral.Options{}, log), Actions{}, log)
}
