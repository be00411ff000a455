// Package config reads posed's YAML configuration: strict (an unknown key is
// an error), with every default in Default and a validation that lists each
// problem with its field path.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/edgepose/posed/internal/redact"
	"github.com/edgepose/posed/internal/regular"
)

// Config is the whole configuration. Field names are the YAML keys.
type Config struct {
	Device string `yaml:"device"` // device id in MQTT topics; default: DefaultDevice
	// StateDir is where posed keeps what must outlive a restart (the Home
	// Assistant entities it announced). Default: $STATE_DIRECTORY, which
	// systemd sets from the unit's StateDirectory=; "" keeps nothing.
	StateDir  string    `yaml:"state_dir"`
	Source    Source    `yaml:"source"`
	Model     Model     `yaml:"model"`
	Detect    Detect    `yaml:"detect"`
	Track     Track     `yaml:"track"`
	Zones     Zones     `yaml:"zones"`
	Primary   Primary   `yaml:"primary"`
	Zero      Zero      `yaml:"zero"`
	Attention Attention `yaml:"attention"`
	MQTT      MQTT      `yaml:"mqtt"`
	Metrics   Metrics   `yaml:"metrics"`
	Log       Log       `yaml:"log"`
	Research  Research  `yaml:"research"`

	// moved are the research keys this configuration gave where they were
	// before the research block (Warnings says where they went).
	moved []string
}

// Research holds what posed's measurements vary and a deployment leaves
// at its default: the refinement's stop and damping, a second, mirrored
// prediction, the mixture's temperature, and a shortened turned cascade.
// Each default is the one the model card measures.
type Research struct {
	Eps  float64 `yaml:"eps"`  // stop refining below this predicted move (box sizes)
	Gain float64 `yaml:"gain"` // factor on each predicted box move, in (0, 1]
	// Mirror also predicts from the mirrored face and averages (2× the
	// cost of a prediction).
	Mirror bool `yaml:"mirror"`
	// Temperature overrides the model file's temperature of the mixture
	// weights (0: the file's, chosen when it was trained).
	Temperature float64 `yaml:"temperature"`
	// TurnedStages runs the turned cascade's first stages only (0: all):
	// more turned faces of persons it never saw, and more false ones.
	TurnedStages int `yaml:"turned_stages"`
}

// movedKeys are the research keys' old places: a configuration that gives
// them there runs as before, and is told where they went.
type movedKeys struct {
	Eps          *float64 `yaml:"eps"`
	Gain         *float64 `yaml:"gain"`
	Mirror       *bool    `yaml:"mirror"`
	Temperature  *float64 `yaml:"temperature"`
	TurnedStages *int     `yaml:"turned_stages"`
}

// takeMoved puts the research keys given in their old places (model.*,
// detect.turned_stages) into the research block, where one given in both
// places takes the research block's value, and notes each.
func (c *Config) takeMoved(given func(path string) bool) {
	take := func(old, key string, set func()) {
		c.moved = append(c.moved, fmt.Sprintf("%s is research.%s now (posed still reads it there; move it, it will not be read there for ever)", old, key))
		if !given("research." + key) {
			set()
		}
	}
	m, d := &c.Model.Moved, &c.Detect.Moved
	if m.Eps != nil {
		take("model.eps", "eps", func() { c.Research.Eps = *m.Eps })
	}
	if m.Gain != nil {
		take("model.gain", "gain", func() { c.Research.Gain = *m.Gain })
	}
	if m.Mirror != nil {
		take("model.mirror", "mirror", func() { c.Research.Mirror = *m.Mirror })
	}
	if m.Temperature != nil {
		take("model.temperature", "temperature", func() { c.Research.Temperature = *m.Temperature })
	}
	if d.TurnedStages != nil {
		take("detect.turned_stages", "turned_stages", func() { c.Research.TurnedStages = *d.TurnedStages })
	}
	*m, *d = movedKeys{}, movedKeys{}
}

// Attention names where each face looks (pipeline/attention).
type Attention struct {
	// FOV is the camera's horizontal field of view in degrees: the ray
	// through a face follows from it (camera-frame targets).
	FOV    float64       `yaml:"fov"`
	Margin float64       `yaml:"margin"` // degrees inside a target to enter it, outside to leave it
	Dwell  time.Duration `yaml:"dwell"`  // a new target must hold this long to count
	// Camera is the angular radius of the built-in target "camera"
	// (looking at the device); 0: no such target.
	Camera  float64                    `yaml:"camera"`
	Targets map[string]AttentionTarget `yaml:"targets"`
	// MaxStd is the largest yaw or pitch standard deviation (degrees) at
	// which a face's direction is trusted; beyond it the face's attention
	// is unknown ("uncertain") and it looks at no target.
	MaxStd float64 `yaml:"max_std"`
	// Doubt: a face whose direction is nearer than Doubt times its σ to
	// the border of the target it would look at (or, at none, of the
	// nearest) is uncertain too. 0: never.
	Doubt float64 `yaml:"doubt"`
	// Profile is the rules that turn targets into states and events:
	// none, driver or engagement.
	Profile    string          `yaml:"profile"`
	Driver     DriverRules     `yaml:"driver"`
	Engagement EngagementRules `yaml:"engagement"`
}

// DriverRules are the driver profile's (docs/internals.md, "Attention": Euro
// NCAP's driver engagement assessment protocol, the EU's driver distraction
// warning regulation (ADDW, Delegated Regulation (EU) 2023/2590), openpilot).
type DriverRules struct {
	// Attending are the targets that count as attending to driving (the
	// road, the mirrors, the instrument cluster).
	Attending []string `yaml:"attending"`
	// Long is how long the gaze may stay away before a long distraction
	// (Euro NCAP: 3 s).
	Long time.Duration `yaml:"long"`
	// Shared within Window: glances away adding up to Shared within the
	// last Window are visual attention time sharing (Euro NCAP: 10 s in 30 s).
	Shared time.Duration `yaml:"shared"`
	Window time.Duration `yaml:"window"`
	// Unresponsive: away this long without a break (Euro NCAP: 6 s).
	Unresponsive time.Duration `yaml:"unresponsive"`
	// Unmonitored: the driver's attention unknown this long (face lost,
	// uncertain) says that posed cannot monitor (Euro NCAP: tell the
	// driver within 10 s; openpilot: 10 s of uncertainty).
	Unmonitored time.Duration `yaml:"unmonitored"`
	// MinSpeed, if above 0, gates the warnings on the vehicle's speed
	// (km/h, from set/speed): below it no event starts (ADDW: 20 km/h).
	// A speed older than SpeedTimeout is forgotten: the warnings are on.
	MinSpeed     float64       `yaml:"min_speed"`
	SpeedTimeout time.Duration `yaml:"speed_timeout"`
}

// EngagementRules are the engagement profile's (ROS4HRI's five levels):
// looking at one of Targets for On makes a face engaged; looking away
// for Off makes it disengaged.
type EngagementRules struct {
	Targets []string      `yaml:"targets"`
	On      time.Duration `yaml:"on"`
	Off     time.Duration `yaml:"off"`
}

// AttentionTarget is a region of head directions in degrees: yaw and
// pitch ranges, or a cone [yaw, pitch, radius]; in the frame "neutral"
// (relative to the person's neutral pose, the default), "camera" (the
// camera's frame, corrected by the face's ray: a target fixed in a room)
// or "ray" (relative to looking into the lens, wherever the face is: a
// target beside the camera, such as the screen it sits on).
type AttentionTarget struct {
	Yaw   []float64 `yaml:"yaw"`
	Pitch []float64 `yaml:"pitch"`
	Cone  []float64 `yaml:"cone"`
	Frame string    `yaml:"frame"`
}

// Source is where frames come from.
type Source struct {
	// Path is a V4L2 device (/dev/video0, /dev/v4l/by-id/…), a folder of
	// images, or a video file (.mjpeg/.mjpg, .y4m).
	Path   string  `yaml:"path"`
	Width  int     `yaml:"width"`
	Height int     `yaml:"height"`
	FPS    float64 `yaml:"fps"` // camera rate, or replay pace (0: as fast as posed processes it, every frame)
	// Unpaced replays as fast as posed processes (every frame) but stamps
	// the frames fps apart: a recording analysed with its own timing.
	Unpaced bool          `yaml:"unpaced"`
	Format  string        `yaml:"format"`  // camera: auto, yuyv, grey, mjpeg
	Buffers int           `yaml:"buffers"` // camera: driver buffers (2–4 keep frames fresh)
	Timeout time.Duration `yaml:"timeout"` // camera: a frame later than this is a failure
	Loop    bool          `yaml:"loop"`    // replay: start again at the end
	// Reopen is the first wait before re-opening a failed source; it
	// doubles up to ReopenMax.
	Reopen    time.Duration `yaml:"reopen"`
	ReopenMax time.Duration `yaml:"reopen_max"`
	// Rotate (degrees clockwise: 0, 90, 180, 270) and then Flip (none,
	// horizontal, vertical) turn frames upright before detection, for a
	// camera mounted sideways, upside down or seen in a mirror; boxes are
	// reported in the turned frame.
	Rotate int    `yaml:"rotate"`
	Flip   string `yaml:"flip"`
}

// Model is the pose model and its refinement (paper Algorithm 1); the
// defaults are pose.DefaultSettings, the settings the model card measures
// (the refinement's research settings are in Research).
type Model struct {
	Path       string `yaml:"path"`
	Iterations int    `yaml:"iterations"` // predictions per face and frame
	Average    bool   `yaml:"average"`    // report the mean of the iterations' angles, not the last
	// Expert is the profile expert's model file, which answers for the
	// faces the model finds turned (posectl train -profile): "" takes
	// MODEL-profile.gllim beside the model if there is one, "none" none.
	Expert string `yaml:"expert"`
	// Landmarks is the landmark expert's model file, which reads the
	// angles from the face network's five landmarks on each face
	// (posectl train -landmarks): "" takes MODEL-landmarks.gllim beside
	// the model if there is one, "none" none.
	Landmarks string `yaml:"landmarks"`

	// Moved reads eps, gain, mirror and temperature here, where they were
	// before the research block (Config.takeMoved).
	Moved movedKeys `yaml:",inline"`
}

// ExpertPath is the profile expert's file to load, "" for none.
func (m Model) ExpertPath() string { return m.beside(m.Expert, "-profile.gllim") }

// LandmarksPath is the landmark expert's file to load, "" for none.
func (m Model) LandmarksPath() string { return m.beside(m.Landmarks, "-landmarks.gllim") }

// beside is the file a companion key names: "none" none, "" the model's
// name with suffix if that file is there.
func (m Model) beside(key, suffix string) string {
	switch key {
	case "none":
		return ""
	case "":
		p := strings.TrimSuffix(m.Path, ".gllim") + suffix
		if _, err := os.Stat(p); err == nil && p != m.Path {
			return p
		}
		return ""
	}
	return key
}

// Detect configures the face detector.
type Detect struct {
	MinSize  int     `yaml:"min_size"`
	MaxSize  int     `yaml:"max_size"`
	Shift    float64 `yaml:"shift"`
	Scale    float64 `yaml:"scale"`
	IoU      float64 `yaml:"iou"`
	MinScore float64 `yaml:"min_score"`
	// Nested drops a detection with this share of its box inside a
	// heavier detection's (a second box on part of a face); 0 keeps it.
	Nested float64 `yaml:"nested"`
	// Turned runs the cascade for turned faces (|yaw| 40–90°, both ways,
	// infer/detect/cascade/turned) beside the frontal one; TurnedScore is
	// the smallest score of a turned face it reports.
	Turned      bool    `yaml:"turned"`
	TurnedScore float64 `yaml:"turned_score"`
	Every       int     `yaml:"every"` // run the full-frame detector every N frames while faces are tracked
	// Verify has the face network (infer/yunet) check each new face of the
	// cascades on a crop around it before it starts a track: a face only
	// where the network finds one with a confidence of at least
	// VerifyScore (0–1).
	Verify      bool    `yaml:"verify"`
	VerifyScore float64 `yaml:"verify_score"`
	// ScanEvery has the face network detect every N-th frame from the
	// first, in place of the cascades (0: never), over the whole frame
	// shrunk ScanShrink times in each direction (more for a frame over
	// 1280 pixels): its faces of a confidence of at least ScanScore start
	// and re-anchor tracks, those the cascades miss among them.
	ScanEvery  int     `yaml:"scan_every"`
	ScanScore  float64 `yaml:"scan_score"`
	ScanShrink int     `yaml:"scan_shrink"`
	// ScanTiles: every other scan looks at one of this many tiles of the
	// frame (2, 4, 6 or 9) at scan_shrink times its resolution, in turn,
	// instead of the whole frame: a face too small for the shrunk scan is
	// found within 2·ScanTiles scans. 0: off.
	ScanTiles int `yaml:"scan_tiles"`
	// ScanLooks: each scan looks again, on a crop where the face is 64
	// pixels wide, at up to this many of the faces it found too weakly
	// to report (0: off).
	ScanLooks int `yaml:"scan_looks"`
	// Confirm: a new face the pose model reads starts a track only where
	// the face network finds it again, with at least this confidence, on
	// a close look at the model's box (a crop of 1.5 of its sides at 128
	// pixels, the face about 85 wide). 0: off.
	Confirm float64 `yaml:"confirm"`
	// ConfirmSure: a close look at least this confident confirms the face;
	// a face found less surely is looked at again on its next two frames,
	// and ends if one of them misses it (published meanwhile unless
	// ConfirmHold). 0: every face found is sure.
	ConfirmSure float64 `yaml:"confirm_sure"`
	// ConfirmHold: a face found less surely than ConfirmSure is not
	// published until those two looks have found it too.
	ConfirmHold bool `yaml:"confirm_hold"`
	// ConfirmEvery: a tracked face the network has not found up close
	// for this many frames (a landmark look sure of it, or a close look)
	// gets a close look again, and ends if it misses the face: a phantom
	// passed once is not tracked on. 0: only new faces are looked at.
	ConfirmEvery int `yaml:"confirm_every"`
	// ConfirmHead: the close look also asks a classifier trained on the
	// network's features at faces and at the things it takes for faces
	// in face-free scenes (infer/detect's look head), and finds no face
	// where it sees none.
	ConfirmHead bool `yaml:"confirm_head"`

	// Moved reads turned_stages here, where it was before the research
	// block (Config.takeMoved).
	Moved movedKeys `yaml:",inline"`
}

// Track configures face tracking between frames.
type Track struct {
	// MaxFaces: the faces tracked and published per frame, largest first
	// (everyone in a room, a meeting, a classroom: each costs a pose a
	// frame); Home Assistant's faces count and occupancy read them.
	MaxFaces  int     `yaml:"max_faces"`
	Smoothing float64 `yaml:"smoothing"`  // 0: none … 0.9: heavy (exponential, on the boxes, and the angles where turn_noise is 0)
	LostAfter int     `yaml:"lost_after"` // full-frame detections in a row that may miss a tracked face
	MinIoU    float64 `yaml:"min_iou"`    // a detection continues a track above this overlap
	// MaxStd drops a tracked face whose yaw uncertainty exceeds it (degrees,
	// as published: calibrated where the model is), unless a detection
	// found it on this frame: the model itself says it no longer sees a
	// face. Faces and background patches are far apart in σ for the
	// shipped model; docs/measured.md has the figures.
	MaxStd float64 `yaml:"max_std"`
	// StartStd: a detection starts a track only if the model's yaw
	// uncertainty from the detection's box is at most this (degrees): the
	// model's check of the detector. A phantom is a patch the model does
	// not take for a face; a face refused is tried again at the next
	// detection (docs/measured.md, "The model checks the detector", has
	// what it refuses). 0: off.
	StartStd float64 `yaml:"start_std"`
	// Unread: a face that start_std refuses but the face network confirms
	// (the scan found it, or the verification) and sees turned is
	// published with its box and no angles, its attention unknown
	// (no_pose), instead of not at all: the network sees a face there
	// that the pose model cannot read (a head turned far in yaw, pitch and
	// roll at once). It is read, with angles, once the model's
	// uncertainty falls to start_std. A face the network sees frontal is
	// still refused: the model's easiest view, unreadable, is more often
	// a phantom. Needs detect.verify or detect.scan_every; false: such
	// faces are not published.
	Unread bool `yaml:"unread"`
	// UnreadScore: with unread, a face the network's scan found at least
	// this confident of is published without angles too when it is seen
	// frontal (0: never).
	UnreadScore float64 `yaml:"unread_score"`
	// RecheckStd: a tracked face whose yaw uncertainty exceeds it (degrees)
	// makes the next frame a full-frame detection instead of waiting for
	// detect.every: a box that slid off a face (a fast turn) is found again
	// on the next frame. 0: wait for detect.every.
	RecheckStd float64 `yaml:"recheck_std"`
	// RecheckTurn: a tracked face whose yaw moves more than this many
	// degrees between two frames makes the next frame a full-frame
	// detection too: a head does not turn that fast, a box sliding off a
	// face does (the model then answers near its mean yaw). 0: off.
	RecheckTurn float64 `yaml:"recheck_turn"`
	// TurnNoise: the angles' filter (a Kalman filter on each angle and its
	// rate, docs/method.md §8): how freely a head's turning rate
	// changes, the spectral density of its angular acceleration in
	// (°/s)²/s. Larger follows faster turns with less lag and smooths
	// less. 0: the angles are smoothed as the boxes are (smoothing).
	TurnNoise float64 `yaml:"turn_noise"`
	// White: the share of the model's variance that changes from frame to
	// frame, which the filter averages away; the rest (a person's own
	// bias) stays in the published σ.
	White float64 `yaml:"white"`
	// LandmarkEvery: with a landmark expert, each face's landmarks are
	// read every this many frames (and whenever its yaw has moved 5°),
	// the correction they make to the model's angles carried between; 1:
	// every frame (a network run per face and frame).
	LandmarkEvery int `yaml:"landmark_every"`
	// Anchored: a tracked face's refinement starts from its detection's
	// box moved as the face moved, not from the last refined box (which
	// drifts, refined frame after frame).
	Anchored bool `yaml:"anchored"`
	// RefineEvery: anchored, a tracked face is refined in full (every
	// model.iterations) every this many frames, and whenever a detection
	// renews its anchor or its first prediction moved 3°; the frames
	// between read it with one prediction, as the change since. 1: in full
	// on every frame.
	RefineEvery int `yaml:"refine_every"`
}

// Zones say where posed looks and name parts of the frame. Rectangles are
// [x1, y1, x2, y2] in pixels of the turned frame (after source.rotate and
// source.flip).
type Zones struct {
	// Detect, if set, is where faces are detected (faster; a tracked face
	// that moves out of it is still followed).
	Detect []float64 `yaml:"detect"`
	// Named zones: each face message lists those its box centre is in.
	Named map[string][]float64 `yaml:"named"`
}

// Primary chooses the face that matters (published on …/primary and fed
// to Home Assistant and the zero).
type Primary struct {
	Mode  string    `yaml:"mode"`  // largest (default), nearest (to point), zone (the largest in zone)
	Point []float64 `yaml:"point"` // nearest: [x, y] in pixels
	Zone  string    `yaml:"zone"`  // zone: a named zone
}

// Zero is the neutral pose ("straight ahead" for this installation):
// angles are published relative to it, with the camera-relative ones
// beside them. The set/zero command measures one and keeps it in the
// state directory, where it wins over this.
type Zero struct {
	Yaw     float64 `yaml:"yaw"`
	Pitch   float64 `yaml:"pitch"`
	Roll    float64 `yaml:"roll"`
	Seconds float64 `yaml:"seconds"` // how long set/zero averages the primary face
	// Learn learns the neutral pose from the primary face while none is
	// set (pipeline/neutral); Forget is how long without a primary face
	// starts the learning again (the person left, another may come).
	Learn  bool          `yaml:"learn"`
	Forget time.Duration `yaml:"forget"`
}

// MQTT configures publishing.
type MQTT struct {
	Broker string `yaml:"broker"` // tcp://host:1883, ssl://host:8883, ws://…, or "embedded"
	Listen string `yaml:"listen"` // embedded broker address
	// EmbeddedAnonymous admits clients without a user name to the embedded
	// broker (to read posed's topics: only posed writes them).
	EmbeddedAnonymous bool `yaml:"embedded_anonymous"`
	// EmbeddedUsers is a file of "user:password" lines: users who may log
	// in to the embedded broker and read posed's topics.
	EmbeddedUsers  string        `yaml:"embedded_users"`
	Prefix         string        `yaml:"prefix"`
	ClientID       string        `yaml:"client_id"` // default: posed-<device>-<random>
	Username       string        `yaml:"username"`
	Password       string        `yaml:"password"`
	PasswordFile   string        `yaml:"password_file"`
	CA             string        `yaml:"ca"`
	Cert           string        `yaml:"cert"`
	Key            string        `yaml:"key"`
	QoS            int           `yaml:"qos"`      // pose messages
	MaxRate        float64       `yaml:"max_rate"` // pose messages per second (0: every processed frame)
	StatsInterval  time.Duration `yaml:"stats_interval"`
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	Discovery      bool          `yaml:"discovery"` // Home Assistant MQTT discovery
	DiscoveryTopic string        `yaml:"discovery_prefix"`
	// HAInterval is the least time between two messages on the Home
	// Assistant topic (<prefix>/<device>/ha) while faces are seen; they
	// are sent only when an angle moved by HADeadband degrees or more, or
	// the number of faces changed (at once).
	HAInterval time.Duration `yaml:"ha_interval"`
	HADeadband float64       `yaml:"ha_deadband"`
	// HAURL is the device's configuration_url in Home Assistant (default:
	// posed's HTTP page when metrics.listen is reachable from elsewhere).
	HAURL string `yaml:"ha_url"`
	Print bool   `yaml:"print"` // also print every message on standard output
}

// Metrics configures the HTTP endpoint.
type Metrics struct {
	Listen string `yaml:"listen"` // "" disables; default 127.0.0.1:9464
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// modelDefaults are pose.DefaultSettings with researchDefaults
// (pipeline/assemble's test holds them to it); Path "": FindModel.
func modelDefaults() Model { return Model{Iterations: 3, Average: true} }

// researchDefaults are the research block's: pose.DefaultSettings' and
// detect.DefaultParams'.
func researchDefaults() Research { return Research{Eps: 0.02, Gain: 1} }

// deviceID is what a device id may be: safe in MQTT topics and in Home
// Assistant's unique ids and discovery node ids.
var deviceID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ReadPassword returns the broker password: password, or the trimmed
// content of password_file.
func (m MQTT) ReadPassword() (string, error) {
	if m.PasswordFile == "" {
		return m.Password, nil
	}
	b, err := regular.ReadFile(m.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("mqtt.password_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ModelPlaces are where posed looks for default.gllim when model.path is
// not set, in order: next to the executable, in models/ of the working
// directory (a source tree), then the installed places (../share/posed
// beside the executable's folder, /usr/local/share/posed, /usr/share/posed).
func ModelPlaces() []string {
	var out []string
	exe, err := os.Executable()
	if err == nil {
		if e, err := filepath.EvalSymlinks(exe); err == nil {
			exe = e
		}
		out = append(out, filepath.Join(filepath.Dir(exe), "default.gllim"))
	}
	out = append(out, filepath.Join("models", "default.gllim"))
	if err == nil {
		out = append(out, filepath.Join(filepath.Dir(filepath.Dir(exe)), "share", "posed", "default.gllim"))
	}
	return append(out, "/usr/local/share/posed/default.gllim", "/usr/share/posed/default.gllim")
}

// FindModel returns the first of places that is a regular file, or an
// error that lists where it looked.
func FindModel(places []string) (string, error) {
	var seen []string
	for _, p := range places {
		if slices.Contains(seen, p) {
			continue
		}
		seen = append(seen, p)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("model.path is not set and no default.gllim was found in %s: set model.path or -model", strings.Join(seen, ", "))
}

// DefaultDevice is the device id of a configuration that sets none: the
// host name followed by the first six hex digits of the machine id
// (/etc/machine-id), so that boards sharing a host name ("raspberrypi")
// do not share topics and Home Assistant devices; the host name alone
// where there is no machine id.
func DefaultDevice() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "posed"
	}
	id, _ := regular.ReadFile("/etc/machine-id")
	return deviceOf(h, string(id))
}

func deviceOf(host, machineID string) string {
	id := strings.TrimSpace(machineID)
	if len(id) >= 6 && strings.Trim(id[:6], "0123456789abcdef") == "" {
		host = strings.TrimRight(DeviceFromHost(host), "-")
		if len(host) > 57 {
			host = host[:57]
		}
		return host + "-" + id[:6]
	}
	return DeviceFromHost(host)
}

// DeviceFromHost makes a device id of a host name: characters a device id
// may not hold become '-', and it is cut to 64.
func DeviceFromHost(h string) string {
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "posed"
	}
	return string(b)
}

// checkListen checks a listen address: host:port, port 0 to 65535.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// Default returns the configuration used for anything a file leaves out:
// each part's own defaults (detect.DefaultParams, DefaultNetworkParams,
// pose.DefaultSettings, track.DefaultConfig), which pipeline/assemble's
// test holds them to, and the daemon's.
func Default() Config {
	return Config{
		Source: Source{
			Path: "/dev/video0", Width: 640, Height: 480, FPS: 15, Format: "auto", Buffers: 3,
			Timeout: 2 * time.Second, Reopen: time.Second, ReopenMax: 30 * time.Second, Flip: "none",
		},
		Model: modelDefaults(), Research: researchDefaults(),
		Detect: Detect{MinSize: 60, MaxSize: 400, Shift: 0.1, Scale: 1.1, IoU: 0.2, MinScore: 2, Nested: 0.5, Turned: false, TurnedScore: 2, Every: 10,
			Verify: true, VerifyScore: 0.5, ScanEvery: 8, ScanScore: 0.5, ScanShrink: 2, ScanTiles: 4, ScanLooks: 1, Confirm: 0.4, ConfirmSure: 0.7, ConfirmEvery: 5, ConfirmHead: true},
		Track:   Track{MaxFaces: 16, Smoothing: 0.5, LostAfter: 3, MinIoU: 0.3, MaxStd: 60, StartStd: 30, Unread: true, UnreadScore: 0.5, RecheckStd: 30, RecheckTurn: 45, TurnNoise: 1e5, White: 0.4, LandmarkEvery: 5, Anchored: true, RefineEvery: 10},
		Primary: Primary{Mode: "largest"},
		Zero:    Zero{Seconds: 3, Forget: 30 * time.Second},
		Attention: Attention{FOV: 60, Margin: 3, Dwell: 200 * time.Millisecond, Camera: 15, MaxStd: 30, Doubt: 0.5, Profile: "none",
			Driver: DriverRules{Attending: []string{"road"}, Long: 3 * time.Second, Shared: 10 * time.Second, Window: 30 * time.Second,
				Unresponsive: 6 * time.Second, Unmonitored: 10 * time.Second, SpeedTimeout: 10 * time.Second},
			Engagement: EngagementRules{Targets: []string{"camera"}, On: time.Second, Off: 2 * time.Second}},
		MQTT:    MQTT{Broker: "tcp://127.0.0.1:1883", Listen: "127.0.0.1:1883", EmbeddedAnonymous: true, Prefix: "posed", QoS: 0, MaxRate: 10, StatsInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second, DiscoveryTopic: "homeassistant", HAInterval: 5 * time.Second, HADeadband: 1},
		Metrics: Metrics{Listen: "127.0.0.1:9464"},
		Log:     Log{Level: "info", Format: "text"},
	}
}

// Check finds the problems of a configuration that the parts it builds
// know of, one "field: why" line each (pipeline/assemble's Problems): config
// itself knows no part.
type Check func(Config) []string

// Load reads the YAML file at path over the defaults. The error lists every
// problem found, config's own and those of each check.
func Load(path string, checks ...Check) (Config, error) {
	data, err := regular.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data, checks...)
	if err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML over the defaults, strictly, and validates the result
// (Validate, with checks). Errors name the field (with its line), not the
// line alone.
func Parse(data []byte, checks ...Check) (Config, error) {
	c := Default()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	lines, p := fieldLines(&doc)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		p = append(p, withFields(err, lines)...)
		// A value of the wrong type (or an unknown key) leaves its field
		// at the default and the decoder goes on: check the rest too, so
		// that every problem is listed at once. Anything else is a
		// document that did not decode.
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return Config{}, p
		}
	}
	given := map[string]bool{}
	for _, f := range lines {
		given[f] = true
	}
	c.takeMoved(func(path string) bool { return given[path] })
	if err := c.Validate(checks...); err != nil {
		var vp Problems
		if !errors.As(err, &vp) {
			vp = Problems{err.Error()}
		}
		p = append(p, vp...)
	}
	if len(p) > 0 {
		return Config{}, p
	}
	return c, nil
}

// Problems is a list of configuration problems, one per field.
type Problems []string

func (p Problems) Error() string {
	if len(p) == 1 {
		return p[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(p), strings.Join(p, "\n  "))
}

// Warnings are what posed runs with all the same but a user should hear
// of, for c read from the file at path: files holding a secret that every
// user may read (secretWarnings), settings that do nothing (Inert), and
// research keys given where they were before the research block.
// -check-config prints them and a start logs them.
func (c Config) Warnings(path string) []string {
	return append(append(c.secretWarnings(path), c.Inert()...), c.moved...)
}

// secretWarnings names the files holding a secret of c — the
// configuration file itself where it holds mqtt.password or a broker URL
// with a password, the password
// file, the TLS key, the embedded broker's users — that users other than
// their owner and group may read, as ssh refuses a private key others can
// read. posed runs with them all the same (the operator may have reasons);
// -check-config prints the warnings and a start logs them.
func (c Config) secretWarnings(cfgPath string) []string {
	var out []string
	check := func(field, path string) {
		if path == "" {
			return
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm()&0o004 == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: %s is readable by every user (mode %04o): chmod o-r %s (posed's group is enough)",
			field, path, st.Mode().Perm(), path))
	}
	if c.MQTT.Password != "" {
		check("mqtt.password", cfgPath)
	}
	// A password in the broker's URL (tcp://user:secret@host) is one all
	// the same: paho logs in with it.
	if u, err := url.Parse(c.MQTT.Broker); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			check("mqtt.broker (its URL holds a password)", cfgPath)
		}
	}
	check("mqtt.password_file", c.MQTT.PasswordFile)
	check("mqtt.key", c.MQTT.Key)
	check("mqtt.embedded_users", c.MQTT.EmbeddedUsers)
	return out
}

// Inert names the settings of c that do nothing as c is set (a key set
// for a part that is off): posed runs all the same, -check-config prints
// them and a start logs them.
func (c Config) Inert() []string {
	var out []string
	d := c.Detect
	if c.Track.Unread && !d.Verify && d.ScanEvery == 0 {
		out = append(out, "track.unread does nothing without detect.verify or detect.scan_every: only the face network says a face the model cannot read is one")
	}
	if d.ScanEvery > 0 && d.ScanShrink == 1 && d.ScanTiles != 0 && d.ScanTiles != Default().Detect.ScanTiles {
		out = append(out, "detect.scan_tiles does nothing with detect.scan_shrink 1: the scan already sees the frame at its own resolution")
	}
	if d.ScanEvery == 0 {
		def := Default()
		dd := def.Detect
		for _, k := range []struct {
			key string
			set bool
		}{{"detect.scan_tiles", d.ScanTiles != dd.ScanTiles}, {"detect.scan_looks", d.ScanLooks != dd.ScanLooks}, {"detect.scan_shrink", d.ScanShrink != dd.ScanShrink},
			{"detect.scan_score", d.ScanScore != dd.ScanScore}, {"track.unread_score", c.Track.UnreadScore != def.Track.UnreadScore}} {
			if k.set {
				out = append(out, fmt.Sprintf("%s does nothing with detect.scan_every 0 (the face network never scans)", k.key))
			}
		}
	}
	return out
}

// Validate checks every field and returns all the problems as Problems:
// config's own, then each check's (the parts', pipeline/assemble.Problems).
func (c Config) Validate(checks ...Check) error {
	p := problems(badFloats(reflect.ValueOf(c), ""))
	p.device(c.Device)
	p.source(c.Source)
	p.model(c.Model)
	p.research(c.Research)
	p.detect(c.Detect)
	p.track(c.Track)
	p.mqtt(c.MQTT)
	p.zones(c.Zones, c.Primary)
	p.zonesInFrame(c.Zones, c.Source)
	p.zero(c.Zero)
	p.attention(c.Attention)
	p.logAndListen(c)
	for _, check := range checks {
		p = append(p, check(c)...)
	}
	if len(p) > 0 {
		return Problems(p)
	}
	return nil
}

// problems collects Validate's findings, one per field.
type problems Problems

func (p *problems) bad(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) device(d string) {
	bad := p.bad
	if d != "" && !deviceID.MatchString(d) {
		v := d
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		bad("device", "%q: want 1 to 64 letters, digits, '_' or '-' (it is part of MQTT topics and Home Assistant ids)", v)
	}
}

func (p *problems) source(s Source) {
	bad := p.bad
	if s.Path == "" {
		bad("source.path", "is empty: give a /dev/video device, an image folder or a video file")
	}
	if s.Width < 16 || s.Width > 8192 {
		bad("source.width", "%d is not in [16, 8192]", s.Width)
	}
	if s.Height < 16 || s.Height > 8192 {
		bad("source.height", "%d is not in [16, 8192]", s.Height)
	}
	if s.FPS < 0 || s.FPS > 1000 {
		bad("source.fps", "%g is not in [0, 1000]", s.FPS)
	}
	switch s.Rotate {
	case 0, 90, 180, 270:
	default:
		bad("source.rotate", "%d is not 0, 90, 180 or 270", s.Rotate)
	}
	switch s.Flip {
	case "none", "horizontal", "vertical":
	default:
		bad("source.flip", "%q is not none, horizontal or vertical", s.Flip)
	}
	switch s.Format {
	case "auto", "yuyv", "grey", "mjpeg":
	default:
		bad("source.format", "%q is not auto, yuyv, grey or mjpeg", s.Format)
	}
	if s.Buffers < 1 || s.Buffers > 32 {
		bad("source.buffers", "%d is not in [1, 32]", s.Buffers)
	}
	if s.Timeout <= 0 {
		bad("source.timeout", "%v is not positive", s.Timeout)
	}
	if s.Reopen <= 0 || s.ReopenMax < s.Reopen {
		bad("source.reopen", "%v (max %v): want 0 < reopen ≤ reopen_max", s.Reopen, s.ReopenMax)
	}
}

func (p *problems) model(m Model) {
	bad := p.bad
	if m.Iterations < 1 || m.Iterations > 20 {
		bad("model.iterations", "%d is not in [1, 20]", m.Iterations)
	}
}

func (p *problems) research(r Research) {
	if !(r.Eps >= 0) {
		p.bad("research.eps", "%g is not a number ≥ 0", r.Eps)
	}
	if !(r.Gain > 0 && r.Gain <= 1) {
		p.bad("research.gain", "%g is not in (0, 1]", r.Gain)
	}
}

func (p *problems) detect(d Detect) {
	bad := p.bad
	if d.Every < 1 {
		bad("detect.every", "%d: want at least 1 (every frame)", d.Every)
	}
	if d.ConfirmEvery < 0 {
		bad("detect.confirm_every", "%d: want 0 (off) or a number of frames", d.ConfirmEvery)
	}
	if d.ScanEvery < 0 {
		bad("detect.scan_every", "%d: want 0 (off) or a number of frames", d.ScanEvery)
	}
}

func (p *problems) track(t Track) {
	bad := p.bad
	if t.MaxFaces < 1 || t.MaxFaces > 64 {
		bad("track.max_faces", "%d is not in [1, 64]", t.MaxFaces)
	}
	if t.Smoothing < 0 || t.Smoothing >= 1 {
		bad("track.smoothing", "%g is not in [0, 1)", t.Smoothing)
	}
	if t.LostAfter < 0 {
		bad("track.lost_after", "%d is negative", t.LostAfter)
	}
	if t.MinIoU < 0 || t.MinIoU > 1 {
		bad("track.min_iou", "%g is not in [0, 1]", t.MinIoU)
	}
	if t.MaxStd <= 0 {
		bad("track.max_std", "%g is not positive", t.MaxStd)
	}
	if !(t.StartStd >= 0 && t.StartStd <= 180) {
		bad("track.start_std", "%g is not in [0, 180] degrees (0: off)", t.StartStd)
	}
	if !(t.UnreadScore >= 0 && t.UnreadScore < 1) {
		bad("track.unread_score", "%g is not in [0, 1) (0: off)", t.UnreadScore)
	}
	if !(t.RecheckStd >= 0 && t.RecheckStd <= 180) {
		bad("track.recheck_std", "%g is not in [0, 180] degrees (0: off)", t.RecheckStd)
	}
	if !(t.TurnNoise >= 0 && t.TurnNoise <= 1e8) {
		bad("track.turn_noise", "%g is not in [0, 1e8] (°/s)²/s (0: off)", t.TurnNoise)
	}
	if t.RefineEvery < 1 || t.RefineEvery > 1000 {
		bad("track.refine_every", "%d is not 1 to 1000 frames", t.RefineEvery)
	}
	if t.LandmarkEvery < 1 || t.LandmarkEvery > 1000 {
		bad("track.landmark_every", "%d is not 1 to 1000 frames", t.LandmarkEvery)
	}
	if !(t.White > 0 && t.White <= 1) {
		bad("track.white", "%g is not in (0, 1]", t.White)
	}
	if !(t.RecheckTurn >= 0 && t.RecheckTurn <= 360) {
		bad("track.recheck_turn", "%g is not in [0, 360] degrees (0: off)", t.RecheckTurn)
	}
}

func (p *problems) mqtt(m MQTT) {
	bad := p.bad
	if m.Broker != "embedded" && m.Broker != "" {
		u, err := url.Parse(m.Broker)
		switch {
		case err != nil:
			bad("mqtt.broker", "%q: %v", redact.URL(m.Broker), errors.Unwrap(err))
		case u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "tls" && u.Scheme != "mqtt" && u.Scheme != "mqtts" && u.Scheme != "ws" && u.Scheme != "wss":
			bad("mqtt.broker", "%q: scheme %q is not tcp, ssl, tls, mqtt, mqtts, ws or wss (or give \"embedded\")", redact.URL(m.Broker), u.Scheme)
		case u.Host == "":
			bad("mqtt.broker", "%q has no host", redact.URL(m.Broker))
		}
	}
	if m.Broker == "" {
		bad("mqtt.broker", "is empty: give a URL such as tcp://127.0.0.1:1883, or \"embedded\"")
	}
	if m.Prefix == "" || strings.ContainsAny(m.Prefix, "+#") || strings.HasPrefix(m.Prefix, "/") || strings.HasSuffix(m.Prefix, "/") {
		bad("mqtt.prefix", "%q: want a non-empty topic prefix without '+', '#' or leading/trailing '/'", m.Prefix)
	}
	if m.QoS < 0 || m.QoS > 2 {
		bad("mqtt.qos", "%d is not 0, 1 or 2", m.QoS)
	}
	if m.MaxRate < 0 {
		bad("mqtt.max_rate", "%g is negative", m.MaxRate)
	}
	if m.StatsInterval < time.Second {
		bad("mqtt.stats_interval", "%v is below 1s", m.StatsInterval)
	}
	if m.ConnectTimeout <= 0 {
		bad("mqtt.connect_timeout", "%v is not positive", m.ConnectTimeout)
	}
	if (m.Cert == "") != (m.Key == "") {
		bad("mqtt.cert", "a client certificate needs both cert and key")
	}
	if m.HAInterval < 0 {
		bad("mqtt.ha_interval", "%v is negative", m.HAInterval)
	}
	if m.HADeadband < 0 {
		bad("mqtt.ha_deadband", "%g is negative", m.HADeadband)
	}
	if m.HAURL != "" {
		if u, err := url.Parse(m.HAURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("mqtt.ha_url", "%q: want an http:// or https:// URL", m.HAURL)
		}
	}
	if m.Password != "" && m.PasswordFile != "" {
		bad("mqtt.password_file", "give password or password_file, not both")
	}
}

// zonesInFrame refuses a detection zone that misses a camera's frame
// (source.width × height, turned by source.rotate): nothing would ever be
// detected, and nothing said. A replay's frames have the size of its
// pictures, which the configuration does not know.
func (p *problems) zonesInFrame(z Zones, s Source) {
	if z.Detect == nil || len(z.Detect) != 4 || !strings.HasPrefix(s.Path, "/dev/") || s.Width <= 0 || s.Height <= 0 {
		return
	}
	w, h := float64(s.Width), float64(s.Height)
	if s.Rotate == 90 || s.Rotate == 270 {
		w, h = h, w
	}
	if r := z.Detect; r[0] >= w || r[1] >= h {
		p.bad("zones.detect", "%v lies outside the %g×%g frame (source.width, height, rotate): no face would be detected", r, w, h)
	}
}

func (p *problems) zones(z Zones, primary Primary) {
	bad := p.bad
	rect := func(field string, r []float64) {
		// Written so that NaN fails.
		if len(r) != 4 || !(r[0] >= 0 && r[1] >= 0 && r[2] > r[0] && r[3] > r[1] && r[2] < 1e6 && r[3] < 1e6) {
			bad(field, "%v: want [x1, y1, x2, y2] with 0 ≤ x1 < x2 and 0 ≤ y1 < y2 (pixels)", r)
		}
	}
	if z.Detect != nil {
		rect("zones.detect", z.Detect)
	}
	for name, r := range z.Named {
		if !deviceID.MatchString(name) {
			bad("zones.named", "%q: a zone name is 1–64 of [A-Za-z0-9_-]", name)
		}
		rect("zones.named."+name, r)
	}
	switch primary.Mode {
	case "largest":
	case "nearest":
		if p := primary.Point; len(p) != 2 || !(p[0] >= 0 && p[1] >= 0 && p[0] < 1e6 && p[1] < 1e6) {
			bad("primary.point", "%v: want [x, y] in pixels for mode nearest", primary.Point)
		}
	case "zone":
		if _, ok := z.Named[primary.Zone]; !ok {
			bad("primary.zone", "%q is not a named zone (zones.named)", primary.Zone)
		}
	default:
		bad("primary.mode", "%q is not largest, nearest or zone", primary.Mode)
	}
}

func (p *problems) zero(z Zero) {
	bad := p.bad
	for _, a := range []struct {
		f string
		v float64
	}{{"zero.yaw", z.Yaw}, {"zero.pitch", z.Pitch}, {"zero.roll", z.Roll}} {
		if !(a.v >= -180 && a.v <= 180) {
			bad(a.f, "%g is not an angle in [−180, 180]", a.v)
		}
	}
	if z.Forget < time.Second || z.Forget > 24*time.Hour {
		bad("zero.forget", "%v is not in [1s, 24h]", z.Forget)
	}
	if !(z.Seconds > 0 && z.Seconds <= 60) {
		bad("zero.seconds", "%g: want more than 0 and at most 60", z.Seconds)
	}
}

func (p *problems) attention(a Attention) {
	bad := p.bad
	if !(a.FOV > 0 && a.FOV < 180) {
		bad("attention.fov", "%g: want the camera's horizontal field of view, 0 < fov < 180 degrees", a.FOV)
	}
	if !(a.Margin >= 0 && a.Margin < 45) {
		bad("attention.margin", "%g is not in [0, 45) degrees", a.Margin)
	}
	if a.Dwell < 0 || a.Dwell > time.Minute {
		bad("attention.dwell", "%v is not in [0, 1m]", a.Dwell)
	}
	if !(a.Camera >= 0 && a.Camera <= 90) {
		bad("attention.camera", "%g is not in [0, 90] degrees", a.Camera)
	}
	if !(a.MaxStd > 0 && a.MaxStd <= 180) {
		bad("attention.max_std", "%g is not in (0, 180] degrees", a.MaxStd)
	}
	if !(a.Doubt >= 0 && a.Doubt <= 5) {
		bad("attention.doubt", "%g is not in [0, 5] (standard deviations)", a.Doubt)
	}
	p.attentionRules(a)
	for name, t := range a.Targets {
		f := "attention.targets." + name
		if !deviceID.MatchString(name) {
			bad("attention.targets", "%q: a target name is 1–64 of [A-Za-z0-9_-]", name)
		}
		if name == "camera" && a.Camera > 0 {
			bad(f, "camera is the built-in target (looking at the device): name yours otherwise, or set attention.camera: 0")
		}
		switch t.Frame {
		case "", "neutral", "camera", "ray":
		default:
			bad(f+".frame", "%q is not neutral, camera or ray", t.Frame)
		}
		angle := func(v float64) bool { return v >= -180 && v <= 180 }
		switch {
		case t.Cone != nil && (t.Yaw != nil || t.Pitch != nil):
			bad(f, "give yaw and pitch ranges, or a cone, not both")
		case t.Cone != nil:
			if len(t.Cone) != 3 || !angle(t.Cone[0]) || !angle(t.Cone[1]) || !(t.Cone[2] > 0 && t.Cone[2] <= 90) {
				bad(f+".cone", "%v: want [yaw, pitch, radius] in degrees, 0 < radius ≤ 90", t.Cone)
			}
		default:
			for _, r := range []struct {
				k string
				v []float64
			}{{"yaw", t.Yaw}, {"pitch", t.Pitch}} {
				if len(r.v) != 2 || !angle(r.v[0]) || !angle(r.v[1]) || !(r.v[0] < r.v[1]) {
					bad(f+"."+r.k, "%v: want [from, to] in degrees, from < to", r.v)
				}
			}
		}
	}
}

// attentionRules checks the profile and its rules: durations in range,
// and every target they name configured (or the built-in camera).
func (p *problems) attentionRules(a Attention) {
	bad := p.bad
	known := func(name string) bool {
		_, ok := a.Targets[name]
		return ok || name == "camera" && a.Camera > 0
	}
	names := func(field string, list []string) {
		if len(list) == 0 {
			bad(field, "name at least one target")
		}
		for _, n := range list {
			if !known(n) {
				bad(field, "%q is not a target: add it under attention.targets (or, for camera, keep attention.camera above 0)", n)
			}
		}
	}
	span := func(field string, d, lo, hi time.Duration) {
		if d < lo || d > hi {
			bad(field, "%v is not in [%v, %v]", d, lo, hi)
		}
	}
	d, e := a.Driver, a.Engagement
	switch a.Profile {
	case "none":
	case "driver":
		names("attention.driver.attending", d.Attending)
	case "engagement":
		names("attention.engagement.targets", e.Targets)
	default:
		bad("attention.profile", "%q is not none, driver or engagement", a.Profile)
	}
	span("attention.driver.long", d.Long, 100*time.Millisecond, time.Minute)
	span("attention.driver.shared", d.Shared, 100*time.Millisecond, time.Hour)
	span("attention.driver.window", d.Window, d.Shared, time.Hour)
	span("attention.driver.unresponsive", d.Unresponsive, d.Long, time.Hour)
	span("attention.driver.unmonitored", d.Unmonitored, 100*time.Millisecond, time.Hour)
	span("attention.driver.speed_timeout", d.SpeedTimeout, time.Second, time.Hour)
	if !(d.MinSpeed >= 0 && d.MinSpeed <= 300) {
		bad("attention.driver.min_speed", "%g is not in [0, 300] km/h", d.MinSpeed)
	}
	span("attention.engagement.on", e.On, 0, time.Minute)
	span("attention.engagement.off", e.Off, 0, time.Minute)
}

func (p *problems) logAndListen(c Config) {
	bad := p.bad
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "%q is not text or json", c.Log.Format)
	}
	if c.Metrics.Listen != "" {
		if err := checkListen(c.Metrics.Listen); err != nil {
			bad("metrics.listen", "%v", err)
		}
	}
	if err := checkListen(c.MQTT.Listen); err != nil {
		bad("mqtt.listen", "%v", err)
	}
}
