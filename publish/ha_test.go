package publish

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/mqtttest"
)

// jinjaScript renders Home Assistant value templates with Jinja2's
// sandbox, as Home Assistant does: value is the payload, value_json its
// JSON. Input: a JSON list of [template, payload]; output: the renders.
const jinjaScript = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
env = ImmutableSandboxedEnvironment()
out = []
for tmpl, payload in json.load(sys.stdin):
    out.append(env.from_string(tmpl).render(value=payload, value_json=json.loads(payload)))
json.dump(out, sys.stdout)
`

// renderJinja renders each [template, payload] pair with Python's Jinja2.
func renderJinja(t *testing.T, pairs [][2]string) []string {
	t.Helper()
	// Debian's python3 first: python3-jinja2 (make test-deps) goes there.
	py, err := "/usr/bin/python3", exec.Command("/usr/bin/python3", "-c", "import jinja2").Run()
	if err != nil {
		if py, err = exec.LookPath("python3"); err == nil {
			err = exec.Command(py, "-c", "import jinja2").Run()
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 with jinja2 is needed (make test-deps installs python3-jinja2): %v", err)
		}
		t.Skipf("python3 with jinja2 is needed: apt-get install python3-jinja2 (%v)", err)
	}
	in, _ := json.Marshal(pairs)
	cmd := exec.Command(py, "-c", jinjaScript)
	cmd.Stdin = strings.NewReader(string(in))
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("jinja2: %v", err)
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type haConfig struct {
	Name, UniqueID, StateTopic, ValueTemplate, StateClass, AvailabilityMode, Unit string
	Availability                                                                  []struct{ Topic, ValueTemplate string }
	Device                                                                        map[string]any
	Origin                                                                        map[string]string
	DeviceClass                                                                   string
}

func (c *haConfig) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name             string `json:"name"`
		UniqueID         string `json:"unique_id"`
		StateTopic       string `json:"state_topic"`
		ValueTemplate    string `json:"value_template"`
		StateClass       string `json:"state_class"`
		AvailabilityMode string `json:"availability_mode"`
		Unit             string `json:"unit_of_measurement"`
		Availability     []struct {
			Topic         string `json:"topic"`
			ValueTemplate string `json:"value_template"`
		} `json:"availability"`
		Device      map[string]any    `json:"device"`
		Origin      map[string]string `json:"origin"`
		DeviceClass string            `json:"device_class"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = haConfig{raw.Name, raw.UniqueID, raw.StateTopic, raw.ValueTemplate, raw.StateClass, raw.AvailabilityMode, raw.Unit, nil, raw.Device, raw.Origin, raw.DeviceClass}
	for _, a := range raw.Availability {
		c.Availability = append(c.Availability, struct{ Topic, ValueTemplate string }{a.Topic, a.ValueTemplate})
	}
	return nil
}

// Home Assistant gets its own, change-driven topic at a lower rate than
// the poses; its sensors' templates, rendered by Jinja2 against the real
// messages, give numbers while a face is seen and None (HA's "unknown",
// not a ValueError) when none is; they are unavailable while the camera
// is offline; the device block says who made it and which version.
func TestHomeAssistant(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "#")
	cfg := testMQTT(broker.Addr())
	cfg.Discovery = true
	cfg.HAInterval, cfg.HADeadband = 300*time.Millisecond, 1
	clk := clock.NewManual(time.Now())
	p, err := New(cfg, "cam", quiet(), nil, WithVersion("1.2.3"), WithConfigURL("http://cam.local:9464/"), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, time.Second)
	waitConnected(t, p, 5*time.Second)
	p.Retain(message.TopicCamera, message.Camera{Schema: message.SchemaVersion, Device: "cam", Camera: "x", Status: "online", Changed: time.Now()})
	// 10 (first: sent), 10.4 (under the deadband), 10.5 after the interval
	// (still under), 12 (sent), 30 at once (within the interval), no face
	// (sent at once).
	// A retained topic carries its latest payload: each summary is waited
	// for before the next, which would otherwise replace it unsent.
	haSent := func(what, payload string) {
		col.WaitFor(t, what, 5*time.Second, func(ms []mqtttest.Msg) bool {
			for _, m := range ms {
				if m.Topic == "posed/cam/ha" && strings.Contains(string(m.Payload), payload) {
					return true
				}
			}
			return false
		})
	}
	p.Pose(onePose(1, 10), 0)
	haSent("the HA summary of 10", `"yaw":10,`)
	p.Pose(onePose(2, 10.4), 0)
	clk.Advance(350 * time.Millisecond)
	p.Pose(onePose(3, 10.5), 0)
	p.Pose(onePose(4, 12), 0)
	haSent("the HA summary of 12", `"yaw":12`)
	p.Pose(onePose(5, 30), 0)
	// Within the interval 30 is not the summary (on the wire the next one
	// could replace it unseen, so the publisher's record says it).
	p.mu.Lock()
	last := p.lastHA.Yaw
	p.mu.Unlock()
	if last != message.Some(12) {
		t.Errorf("after yaw 30 within ha_interval the summary says yaw %+v, want 12", last)
	}
	p.Pose(&message.Pose{Seq: 6, Captured: time.Now()}, -1)
	p.Retain(message.TopicCamera, message.Camera{Schema: message.SchemaVersion, Device: "cam", Camera: "x", Status: "offline", Error: "gone", Changed: time.Now()})
	col.WaitFor(t, "the HA summary with no face", 5*time.Second, func(ms []mqtttest.Msg) bool {
		for _, m := range ms {
			if m.Topic == "posed/cam/ha" && strings.Contains(string(m.Payload), `"faces":0`) {
				return true
			}
		}
		return false
	})
	time.Sleep(200 * time.Millisecond)
	sch := mqtttest.Schemas(t)
	var ha, cams []string
	for _, m := range col.On("posed/cam/ha") {
		mqtttest.Validate(t, sch["ha"], m)
		ha = append(ha, string(m.Payload))
	}
	for _, m := range col.On("posed/cam/camera") {
		cams = append(cams, string(m.Payload))
	}
	if len(ha) != 3 {
		t.Fatalf("HA topic got %d messages, want 3 (10, 12, none):\n%s", len(ha), strings.Join(ha, "\n"))
	}
	var configs []haConfig
	for _, m := range col.All() {
		if strings.HasPrefix(m.Topic, "homeassistant/sensor/posed_cam_") || strings.HasPrefix(m.Topic, "homeassistant/binary_sensor/posed_cam_") {
			var c haConfig
			if err := json.Unmarshal(m.Payload, &c); err != nil {
				t.Fatalf("%s: %v", m.Topic, err)
			}
			configs = append(configs, c)
		}
	}
	if len(configs) != plainEntities() {
		t.Fatalf("%d discovery configs, want %d", len(configs), plainEntities())
	}
	// The occupancy sensor: someone there, or not.
	want := map[string][]string{"Yaw": {"10", "12", "None"}, "Pitch": {"None", "None", "None"}, "Faces": {"1", "1", "0"}, "Occupied": {"ON", "ON", "OFF"}}
	for _, c := range configs {
		class := "measurement"
		if c.Name == "Occupied" {
			class = ""
			if c.DeviceClass != "occupancy" {
				t.Errorf("the occupancy sensor's device class is %q", c.DeviceClass)
			}
		}
		if c.StateTopic != "posed/cam/ha" || c.StateClass != class || c.AvailabilityMode != "all" || len(c.Availability) != 2 {
			t.Errorf("%s: %+v", c.Name, c)
		}
		if c.Device["sw_version"] != "1.2.3" || c.Device["manufacturer"] == nil || c.Device["configuration_url"] != "http://cam.local:9464/" || c.Origin["name"] != "posed" {
			t.Errorf("%s: device %v origin %v", c.Name, c.Device, c.Origin)
		}
		var pairs [][2]string
		for _, h := range ha {
			pairs = append(pairs, [2]string{c.ValueTemplate, h})
		}
		got := renderJinja(t, pairs)
		if w, ok := want[c.Name]; ok && !slices.Equal(got, w) {
			t.Errorf("%s renders %q, want %q", c.Name, got, w)
		}
		// The camera's availability template follows its status.
		pairs = nil
		for _, cm := range cams {
			pairs = append(pairs, [2]string{c.Availability[1].ValueTemplate, cm})
		}
		if got := renderJinja(t, pairs); !slices.Equal(got, []string{"online", "offline"}) || c.Availability[1].Topic != "posed/cam/camera" {
			t.Errorf("%s: camera availability renders %q", c.Name, got)
		}
	}
}

// Discovery entries that are no longer announced (the device renamed,
// discovery switched off) are removed with empty retained configs, using
// what the state directory says was announced.
func TestDiscoveryRemoval(t *testing.T) {
	broker := mqtttest.Start(t)
	dir := t.TempDir()
	cfg := testMQTT(broker.Addr())
	cfg.Discovery = true
	runOnce := func(device string, discovery bool) {
		c := cfg
		c.Discovery = discovery
		p, err := New(c, device, quiet(), nil, WithStateDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		// Its first connection's messages sent, the announced entities
		// recorded.
		wait.For(t, 5*time.Second, "the discovery recorded", func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.discoverySaved
		})
		shutdown(p, time.Second)
	}
	retained := func() map[string]string {
		col := mqtttest.Collect(t, broker.Addr(), "homeassistant/#")
		col.Sync(t) // every retained config has come
		out := map[string]string{}
		for _, m := range col.All() {
			out[m.Topic] = string(m.Payload)
		}
		return out
	}
	runOnce("old", true)
	if r := retained(); len(r) != plainEntities() {
		t.Fatalf("after the first run, retained discovery: %v", r)
	}
	runOnce("new", true) // renamed
	r := retained()
	for topic := range r {
		if strings.Contains(topic, "posed_old_") {
			t.Errorf("renamed device's entry %s left behind", topic)
		}
	}
	if len(r) != plainEntities() {
		t.Errorf("after the rename, retained discovery: %v", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, discoveryStateFile))
	if err != nil || !strings.Contains(string(b), "posed_new_yaw") || strings.Contains(string(b), "posed_old_") {
		t.Errorf("state file: %s (%v)", b, err)
	}
	runOnce("new", false) // switched off
	if r := retained(); len(r) != 0 {
		t.Errorf("discovery switched off, still retained: %v", r)
	}
}

// plainEntities is the number of entities announced without commands.
func plainEntities() int {
	n := 0
	for _, s := range haSensors {
		if !s.command && !s.attention {
			n++
		}
	}
	return n
}

// The removal of stale entities is sent once, not again at every
// reconnection.
func TestDiscoveryRemovalSentOnce(t *testing.T) {
	broker := mqtttest.Start(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, discoveryStateFile), []byte(`["homeassistant/sensor/posed_gone_yaw/config"]`), 0o640)
	col := mqtttest.Collect(t, broker.Addr(), "homeassistant/sensor/posed_gone_yaw/config")
	proxy := mqtttest.NewGate(t, broker.Addr())
	cfg := testMQTT(proxy.Addr())
	cfg.Discovery = true
	p, err := New(cfg, "cam", quiet(), nil, WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, time.Second)
	col.WaitFor(t, "the stale entity cleared", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) == 1 })
	proxy.Cut()
	if !wait.Until(15*time.Second, func() bool { return p.reconnects.Load() > 0 }) {
		t.Fatal("no reconnection in 15 s")
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(col.All()); n != 1 {
		t.Errorf("the stale entity was cleared %d times, want once", n)
	}
}

// The attention entities' templates, rendered by Jinja2 against real
// attention messages: on the road, away at no target, and unknown (which
// must render None, Home Assistant's unknown, never "road" or OFF); the
// event entity declares every kind's start and end, and an event message
// carries its event_type.
func TestHomeAssistantAttention(t *testing.T) {
	cfg := testMQTT(mqtttest.FreeAddr(t))
	cfg.Discovery = true
	info := message.AttentionInfo{Profile: "driver", Targets: []string{"camera", "road"}, States: []string{"attentive", "glancing"},
		Events: []string{message.EventLongDistraction}}
	p, err := New(cfg, "cam", quiet(), nil, WithAttention(info))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, 100*time.Millisecond)
	doc := func(component, key string) map[string]any {
		p.mu.Lock()
		defer p.mu.Unlock()
		var m map[string]any
		if err := json.Unmarshal(p.retained["homeassistant/"+component+"/posed_cam_"+key+"/config"], &m); err != nil {
			t.Fatalf("%s %s: %v", component, key, err)
		}
		return m
	}
	yes, no := true, false
	msgs := []message.Attention{
		{Profile: "driver", Track: message.Some(1), Target: message.Label{Name: "road", Known: true, On: true}, State: "attentive", Attending: &yes},
		{Profile: "driver", Track: message.Some(1), Target: message.Label{On: true}, State: "glancing", Attending: &no},
		{Profile: "driver", Track: message.Some(1), Target: message.Label{On: true}, State: "unknown", Reason: "uncertain"},
		{Profile: "driver", Target: message.Label{On: true}, State: "unknown", Reason: "no_face"},
	}
	want := map[string][]string{
		"binary_sensor/attending": {"ON", "OFF", "None", "None"},
		"sensor/target":           {"road", "none", "None", "None"},
		"sensor/attention":        {"attentive", "glancing", "None", "None"},
	}
	for entity, w := range want {
		c, k, _ := strings.Cut(entity, "/")
		d := doc(c, k)
		if d["state_topic"] != "posed/cam/attention" || d["state_class"] != nil {
			t.Errorf("%s: %v", entity, d)
		}
		var pairs [][2]string
		for _, m := range msgs {
			b, _ := json.Marshal(m)
			pairs = append(pairs, [2]string{d["value_template"].(string), string(b)})
		}
		if got := renderJinja(t, pairs); !slices.Equal(got, w) {
			t.Errorf("%s renders %q, want %q", entity, got, w)
		}
		if opts, ok := d["options"].([]any); ok {
			for _, g := range w {
				if g != "None" && !slices.Contains(opts, any(g)) {
					t.Errorf("%s: %q is not among the options %v", entity, g, opts)
				}
			}
		}
	}
	if d := doc("binary_sensor", "attending"); d["name"] != "Eyes on the road" {
		t.Errorf("driver's binary sensor: %v", d["name"])
	}
	ev := doc("event", "attention_event")
	if ev["state_topic"] != "posed/cam/event" || fmt.Sprint(ev["event_types"]) != "[long_distraction_start long_distraction_end]" {
		t.Errorf("event entity %v", ev)
	}
}
