// Package message is posed's published vocabulary: the topics and
// commands under <prefix>/<device>/, the message types with their JSON
// encoders (allocation-free for the per-frame ones), and the JSON Schemas
// of every JSON topic (schema/, embedded as Schemas). It depends on the
// standard library alone, so that a stage that makes messages (attention,
// neutral) or a consumer written in Go need not compile the transport.
package message

import (
	"embed"
	"time"
)

// Schemas holds schema/<topic>.json for each JSON topic: pose, state,
// camera, stats, ha, error, primary, attention, event.
//
//go:embed schema/*.json
var Schemas embed.FS

// SchemaVersion is the version of every message's layout (field "schema").
// The JSON Schemas are in schema/.
const SchemaVersion = 1

// Topics under <prefix>/<device>/.
const (
	TopicAvailable = "available" // "online" / "offline", retained, QoS 1, also the last will
	TopicPose      = "pose"      // Pose, one per processed frame with faces (and one when they go)
	TopicState     = "state"     // State, retained
	TopicStats     = "stats"     // Stats, periodic
	TopicCamera    = "camera"    // Camera, retained
	TopicHA        = "ha"        // HA, retained, change-driven at a lower rate: what Home Assistant's sensors read
	TopicDetect    = "detect"    // "ON" / "OFF", retained: whether frames are processed (the privacy switch)
	TopicSnapshot  = "snapshot"  // an annotated JPEG, on the snapshot command
	TopicError     = "error"     // Error: a command that was refused, and why
	TopicPrimary   = "primary"   // Primary, with every pose message
	TopicAttention = "attention" // Attention, retained, when the primary face's attention changes
	TopicEvent     = "event"     // Event: distraction and engagement events, as they start and end
	TopicSet       = "set/"      // commands arrive on set/<command>
)

// Commands, on <prefix>/<device>/set/<command>.
const (
	CommandDetect   = "detect"   // ON / OFF (or true / false)
	CommandSnapshot = "snapshot" // any payload: publish an annotated JPEG on the snapshot topic
	CommandReload   = "reload"   // any payload: reload the configuration file, as SIGHUP does
	CommandZero     = "zero"     // empty, PRESS or seconds: measure the neutral pose; "clear": forget it
	CommandSpeed    = "speed"    // the vehicle's speed in km/h: the driver profile's warnings are off below attention.driver.min_speed
)

// OwnSubtopics are the topics under <prefix>/<device>/ that posed alone
// writes (the embedded broker refuses them to other clients).
var OwnSubtopics = []string{TopicAvailable, TopicPose, TopicState, TopicStats, TopicCamera, TopicHA, TopicDetect, TopicSnapshot, TopicError, TopicPrimary, TopicAttention, TopicEvent}

// Error is published on <prefix>/<device>/error when a command is
// refused; nothing was changed.
type Error struct {
	Schema  int       `json:"schema"`
	Device  string    `json:"device"`
	Command string    `json:"command"`
	Error   string    `json:"error"`
	Time    time.Time `json:"time"`
}

// Face is one face of a pose message. Angles in degrees (yaw > 0: the
// nose points to the image's left; pitch > 0: looking up); their *_std are
// the model's predictive standard deviations, calibrated on held-out
// persons where the model file says how. Box is [x1, y1, x2, y2] in pixels.
type Face struct {
	Track    uint64     `json:"track"`
	Box      [4]float64 `json:"box"`
	Score    float64    `json:"score"`
	View     string     `json:"view"` // the detector's view that found it: frontal, yaw+ (turned, nose towards the image's left) or yaw-
	Yaw      Num        `json:"yaw,omitzero"`
	Pitch    Num        `json:"pitch,omitzero"`
	Roll     Num        `json:"roll,omitzero"`
	YawStd   Num        `json:"yaw_std,omitzero"`
	PitchStd Num        `json:"pitch_std,omitzero"`
	RollStd  Num        `json:"roll_std,omitzero"`
	// With a neutral pose (zero) set, Yaw, Pitch and Roll are relative to
	// it and these are the camera-relative angles.
	RawYaw   Num `json:"raw_yaw,omitzero"`
	RawPitch Num `json:"raw_pitch,omitzero"`
	RawRoll  Num `json:"raw_roll,omitzero"`
	// Landmarks are the face network's five points on the face in this
	// frame, [x, y] in pixels: the right eye, the left eye, the nose tip,
	// the right and the left mouth corner (the person's right: on the
	// picture's left); absent where the network did not read them.
	Landmarks [5][2]float64 `json:"landmarks,omitzero"`
	// Target is the attention target the face looks at (null: none of
	// them), and Dwell the seconds it has looked there (or at none).
	Target Label `json:"target,omitzero"`
	Dwell  Num   `json:"dwell_s,omitzero"`
	// Attention is the face's state under the attention profile (absent
	// where the profile says nothing of this face: the passengers of a
	// driver); "unknown" with AttentionReason when the face's direction
	// cannot be trusted ("uncertain": its yaw or pitch σ is above
	// attention.max_std; "no_pose").
	Attention       string   `json:"attention,omitempty"`
	AttentionReason string   `json:"attention_reason,omitempty"`
	Zones           []string `json:"zones,omitempty"` // named zones the box centre is in
}

// Pose is published on <prefix>/<device>/pose.
type Pose struct {
	Schema    int       `json:"schema"`
	Device    string    `json:"device"`
	Camera    string    `json:"camera"`
	Seq       uint64    `json:"seq"`        // frame sequence number
	Captured  time.Time `json:"captured"`   // capture time, RFC 3339
	LatencyMs float64   `json:"latency_ms"` // capture to publish
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	Faces     []Face    `json:"faces"` // empty when the faces have gone
}

// Primary is published on <prefix>/<device>/primary with every pose
// message: the one face that matters, or null.
type Primary struct {
	Schema   int       `json:"schema"`
	Device   string    `json:"device"`
	Seq      uint64    `json:"seq"`
	Captured time.Time `json:"captured"`
	Face     *Face     `json:"face"`
}

// Attention is the primary face's attention, retained on
// <prefix>/<device>/attention and published when any field but Dwell and
// Time changes.
type Attention struct {
	Schema  int    `json:"schema"`
	Device  string `json:"device"`
	Profile string `json:"profile"` // none, driver, engagement
	Track   Num    `json:"track"`   // the primary face's track; null without one
	Target  Label  `json:"target"`  // the target it looks at; null: none, or unknown
	// Since is when it began to look there (or away), Dwell the seconds
	// from then to Time.
	Since time.Time `json:"since,omitzero"`
	Dwell Num       `json:"dwell_s"`
	// State: unknown (with Reason), or the profile's: looking, away
	// (none); attentive, glancing, distracted, unresponsive (driver);
	// disengaged, engaging, engaged, disengaging (engagement).
	State string `json:"state"`
	// Reason says why the state is unknown: no_face, uncertain, no_pose,
	// paused, camera_offline, stopped.
	Reason string `json:"reason,omitempty"`
	// Attending: the driver's eyes on the road (a target of
	// attention.driver.attending), or the face looking at the device
	// (engagement's targets; the camera target without a profile). Null
	// while unknown.
	Attending *bool     `json:"attending"`
	Active    []string  `json:"active"`  // the events in progress (their kinds)
	Neutral   string    `json:"neutral"` // the neutral pose: set, learnt, calibrating, none
	Time      time.Time `json:"time"`    // the frame it was decided on
}

// Event kinds (Event.Kind).
const (
	EventLongDistraction = "long_distraction" // driver: away for attention.driver.long
	EventTimeSharing     = "time_sharing"     // driver: glances away adding up to driver.shared within driver.window
	EventUnresponsive    = "unresponsive"     // driver: away for driver.unresponsive
	EventUnmonitored     = "unmonitored"      // driver: attention unknown for driver.unmonitored
	EventEngagement      = "engagement"       // engagement: from engaged to disengaged
)

// Event is a distraction or engagement event, published on
// <prefix>/<device>/event as it starts and as it ends (QoS 1, not
// retained).
type Event struct {
	Schema int    `json:"schema"`
	Device string `json:"device"`
	// ID is the event's own: the same id twice is one event delivered
	// twice (MQTT's QoS 1 may), to be dropped.
	ID        string `json:"id"`
	EventType string `json:"event_type"` // <kind>_<phase>: what Home Assistant's event entity reads
	Kind      string `json:"kind"`
	Phase     string `json:"phase"` // start, end
	Track     uint64 `json:"track"`
	// Time: when it started (start) or stopped holding (end); Since: when
	// its condition began (the gaze left the road, the first glance in
	// the window, the attention became unknown, the face looked at the
	// device).
	Time  time.Time `json:"time"`
	Since time.Time `json:"since"`
	// DurationS is how long the condition had held at Time: away
	// (long_distraction, unresponsive), glances summed in the window
	// (time_sharing; at its end, the time it lasted), unknown
	// (unmonitored), looking at the device (engagement).
	DurationS float64 `json:"duration_s"`
	Target    Label   `json:"target"`        // where the face looked at Time
	Why       string  `json:"why,omitempty"` // end: returned (to the road), away (from the device), window, monitored, lost, speed, paused, camera_offline, stopped, restarted
}

// Zero is the neutral pose in the state message.
type Zero struct {
	Yaw    float64   `json:"yaw"`
	Pitch  float64   `json:"pitch"`
	Roll   float64   `json:"roll"`
	Source string    `json:"source"` // config, measured (set/zero), or learnt (zero.learn)
	Frames int       `json:"frames,omitempty"`
	Set    time.Time `json:"set,omitzero"` // when it was measured (none for the configuration's)
}

// Learn is the learning of the neutral pose (zero.learn) in the state.
type Learn struct {
	Status   string  `json:"status"`   // calibrating, learnt
	Progress float64 `json:"progress"` // 0 to 1 while calibrating, by tenths
}

// State is the retained summary on <prefix>/<device>/state.
type State struct {
	Schema  int       `json:"schema"`
	Device  string    `json:"device"`
	Version string    `json:"version"`
	Model   string    `json:"model"`
	Camera  string    `json:"camera"`
	Status  string    `json:"status"` // running, paused (detection switched off), stopped
	Started time.Time `json:"started"`
	Faces   int       `json:"faces"` // faces in the last processed frame
	Zero    *Zero     `json:"zero,omitempty"`
	// Learning is present while the neutral pose is learnt (zero.learn)
	// and none is set by hand or in the configuration.
	Learning *Learn `json:"learning,omitempty"`
}

// Camera is the retained camera status on <prefix>/<device>/camera.
type Camera struct {
	Schema  int       `json:"schema"`
	Device  string    `json:"device"`
	Camera  string    `json:"camera"`
	Status  string    `json:"status"` // online, offline
	Error   string    `json:"error,omitempty"`
	RetryS  float64   `json:"retry_s,omitempty"`
	Width   int       `json:"width,omitempty"`
	Height  int       `json:"height,omitempty"`
	Changed time.Time `json:"changed"`
}

// Stats is published every stats interval on <prefix>/<device>/stats.
// Counters run from the start of the process.
type Stats struct {
	Schema          int     `json:"schema"`
	Device          string  `json:"device"`
	UptimeS         float64 `json:"uptime_s"`
	FramesIn        uint64  `json:"frames_in"`
	FramesProcessed uint64  `json:"frames_processed"`
	FramesDropped   uint64  `json:"frames_dropped"`
	FramesBad       uint64  `json:"frames_bad"` // wrong size or undecodable
	FPS             float64 `json:"fps"`        // processed, over the last interval
	Faces           uint64  `json:"faces"`      // faces reported, summed over frames
	PosePublished   uint64  `json:"pose_published"`
	PoseDropped     uint64  `json:"pose_dropped"` // disconnected, queue full or rate cap
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	Connected       bool    `json:"connected"`
	Reconnects      uint64  `json:"reconnects"`
	// ConnectionError is why the last connection attempt failed, while
	// not connected. Stats made while disconnected are dropped, not
	// queued, so a subscriber rarely sees it: /healthz and the log say it.
	ConnectionError string `json:"connection_error,omitempty"`
}

// HA is the retained message on <prefix>/<device>/ha that Home
// Assistant's sensors read: the primary face's angles (null without one)
// and the number of faces.
type HA struct {
	Schema int    `json:"schema"`
	Device string `json:"device"`
	Faces  int    `json:"faces"`
	Track  Num    `json:"track"`
	Yaw    Num    `json:"yaw"`
	Pitch  Num    `json:"pitch"`
	Roll   Num    `json:"roll"`
}
