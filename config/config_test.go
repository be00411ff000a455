package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/regular"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source.Width != 640 || c.MQTT.Prefix != "posed" {
		t.Errorf("empty file did not give the defaults: %+v", c)
	}
}

// The example config in the repository parses and sets what it says.
func TestExampleConfig(t *testing.T) {
	c, err := Load("posed.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.MQTT.Broker == "" || c.Source.Timeout != 2*time.Second {
		t.Errorf("example: %+v", c)
	}
	r, err := Load("run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r.MQTT.Broker != "embedded" || !r.MQTT.Print || !r.Source.Loop {
		t.Errorf("make run's config: %+v", r)
	}
}

func TestUnknownKeyIsAnError(t *testing.T) {
	_, err := Parse([]byte("source:\n  widht: 320\n"))
	if err == nil || !strings.Contains(err.Error(), "widht") {
		t.Errorf("unknown key: %v", err)
	}
}

// A bad config is rejected naming each wrong field.
func TestValidationListsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`
device: "cam/1"
source: {width: 5, format: rgb, buffers: 0}
model: {iterations: 0}
detect: {every: 0}
track: {smoothing: 1.5}
mqtt: {broker: "http://x", qos: 3, prefix: "a/#"}
log: {level: loud}
`))
	var p Problems
	if !errors.As(err, &p) {
		t.Fatalf("error %v is not a problem list", err)
	}
	for _, field := range []string{"device", "source.width", "source.format", "source.buffers", "model.iterations",
		"detect.every", "track.smoothing", "mqtt.broker", "mqtt.qos", "mqtt.prefix", "log.level"} {
		found := false
		for _, line := range p {
			if strings.HasPrefix(line, field+":") {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem reported for %s in:\n%v", field, err)
		}
	}
	if len(p) != 11 {
		t.Errorf("%d problems, want 11:\n%v", len(p), err)
	}
}

// A value of the wrong type does not hide the other fields' problems.
func TestTypeErrorDoesNotHideOthers(t *testing.T) {
	_, err := Parse([]byte("mqtt:\n  qos: \"x\"\n  max_rate: -1\nsource:\n  width: 640.5\n  height: 5\n"))
	var p Problems
	if !errors.As(err, &p) {
		t.Fatalf("error %v is not a problem list", err)
	}
	for _, want := range []string{"mqtt.qos:", "mqtt.max_rate:", "source.width:", "source.height:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no problem for %s in:\n%v", strings.TrimSuffix(want, ":"), err)
		}
	}
	if len(p) != 4 {
		t.Errorf("%d problems, want 4:\n%v", len(p), err)
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "posed.yaml")
	os.WriteFile(path, []byte("mqtt:\n  qos: 7\n"), 0o644)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "mqtt.qos: 7 is not 0, 1 or 2") {
		t.Errorf("error %q", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("source: {path: /dev/video0}\n"))
	f.Add([]byte("mqtt:\n  broker: embedded\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		c, err := Parse(data)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("parsed config does not validate: %v", err)
			}
		}
	})
}

// A password in the broker URL is kept out of the errors of a broker URL
// that does not validate (internal/redact).
func TestBrokerPasswordRedacted(t *testing.T) {
	for _, broker := range []string{"ftp://posed:s3cret@broker", "tcp://posed:s3cret@", "tcp://posed:s3cret@%zz"} {
		c := Default()
		c.MQTT.Broker = broker
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "mqtt.broker") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("broker %q: error %v (want one naming mqtt.broker without the password)", broker, err)
		}
	}
}

// Values that would break posed are refused, each naming its field: NaN
// and infinities, a fraction for an integer, a device id that is not a
// topic- and Home-Assistant-safe id, listen addresses that cannot be
// listened on, and a type error reported by field rather than by line.
func TestHostileValuesRefused(t *testing.T) {
	long := strings.Repeat("d", 70000)
	for _, c := range []struct{ yaml, want string }{
		{"track: {smoothing: .nan}\n", "track.smoothing: NaN is not a number"},
		{"research: {eps: .inf}\n", "research.eps: +Inf is not a number"},
		{"model: {eps: .inf}\n", "research.eps: +Inf is not a number"},
		{"source: {width: 640.7}\n", "source.width: 640.7 is not a whole number"},
		{"device: " + long + "\n", "device: \"ddd"},
		{"device: \"cam/one\"\n", "device: \"cam/one\": want 1 to 64"},
		{"device: \"büro\"\n", "device: \"büro\""},
		{"metrics: {listen: nonsense}\n", "metrics.listen: \"nonsense\": want host:port"},
		{"mqtt: {listen: \"127.0.0.1:99999\"}\n", "mqtt.listen: \"127.0.0.1:99999\": port \"99999\" is not a number from 0 to 65535"},
		{"source:\n  width: abc\nmqtt:\n  qos: x\n", "source.width: cannot unmarshal !!str `abc` into int (line 2)"},
		{"source:\n  width: abc\nmqtt:\n  qos: x\n", "mqtt.qos: cannot unmarshal !!str `x` into int (line 4)"},
	} {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			msg := "<nil>"
			if err != nil {
				msg = err.Error()
				if len(msg) > 300 {
					msg = msg[:300]
				}
			}
			t.Errorf("%.60q: %s, want it to say %q", c.yaml, msg, c.want)
		}
	}
	for _, ok := range []string{"device: kitchen-cam_2\n", "metrics: {listen: \"\"}\n", "mqtt: {listen: \"[::1]:0\"}\n", "source: {width: 320.0}\n"} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	// Boards sharing a host name get distinct ids from their machine ids.
	a, b := deviceOf("raspberrypi", "3fa2b1c0d9e8f7a6b5c4d3e2f1a0b9c8\n"), deviceOf("raspberrypi", "9c81aa00d9e8f7a6b5c4d3e2f1a0b9c8\n")
	if a != "raspberrypi-3fa2b1" || b != "raspberrypi-9c81aa" {
		t.Errorf("deviceOf: %q, %q", a, b)
	}
	if got := deviceOf("pi.local", ""); got != "pi-local" {
		t.Errorf("deviceOf without a machine id = %q", got)
	}
	if got := deviceOf(strings.Repeat("h", 80), "3fa2b1c0"); len(got) != 64 || !deviceID.MatchString(got) {
		t.Errorf("deviceOf of a long host = %q", got)
	}
	if got := DeviceFromHost("pi.local"); got != "pi-local" {
		t.Errorf("DeviceFromHost(pi.local) = %q", got)
	}
	if got := DeviceFromHost(long); len(got) != 64 {
		t.Errorf("DeviceFromHost of 70000 characters: %d", len(got))
	}
}

// A configuration file is read up to 1 MiB, and only from a regular
// file: /dev/zero is an error, not a hang or an out-of-memory.
func TestConfigFileSizeLimited(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(regular.MaxSize + 1)
	f.Close()
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("Load of %d bytes: %v", regular.MaxSize+1, err)
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file (a device)") {
		t.Errorf("Load(/dev/zero): %v", err)
	}
}

// Without model.path, the model is looked for in order and the error
// says every place it looked.
func TestFindModel(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", "default.gllim"), filepath.Join(dir, "b", "default.gllim")
	os.MkdirAll(filepath.Dir(b), 0o755)
	os.WriteFile(b, []byte("x"), 0o644)
	os.MkdirAll(a, 0o755) // a folder of that name is not a model
	if got, err := FindModel([]string{a, b}); err != nil || got != b {
		t.Errorf("FindModel = %q, %v; want %q", got, err, b)
	}
	_, err := FindModel([]string{a, filepath.Join(dir, "c")})
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), filepath.Join(dir, "c")) {
		t.Errorf("the error does not list the places: %v", err)
	}
	places := ModelPlaces()
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if len(places) != 5 || places[0] != filepath.Join(filepath.Dir(exe), "default.gllim") || places[1] != filepath.Join("models", "default.gllim") {
		t.Errorf("ModelPlaces = %v", places)
	}
}

// Zones, the primary face and the zero are checked: rectangles, names,
// modes that need a point or a zone, angles; NaN fails everywhere.
func TestZonesPrimaryZero(t *testing.T) {
	good := "zones: {detect: [0, 0, 640, 400], named: {driver: [0, 0, 320, 480], passenger: [320, 0, 640, 480]}}\nprimary: {mode: zone, zone: driver}\nzero: {yaw: -35, seconds: 2}\n"
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Zones.Named) != 2 || c.Primary.Zone != "driver" || c.Zero.Yaw != -35 {
		t.Errorf("parsed %+v %+v %+v", c.Zones, c.Primary, c.Zero)
	}
	for _, bad := range []struct{ yaml, field string }{
		{"zones: {detect: [10, 0, 5, 100]}\n", "zones.detect"},
		{"zones: {detect: [0, 0, .nan, 100]}\n", "zones.detect"},
		{"zones: {named: {\"a b\": [0, 0, 1, 1]}}\n", "zones.named"},
		{"zones: {named: {a: [0, 0, 1]}}\n", "zones.named.a"},
		{"primary: {mode: zone, zone: nowhere}\n", "primary.zone"},
		{"primary: {mode: nearest}\n", "primary.point"},
		{"primary: {mode: loudest}\n", "primary.mode"},
		{"zero: {pitch: 200}\n", "zero.pitch"},
		{"zero: {seconds: 0}\n", "zero.seconds"},
	} {
		if _, err := Parse([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("%q: %v, want an error naming %s", bad.yaml, err, bad.field)
		}
	}
}

// The attention profiles: a driver block as a car would have it parses
// (a list replaces the default, not appended to it), and each rule out
// of range or naming a target that is not there is reported by its path.
func TestAttentionProfiles(t *testing.T) {
	good := `attention:
  profile: driver
  targets:
    road: {yaw: [-22.5, 22.5], pitch: [-25, 25]}
    mirror_left: {cone: [45, 0, 10]}
  driver: {attending: [road, mirror_left], long: 2s, min_speed: 20}
`
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Attention.Driver
	if c.Attention.Profile != "driver" || len(d.Attending) != 2 || d.Attending[1] != "mirror_left" || d.Long != 2*time.Second ||
		d.Shared != 10*time.Second || d.Window != 30*time.Second || d.MinSpeed != 20 {
		t.Errorf("parsed %+v", c.Attention)
	}
	if _, err := Parse([]byte("attention: {profile: engagement}\n")); err != nil {
		t.Errorf("engagement on the built-in camera target: %v", err)
	}
	for _, bad := range []struct{ yaml, field string }{
		{"attention: {profile: pilot}\n", "attention.profile"},
		{"attention: {profile: driver}\n", "attention.driver.attending"}, // no road configured
		{"attention: {profile: engagement, camera: 0}\n", "attention.engagement.targets"},
		{"attention: {profile: engagement, engagement: {targets: []}}\n", "attention.engagement.targets"},
		{"attention: {driver: {long: 0s}}\n", "attention.driver.long"},
		{"attention: {driver: {shared: 40s}}\n", "attention.driver.window"}, // shared beyond its window
		{"attention: {driver: {unresponsive: 1s}}\n", "attention.driver.unresponsive"},
		{"attention: {driver: {min_speed: -5}}\n", "attention.driver.min_speed"},
		{"attention: {engagement: {off: -1s}}\n", "attention.engagement.off"},
		{"attention: {max_std: 0}\n", "attention.max_std"},
		{"track: {recheck_std: -1}\n", "track.recheck_std"},
		{"track: {recheck_std: 200}\n", "track.recheck_std"},
		{"track: {start_std: -1}\n", "track.start_std"},
		{"track: {start_std: .nan}\n", "track.start_std"},
		{"track: {recheck_turn: -5}\n", "track.recheck_turn"},
		{"track: {recheck_turn: .nan}\n", "track.recheck_turn"},
		{"track: {refine_every: 0}\n", "track.refine_every"},
		{"track: {refine_every: 5000}\n", "track.refine_every"},
		{"detect: {confirm_every: -1}\n", "detect.confirm_every"},
	} {
		if _, err := Parse([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.field+":") {
			t.Errorf("%q: %v, want an error naming %s", bad.yaml, err, bad.field)
		}
	}
}

// The three example configurations (a car, a robot head, a living room)
// load and say what they are for.
func TestExampleConfigurations(t *testing.T) {
	for file, profile := range map[string]string{"car.yaml": "driver", "robot.yaml": "engagement", "living-room.yaml": "engagement"} {
		c, err := Load(filepath.Join("examples", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if c.Attention.Profile != profile {
			t.Errorf("%s: profile %q, want %q", file, c.Attention.Profile, profile)
		}
	}
	c, _ := Load(filepath.Join("examples", "car.yaml"))
	if !c.Zero.Learn || c.Attention.Driver.MinSpeed != 20 || len(c.Attention.Driver.Attending) != 5 {
		t.Errorf("car: %+v %+v", c.Zero, c.Attention.Driver)
	}
}

// A detection zone that misses the camera's frame (as turned) is refused,
// naming the frame; one that overlaps it is taken.
func TestZoneOutsideFrame(t *testing.T) {
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"zones: {detect: [700, 0, 900, 200]}\n", false},
		{"zones: {detect: [0, 500, 100, 600]}\n", false},
		{"zones: {detect: [600, 400, 900, 700]}\n", true},
		{"source: {rotate: 90}\nzones: {detect: [0, 500, 100, 600]}\n", true},
		{"source: {path: replay/}\nzones: {detect: [700, 0, 900, 200]}\n", true},
	} {
		_, err := Parse([]byte(c.yaml))
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "zones.detect") {
			t.Errorf("%q: %v", c.yaml, err)
		}
	}
}

// Keys set for a part that is off are named (and posed runs): unread
// without the face network, the scan's keys without the scan. The
// defaults name none.
func TestInert(t *testing.T) {
	if w := Default().Inert(); len(w) != 0 {
		t.Errorf("the defaults: %q", w)
	}
	c := Default()
	c.Detect.Verify, c.Detect.ScanEvery, c.Detect.ScanLooks = false, 0, 2
	w := c.Inert()
	if len(w) != 2 || !strings.HasPrefix(w[0], "track.unread") || !strings.HasPrefix(w[1], "detect.scan_looks") {
		t.Errorf("unread and scan_looks with the network off: %q", w)
	}
	if c.Validate() != nil {
		t.Errorf("an inert key refused: %v", c.Validate())
	}
	// Tiles set at scan_shrink 1 (the scan at the frame's resolution) are
	// named; the default tiles with scan_shrink 1 are not (not set).
	c = Default()
	c.Detect.ScanShrink = 1
	if w := c.Inert(); len(w) != 0 {
		t.Errorf("scan_shrink 1 with the default tiles: %q", w)
	}
	c.Detect.ScanTiles = 9
	if w := c.Inert(); len(w) != 1 || !strings.HasPrefix(w[0], "detect.scan_tiles") {
		t.Errorf("scan_tiles 9 at scan_shrink 1: %q", w)
	}
}

// The research keys given where they were before the research block
// (model.eps, gain, mirror, temperature; detect.turned_stages) are read
// into it, each with a warning saying where it went; one given in both
// places takes the research block's value.
func TestMovedResearchKeys(t *testing.T) {
	c, err := Parse([]byte("model: {eps: 0.05, gain: 0.5, mirror: true, temperature: 8}\ndetect: {turned_stages: 21}\nresearch: {gain: 0.7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Research; r != (Research{Eps: 0.05, Gain: 0.7, Mirror: true, Temperature: 8, TurnedStages: 21}) {
		t.Errorf("research %+v", r)
	}
	w := strings.Join(c.Warnings(""), "\n")
	for _, k := range []string{"model.eps is research.eps", "model.gain is research.gain", "model.mirror is research.mirror", "model.temperature is research.temperature", "detect.turned_stages is research.turned_stages"} {
		if !strings.Contains(w, k) {
			t.Errorf("no warning that %s now:\n%s", k, w)
		}
	}
	if c, err := Parse([]byte("research: {eps: 0.05}\n")); err != nil || len(c.Warnings("")) != 0 || c.Research.Eps != 0.05 {
		t.Errorf("the research block itself: %v, warnings %q", err, c.Warnings(""))
	}
	if _, err := Parse([]byte("model: {gain: 2}\n")); err == nil || !strings.Contains(err.Error(), "research.gain: 2 is not in (0, 1]") {
		t.Errorf("a bad gain in its old place: %v", err)
	}
}
