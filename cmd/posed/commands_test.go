package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/edgepose/posed/publish/mqtttest"
)

// Commands over MQTT, against a running posed: the privacy switch stops
// processing and publishing (state "paused", no pose messages, no
// snapshot) and is remembered across a restart; a bad payload or an
// unknown command gets an error message and changes nothing; a snapshot
// is an annotated JPEG of the frame; Home Assistant is told of a switch,
// buttons and an image.
func TestCommands(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "#")
	seq, _ := yawSequence(t)
	cfg := testConfig(t, seq, "tcp://"+broker.Addr())
	cfg.Source.Loop = true
	cfg.MQTT.Discovery = true
	cfg.StateDir = t.TempDir()
	start := func() (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, cfg, quietLog(), io.Discard) }()
		return cancel, done
	}
	cancel, done := start()
	o := mqtt.NewClientOptions().AddBroker("tcp://" + broker.Addr()).SetClientID("commander")
	cl := mqtt.NewClient(o)
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer cl.Disconnect(50)
	send := func(cmd, payload string) {
		cl.Publish("posed/test/set/"+cmd, 1, false, payload).WaitTimeout(2 * time.Second)
	}
	count := func(topic string) int { return len(col.On(topic)) }
	last := func(topic string) string {
		ms := col.On(topic)
		if len(ms) == 0 {
			return ""
		}
		return string(ms[len(ms)-1].Payload)
	}
	// framesGoBy waits for a stats message later than the first since of
	// them, then for one saying the run has taken k frames more than it
	// did: frames went by, processed or not.
	statsIn := func(m mqtttest.Msg) uint64 {
		var s struct {
			FramesIn uint64 `json:"frames_in"`
		}
		json.Unmarshal(m.Payload, &s)
		return s.FramesIn
	}
	framesGoBy := func(what string, since int, k uint64) {
		t.Helper()
		col.WaitFor(t, what, 15*time.Second, func([]mqtttest.Msg) bool { return len(col.On("posed/test/stats")) > since })
		st := col.On("posed/test/stats")
		from := statsIn(st[len(st)-1])
		col.WaitFor(t, what, 15*time.Second, func([]mqtttest.Msg) bool {
			st := col.On("posed/test/stats")
			return statsIn(st[len(st)-1]) >= from+k
		})
	}
	col.WaitFor(t, "poses", 10*time.Second, func([]mqtttest.Msg) bool { return count("posed/test/pose") > 5 })
	if last("posed/test/detect") != "ON" {
		t.Errorf("detect is %q at start, want ON", last("posed/test/detect"))
	}

	// A snapshot: the annotated frame, as JPEG.
	send("snapshot", "PRESS")
	col.WaitFor(t, "a snapshot", 5*time.Second, func([]mqtttest.Msg) bool { return count("posed/test/snapshot") > 0 })
	img, err := jpeg.Decode(bytes.NewReader(col.On("posed/test/snapshot")[0].Payload))
	if err != nil || img.Bounds().Dx() != 384 {
		t.Errorf("snapshot: %v %v", err, img)
	}

	// Privacy: off.
	send("detect", "OFF")
	col.WaitFor(t, "detect OFF", 5*time.Second, func([]mqtttest.Msg) bool { return last("posed/test/detect") == "OFF" })
	col.WaitFor(t, "state paused", 5*time.Second, func([]mqtttest.Msg) bool {
		return strings.Contains(last("posed/test/state"), `"status":"paused"`)
	})
	// Pausing ends with a pose message without faces ("faces gone"),
	// which may come after the paused state.
	col.WaitFor(t, "the faces gone", 5*time.Second, func([]mqtttest.Msg) bool {
		var lastPose struct{ Faces []any }
		return json.Unmarshal([]byte(last("posed/test/pose")), &lastPose) == nil && lastPose.Faces != nil && len(lastPose.Faces) == 0
	})
	poses := count("posed/test/pose")
	send("snapshot", "PRESS")
	send("detect", "maybe")
	send("frobnicate", "1")
	col.WaitFor(t, "three errors", 5*time.Second, func([]mqtttest.Msg) bool { return count("posed/test/error") >= 3 })
	errs := ""
	sch := mqtttest.Schemas(t)
	for _, m := range col.On("posed/test/pose") {
		v, _ := jsonschemaUnmarshal(m.Payload)
		if err := sch["pose"].Validate(v); err != nil {
			t.Errorf("pose message does not match its schema: %v\n%s", err, m.Payload)
		}
	}
	for _, m := range col.On("posed/test/error") {
		errs += string(m.Payload) + "\n"
		v, _ := jsonschemaUnmarshal(m.Payload)
		if err := sch["error"].Validate(v); err != nil {
			t.Errorf("error message does not match its schema: %v", err)
		}
	}
	for _, want := range []string{"detection is off", `\"maybe\" is not ON or OFF`, `unknown command \"frobnicate\"`} {
		if !strings.Contains(errs, want) {
			t.Errorf("no error saying %s:\n%s", want, errs)
		}
	}
	// A second of frames taken while paused (stats every second).
	framesGoBy("15 frames taken while paused", len(col.On("posed/test/stats")), 15)
	if n := count("posed/test/pose"); n != poses || last("posed/test/detect") != "OFF" || count("posed/test/snapshot") != 1 {
		t.Errorf("while paused: %d pose messages (had %d), detect %q, %d snapshots", n, poses, last("posed/test/detect"), count("posed/test/snapshot"))
	}

	// The switch outlives a restart.
	cancel()
	<-done
	stats := len(col.On("posed/test/stats"))
	cancel, done = start()
	framesGoBy("15 frames taken by the restarted run", stats, 15)
	if n := count("posed/test/pose"); n != poses || !strings.Contains(last("posed/test/state"), `"status":"paused"`) {
		t.Errorf("after a restart with detection off: %d pose messages (had %d), state %s", n, poses, last("posed/test/state"))
	}
	send("detect", "ON")
	col.WaitFor(t, "poses again", 10*time.Second, func([]mqtttest.Msg) bool { return count("posed/test/pose") > poses+3 })
	if !strings.Contains(last("posed/test/state"), `"status":"running"`) {
		t.Errorf("state after ON: %s", last("posed/test/state"))
	}
	cancel()
	<-done

	kinds := map[string]bool{}
	for _, m := range col.All() {
		if strings.HasPrefix(m.Topic, "homeassistant/") && len(m.Payload) > 0 {
			kinds[strings.Split(m.Topic, "/")[1]] = true
			var d map[string]any
			json.Unmarshal(m.Payload, &d)
			if ct, ok := d["command_topic"].(string); ok && !strings.HasPrefix(ct, "posed/test/set/") {
				t.Errorf("%s: command_topic %s", m.Topic, ct)
			}
		}
	}
	for _, k := range []string{"sensor", "switch", "button", "image"} {
		if !kinds[k] {
			t.Errorf("no Home Assistant %s announced (%v)", k, kinds)
		}
	}
}

func jsonschemaUnmarshal(b []byte) (any, error) { return jsonschema.UnmarshalJSON(bytes.NewReader(b)) }

// Through the embedded broker: a user of mqtt.embedded_users may send a
// command and posed carries it out; an anonymous client's command never
// reaches posed.
func TestCommandsEmbeddedBroker(t *testing.T) {
	seq, _ := yawSequence(t)
	addr := mqtttest.FreeAddr(t)
	users := filepath.Join(t.TempDir(), "readers")
	os.WriteFile(users, []byte("ha:ha-secret\n"), 0o600)
	cfg := testConfig(t, seq, "embedded")
	cfg.MQTT.Listen = addr
	cfg.MQTT.EmbeddedUsers = users
	cfg.Source.Loop = true
	stop := background(cfg)
	defer stop()
	col := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-secret").
		SetConnectRetry(true).SetConnectRetryInterval(100*time.Millisecond), "posed/test/#")
	col.WaitFor(t, "detect ON", 10*time.Second, func([]mqtttest.Msg) bool {
		ms := col.On("posed/test/detect")
		return len(ms) > 0 && string(ms[len(ms)-1].Payload) == "ON"
	})
	send := func(o *mqtt.ClientOptions, payload string) {
		c := mqtt.NewClient(o.AddBroker("tcp://" + addr).SetConnectTimeout(2 * time.Second))
		if tok := c.Connect(); !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
			t.Fatalf("connect: %v", tok.Error())
		}
		c.Publish("posed/test/set/detect", 1, false, payload).WaitTimeout(2 * time.Second)
		c.Disconnect(50)
	}
	// The anonymous OFF, then a reader's ON: posed answers the ON after
	// anything the OFF would have done (one broker, commands in order).
	n := len(col.On("posed/test/detect"))
	send(mqtt.NewClientOptions().SetClientID("anon"), "OFF")
	send(mqtt.NewClientOptions().SetClientID("ha-on").SetUsername("ha").SetPassword("ha-secret"), "ON")
	col.WaitFor(t, "the reader's ON answered", 5*time.Second, func([]mqtttest.Msg) bool { return len(col.On("posed/test/detect")) > n })
	for _, m := range col.On("posed/test/detect")[n:] {
		if string(m.Payload) != "ON" {
			t.Errorf("an anonymous client switched detection off")
		}
	}
	send(mqtt.NewClientOptions().SetClientID("ha-cmd").SetUsername("ha").SetPassword("ha-secret"), "OFF")
	col.WaitFor(t, "detect OFF from the reader's command", 5*time.Second, func([]mqtttest.Msg) bool {
		ms := col.On("posed/test/detect")
		return string(ms[len(ms)-1].Payload) == "OFF"
	})
}
