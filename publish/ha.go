package publish

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
)

// Home Assistant: posed announces its sensors by MQTT discovery (retained
// configs under <discovery_prefix>/sensor/…/config, re-sent on every
// reconnect) and feeds them from their own topic, <prefix>/<device>/ha:
// the primary face's angles (primary.mode), sent when the number of faces changes or,
// at most every mqtt.ha_interval, when an angle moved by mqtt.ha_deadband
// or more. The pose topic at 10 Hz would flood Home Assistant's recorder.

// haSensor is one announced entity: a sensor reading the HA topic, or
// (command set) a switch, button or image of the commands.
type haSensor struct {
	component, key, name, field, unit, icon string
	command                                 bool // announced only when posed takes commands
	attention                               bool // announced only with the attention stage (WithAttention)
}

// haSensors are the Home Assistant entities posed announces.
var haSensors = []haSensor{
	{"sensor", "yaw", "Yaw", "yaw", "°", "mdi:axis-z-rotate-counterclockwise", false, false},
	{"sensor", "pitch", "Pitch", "pitch", "°", "mdi:axis-x-rotate-counterclockwise", false, false},
	{"sensor", "roll", "Roll", "roll", "°", "mdi:axis-y-rotate-counterclockwise", false, false},
	{"sensor", "faces", "Faces", "faces", "", "mdi:account-multiple", false, false},
	{"binary_sensor", "occupied", "Occupied", "faces", "", "mdi:home-account", false, false},
	{"switch", "detect", "Detection", message.CommandDetect, "", "mdi:face-recognition", true, false},
	{"button", "snapshot", "Snapshot", message.CommandSnapshot, "", "mdi:camera", true, false},
	{"button", "zero", "Set neutral pose", message.CommandZero, "", "mdi:crosshairs-gps", true, false},
	{"button", "reload", "Reload configuration", message.CommandReload, "", "mdi:reload", true, false},
	{"image", "snapshot_image", "Snapshot", message.TopicSnapshot, "", "mdi:image", true, false},
	{"binary_sensor", "attending", "Attending", "attending", "", "mdi:eye", false, true},
	{"sensor", "target", "Target", "target", "", "mdi:target", false, true},
	{"sensor", "attention", "Attention", "state", "", "mdi:account-eye", false, true},
	{"event", "attention_event", "Attention event", message.TopicEvent, "", "mdi:alert-circle", false, true},
}

// discoveryTopic is where entity s of device is announced.
func discoveryTopic(cfg Settings, device string, s haSensor) string {
	return cfg.DiscoveryTopic + "/" + s.component + "/posed_" + device + "_" + s.key + "/config"
}

// OwnTopics returns the topics that posed alone publishes for device:
// its topics under <prefix>/<device>/ (not set/…, where commands come
// from) and its Home Assistant discovery entries.
func OwnTopics(cfg Settings, device string) []string {
	var out []string
	for _, t := range message.OwnSubtopics {
		out = append(out, cfg.Prefix+"/"+device+"/"+t)
	}
	for _, s := range haSensors {
		out = append(out, discoveryTopic(cfg, device, s))
	}
	return out
}

// CommandTopics returns the filter of device's command topics.
func CommandTopics(cfg Settings, device string) string {
	return cfg.Prefix + "/" + device + "/" + message.TopicSet + "#"
}

// PictureTopics are posed's topics that carry the camera's pictures:
// the snapshot.
func PictureTopics(cfg Settings, device string) []string {
	return []string{cfg.Prefix + "/" + device + "/" + message.TopicSnapshot}
}

// supportURL is posed's home, Home Assistant's origin support_url.
const supportURL = "https://github.com/edgepose/posed"

// discovery builds the discovery entries into p.retained and returns
// their topics (none when discovery is off).
func (p *Publisher) discovery() []string {
	if !p.cfg.Discovery {
		return nil
	}
	dev := map[string]any{
		"identifiers": []string{"posed_" + p.device}, "name": "posed " + p.device,
		"model": "posed head-pose daemon", "manufacturer": "posed", "sw_version": p.version,
	}
	if p.configURL != "" {
		dev["configuration_url"] = p.configURL
	}
	// Unavailable while posed is offline or its camera is.
	avail := []map[string]string{
		{"topic": p.base + message.TopicAvailable},
		{"topic": p.base + message.TopicCamera, "value_template": "{{ 'online' if value_json.status == 'online' else 'offline' }}"},
	}
	var topics []string
	for _, s := range haSensors {
		if s.command && p.commands == nil || s.attention && (p.attention == nil || s.component == "event" && len(p.attention.Events) == 0) {
			continue
		}
		cfg := map[string]any{
			"name": s.name, "unique_id": "posed_" + p.device + "_" + s.key,
			"object_id":         "posed_" + p.device + "_" + s.key,
			"availability":      avail,
			"availability_mode": "all",
			"icon":              s.icon,
			"device":            dev,
			"origin":            map[string]string{"name": "posed", "sw_version": p.version, "support_url": supportURL},
		}
		switch s.component {
		case "sensor":
			cfg["state_topic"] = p.base + message.TopicHA
			// A field that is null (no face) renders as None: Home
			// Assistant then shows the sensor as unknown.
			cfg["value_template"] = "{{ value_json." + s.field + " }}"
			cfg["state_class"] = "measurement"
		case "binary_sensor":
			if s.attention {
				break // attentionEntity's
			}
			// Someone there or not: on while posed publishes a face, as
			// an NVR's person occupancy (the faces count's sensor, read
			// as a state for automations).
			cfg["state_topic"] = p.base + message.TopicHA
			cfg["device_class"] = "occupancy"
			cfg["value_template"] = "{{ 'ON' if value_json." + s.field + " > 0 else 'OFF' }}"
			cfg["payload_on"], cfg["payload_off"] = "ON", "OFF"
		case "switch":
			// The privacy switch: available while posed is, whatever
			// the camera does.
			cfg["command_topic"] = p.base + message.TopicSet + s.field
			cfg["state_topic"] = p.base + message.TopicDetect
			cfg["payload_on"], cfg["payload_off"] = "ON", "OFF"
			cfg["availability"] = avail[:1]
		case "button":
			cfg["command_topic"] = p.base + message.TopicSet + s.field
			cfg["payload_press"] = "PRESS"
			cfg["availability"] = avail[:1]
		case "image":
			cfg["image_topic"] = p.base + s.field
			cfg["content_type"] = "image/jpeg"
		}
		if s.attention {
			p.attentionEntity(cfg, s)
		}
		if s.unit != "" {
			cfg["unit_of_measurement"] = s.unit
			cfg["suggested_display_precision"] = 1
		}
		b, _ := json.Marshal(cfg)
		t := discoveryTopic(p.cfg, p.device, s)
		p.retained[t] = b
		topics = append(topics, t)
	}
	return topics
}

// attentionEntity fills the discovery config of an attention entity: the
// retained attention topic (its fields as the entity's attributes) or the
// events topic. A state that is unknown renders None: Home Assistant shows
// the entity as unknown.
func (p *Publisher) attentionEntity(cfg map[string]any, s haSensor) {
	a := p.attention
	delete(cfg, "state_class") // states, not measurements
	cfg["state_topic"] = p.base + message.TopicAttention
	cfg["json_attributes_topic"] = p.base + message.TopicAttention
	switch s.key {
	case "attending":
		cfg["name"] = "Looking at the device"
		if a.Profile == "driver" {
			cfg["name"] = "Eyes on the road"
		}
		cfg["value_template"] = "{% if value_json.attending is none %}None{% elif value_json.attending %}ON{% else %}OFF{% endif %}"
		cfg["payload_on"], cfg["payload_off"] = "ON", "OFF"
	case "target":
		cfg["device_class"] = "enum"
		cfg["options"] = append(append([]string{}, a.Targets...), "none")
		cfg["value_template"] = "{% if value_json.state == 'unknown' %}None{% elif value_json.target is none %}none{% else %}{{ value_json.target }}{% endif %}"
	case "attention":
		cfg["device_class"] = "enum"
		cfg["options"] = a.States
		cfg["value_template"] = "{% if value_json.state == 'unknown' %}None{% else %}{{ value_json.state }}{% endif %}"
	case "attention_event":
		delete(cfg, "json_attributes_topic")
		cfg["state_topic"] = p.base + message.TopicEvent
		var types []string
		for _, k := range a.Events {
			types = append(types, k+"_start", k+"_end")
		}
		cfg["event_types"] = types
	}
}

// discoveryStateFile is the file, in the state directory, listing the
// discovery topics posed announced last.
const discoveryStateFile = "ha-discovery.json"

// staleDiscovery returns the discovery topics to clear: those announced
// by an earlier run (in the state directory) that this run does not
// announce, and, without a state directory, this device's own when
// discovery is off.
func (p *Publisher) staleDiscovery(current []string) []string {
	var old []string
	if p.stateDir != "" {
		if b, err := regular.ReadFile(filepath.Join(p.stateDir, discoveryStateFile)); err == nil {
			if err := json.Unmarshal(b, &old); err != nil {
				p.log.Warn("publish: ignoring a damaged discovery state file", "dir", p.stateDir, "err", err)
				old = nil
			}
		}
	}
	// With no record (no state directory), discovery off clears this
	// device's entries blindly, in case an earlier run announced them.
	if !p.cfg.Discovery && p.stateDir == "" {
		for _, s := range haSensors {
			old = append(old, discoveryTopic(p.cfg, p.device, s))
		}
	}
	var stale []string
	for _, t := range old {
		if !slices.Contains(current, t) && !slices.Contains(stale, t) {
			stale = append(stale, t)
		}
	}
	return stale
}

// saveDiscovery records the announced topics in the state directory.
func (p *Publisher) saveDiscovery() {
	if p.stateDir == "" {
		return
	}
	b, _ := json.Marshal(p.announced)
	if err := regular.WriteFile(filepath.Join(p.stateDir, discoveryStateFile), b); err != nil {
		p.log.Warn("publish: cannot record the Home Assistant entities announced", "err", err)
	}
}

// haUpdate publishes the summary of a frame with faces faces and the
// primary face prim (nil: none) on the HA topic if the number of faces
// changed, or if ha_interval has passed since the last one and an angle
// moved by ha_deadband or more.
func (p *Publisher) haUpdate(faces int, prim *message.Face, now time.Time) {
	h := message.HA{Schema: message.SchemaVersion, Device: p.device, Faces: faces}
	if prim != nil {
		h.Track, h.Yaw, h.Pitch, h.Roll = message.Some(float64(prim.Track)), round1(prim.Yaw), round1(prim.Pitch), round1(prim.Roll)
	}
	p.mu.Lock()
	last, sent := p.lastHA, !p.lastHATime.IsZero()
	send := !sent || h.Faces != last.Faces
	if !send && now.Sub(p.lastHATime) >= p.cfg.HAInterval {
		send = moved(h.Yaw, last.Yaw, p.cfg.HADeadband) || moved(h.Pitch, last.Pitch, p.cfg.HADeadband) ||
			moved(h.Roll, last.Roll, p.cfg.HADeadband)
	}
	if send {
		p.lastHA, p.lastHATime = h, now
	}
	p.mu.Unlock()
	if send {
		p.Retain(message.TopicHA, h)
	}
}

// moved says whether an angle changed by d or more (or appeared, or went).
func moved(a, b message.Num, d float64) bool {
	if !a.Set || !b.Set {
		return a.Set != b.Set
	}
	return math.Abs(a.V-b.V) >= max(d, 1e-9)
}

// round1 rounds to 0.1 degree: more digits are noise in Home Assistant.
func round1(v message.Num) message.Num {
	if !v.Set {
		return v
	}
	return message.Some(math.Round(v.V*10) / 10)
}
