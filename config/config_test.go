package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
detect: {min_size: 100, max_size: 50}
track: {smoothing: 1.5}
mqtt: {broker: "http://x", qos: 3, prefix: "a/#"}
log: {level: loud}
`))
	var p Problems
	if !errors.As(err, &p) {
		t.Fatalf("error %v is not a problem list", err)
	}
	for _, field := range []string{"device", "source.width", "source.format", "source.buffers", "model.iterations",
		"detect.max_size", "track.smoothing", "mqtt.broker", "mqtt.qos", "mqtt.prefix", "log.level"} {
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

// A password in the broker URL is redacted wherever posed reports the URL,
// including the errors of a broker URL that does not validate.
func TestBrokerPasswordRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://posed:s3cret@broker:1883": "tcp://posed:xxxxx@broker:1883",
		"tcp://broker:1883":              "tcp://broker:1883",
		"embedded":                       "embedded",
		"tcp://a:b@c:d@%zz":              "(unparsable URL with user information)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for _, broker := range []string{"ftp://posed:s3cret@broker", "tcp://posed:s3cret@", "tcp://posed:s3cret@%zz"} {
		c := Default()
		c.MQTT.Broker = broker
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "mqtt.broker") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("broker %q: error %v (want one naming mqtt.broker without the password)", broker, err)
		}
	}
}
