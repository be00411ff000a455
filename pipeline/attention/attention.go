// Package attention is the frame's stage after the neutral pose: it says
// which named target each face looks at, and since when. A target is a
// region of head directions (yaw and pitch ranges, or a cone around a
// direction) in one of three frames:
//
//   - neutral: the angles as published, relative to the person's neutral
//     pose where one is set (a driver's road, mirrors, cluster);
//   - camera: the camera's frame, the estimate turned by the face's ray
//     (a television fixed in the room, seen by people anywhere in the frame);
//   - ray: the estimate itself, relative to the ray through the face: the
//     built-in target "camera", looking at the device (a robot's eyes, a
//     screen's camera), wherever the face is in the frame.
//
// Hysteresis keeps noise at a border from flickering: a face enters a
// target only `margin` degrees inside it and leaves it only `margin`
// degrees outside, and a new target must hold for `dwell` before it
// becomes the face's. See docs/internals.md, "Attention: where each face looks".
package attention

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/message"
)

// Frame is where a target's directions are measured.
type Frame int

const (
	Neutral Frame = iota // the published angles (relative to the neutral pose, if set)
	Camera               // the camera's frame: the estimate turned by the face's ray
	Ray                  // the estimate itself: relative to the ray through the face
)

// CameraTarget is the built-in target: looking at the device.
const CameraTarget = "camera"

// Target is a named region of head directions, in degrees.
type Target struct {
	Name  string
	Frame Frame
	// A box of directions: yaw in [Yaw[0], Yaw[1]], pitch in
	// [Pitch[0], Pitch[1]]; or, with Radius > 0, a cone of that
	// angular radius around (Yaw[0], Pitch[0]).
	Yaw, Pitch [2]float64
	Radius     float64
	// Fallback targets count only where no other target holds the face
	// (the built-in camera: a driver's road wins over it).
	Fallback bool
}

// centre is the target's central direction.
func (t *Target) centre() (yaw, pitch float64) {
	if t.Radius > 0 {
		return t.Yaw[0], t.Pitch[0]
	}
	return (t.Yaw[0] + t.Yaw[1]) / 2, (t.Pitch[0] + t.Pitch[1]) / 2
}

// contains reports whether (yaw, pitch) is inside the target shrunk by
// inset degrees (a negative inset grows it).
func (t *Target) contains(yaw, pitch, inset float64) bool {
	if t.Radius > 0 {
		return angleBetween(yaw, pitch, t.Yaw[0], t.Pitch[0]) <= t.Radius-inset
	}
	return yaw >= t.Yaw[0]+inset && yaw <= t.Yaw[1]-inset && pitch >= t.Pitch[0]+inset && pitch <= t.Pitch[1]-inset
}

// inside is how far (yaw, pitch) is inside the target, in degrees: the
// distance to its border, negative outside.
func (t *Target) inside(yaw, pitch float64) float64 {
	if t.Radius > 0 {
		return t.Radius - angleBetween(yaw, pitch, t.Yaw[0], t.Pitch[0])
	}
	in := min(yaw-t.Yaw[0], t.Yaw[1]-yaw, pitch-t.Pitch[0], t.Pitch[1]-pitch)
	if in >= 0 {
		return in
	}
	dy := max(t.Yaw[0]-yaw, 0, yaw-t.Yaw[1])
	dp := max(t.Pitch[0]-pitch, 0, pitch-t.Pitch[1])
	return -math.Hypot(dy, dp)
}

// angleBetween is the angle, in degrees, between the two head directions
// (the nose's direction of each pose, roll aside).
func angleBetween(y1, p1, y2, p2 float64) float64 {
	a, b := nose(y1, p1), nose(y2, p2)
	d := a[0]*b[0] + a[1]*b[1] + a[2]*b[2]
	return math.Acos(math.Max(-1, math.Min(1, d))) / deg
}

const deg = math.Pi / 180

// nose is the unit direction the head of pose (yaw, pitch) points to.
func nose(yaw, pitch float64) [3]float64 {
	r := rotation.Head(yaw, pitch, 0)
	return [3]float64{r[0][2], r[1][2], r[2][2]}
}

// Options of the stage.
type Options struct {
	Targets []Target
	// FOV is the camera's horizontal field of view in degrees: the face's
	// ray follows from it (focal length = half the width / tan(FOV/2)).
	FOV    float64
	Margin float64       // hysteresis, degrees
	Dwell  time.Duration // a new target holds this long before it counts
	// MaxStd: a face whose yaw or pitch standard deviation is above it
	// (degrees) looks at no target; its attention is unknown ("uncertain").
	// 0: no bound.
	MaxStd float64
	// Doubt: a face whose direction is nearer than Doubt times its σ
	// (the larger of yaw's and pitch's) to the border of the target it
	// would look at (or, looking at none, of the nearest target) is
	// uncertain too: its target could as well be another. 0: never.
	Doubt float64
	// Profile is the rules: ProfileNone, ProfileDriver or ProfileEngagement.
	Profile    string
	Driver     DriverRules
	Engagement EngagementRules
	// Clock is the wall clock that dates the speed (the system's if nil).
	Clock clock.Clock
}

// Profiles (config.Attention.Profile).
const (
	ProfileNone       = "none"       // targets only; states looking, away
	ProfileDriver     = "driver"     // the primary face is a driver (driver.go)
	ProfileEngagement = "engagement" // each face's engagement with the device (engagement.go)
)

// States without a profile.
const (
	StateLooking = "looking" // at a target
	StateAway    = "away"    // at none
	StateUnknown = "unknown" // see the reason
)

// Reasons for the state unknown.
const (
	ReasonNoFace    = "no_face"        // no primary face
	ReasonNoPose    = "no_pose"        // the face has no yaw and pitch
	ReasonUncertain = "uncertain"      // its yaw or pitch σ is above MaxStd
	ReasonPaused    = "paused"         // detection switched off
	ReasonOffline   = "camera_offline" // no frames
	ReasonStopped   = "stopped"        // posed stopped
)

// Stage follows each tracked face's target. It is used by the frame loop
// alone (not safe for concurrent use).
type Stage struct {
	o     Options
	names []string // names[i] is Targets[i].Name: what messages point to
	// attending[i]: target i counts as attending (the driver's task, or
	// the device for engagement and without a profile).
	attending  []bool
	faces      map[uint64]*faceState
	gen        uint64
	drv        driver
	events     []message.Event // of the last Apply or Suspend
	sum, last  message.Attention
	sent       bool                        // last was published
	activeBuf  [numDriverEvents + 1]string // sum.Active's storage
	lastActive [numDriverEvents + 1]string // last.Active's
	lastNow    time.Time
	counters   counters
	speed      speedGate
}

// faceState is one track's target and the target it may be moving to.
type faceState struct {
	target, pending  int // indices into the targets, -1: none
	since, pendingAt time.Time
	seen             uint64    // the last frame (gen) it was in
	seenAt           time.Time // and its time
	fresh            bool      // not yet known where it looks
	movedAt          time.Time // when the gaze moved to pending
	doubtAt          time.Time // the first frame of a doubt in progress (zero: none)
	inDoubt          bool      // doubtful for the dwell, and not clear for the dwell since
	clearAt          time.Time // in doubt: the first clear frame since
	eng              engagement
}

// New checks o and returns the stage.
func New(o Options) (*Stage, error) {
	if !(o.FOV > 0 && o.FOV < 180) {
		return nil, fmt.Errorf("attention: field of view %g°: want 0 < fov < 180", o.FOV)
	}
	if !(o.Margin >= 0 && o.Margin < 45) || o.Dwell < 0 {
		return nil, fmt.Errorf("attention: margin %g°, dwell %v: want 0 ≤ margin < 45 and dwell ≥ 0", o.Margin, o.Dwell)
	}
	if o.Profile == "" {
		o.Profile = ProfileNone
	}
	o.Clock = clock.Or(o.Clock)
	s := &Stage{o: o, faces: map[uint64]*faceState{}}
	s.drv.r = o.Driver
	s.o.Targets = append([]Target(nil), o.Targets...)
	// Fixed order (by name): which of two overlapping targets with the
	// same distance wins must not depend on a map.
	sort.Slice(s.o.Targets, func(i, j int) bool { return s.o.Targets[i].Name < s.o.Targets[j].Name })
	for _, t := range s.o.Targets {
		if t.Radius < 0 || t.Radius == 0 && (t.Yaw[0] >= t.Yaw[1] || t.Pitch[0] >= t.Pitch[1]) {
			return nil, fmt.Errorf("attention: target %q: an empty region", t.Name)
		}
		s.names = append(s.names, t.Name)
	}
	var attending []string
	switch o.Profile {
	case ProfileNone:
		attending = []string{CameraTarget}
	case ProfileDriver:
		attending = o.Driver.Attending
		if o.Driver.Long <= 0 || o.Driver.Unresponsive < o.Driver.Long || o.Driver.Window < o.Driver.Shared || o.Driver.Shared <= 0 || o.Driver.Unmonitored <= 0 {
			return nil, fmt.Errorf("attention: driver rules %+v: want long > 0, unresponsive ≥ long, 0 < shared ≤ window, unmonitored > 0", o.Driver)
		}
	case ProfileEngagement:
		attending = o.Engagement.Targets
		if o.Engagement.On < 0 || o.Engagement.Off < 0 {
			return nil, fmt.Errorf("attention: engagement delays on %v, off %v: want ≥ 0", o.Engagement.On, o.Engagement.Off)
		}
	default:
		return nil, fmt.Errorf("attention: profile %q: want none, driver or engagement", o.Profile)
	}
	s.attending = make([]bool, len(s.names))
	for _, a := range attending {
		i := slices.Index(s.names, a)
		if i < 0 && (o.Profile != ProfileNone) {
			return nil, fmt.Errorf("attention: the %s profile names %q, which is not a target", o.Profile, a)
		}
		if i >= 0 {
			s.attending[i] = true
		}
	}
	s.counters.init(s.names)
	s.sum = message.Attention{Profile: o.Profile, State: StateUnknown, Reason: ReasonNoFace, Active: s.activeBuf[:0]}
	return s, nil
}

// Apply sets the target, dwell and attention state of each face of a w×h
// frame seen at now (primary: the index of the primary face, -1 for none),
// and runs the profile's rules (Events, Summary). A face without a yaw and
// pitch, or whose σ is above MaxStd, looks at no known target: its
// attention is unknown. Tracks not seen in the frame are forgotten (an
// engagement in progress ends).
func (s *Stage) Apply(faces []message.Face, w, h int, now time.Time, primary int) {
	if s == nil {
		return
	}
	s.gen++
	s.events = s.events[:0]
	for i := range faces {
		f := &faces[i]
		st := s.faces[f.Track]
		if st == nil {
			st = &faceState{target: -1, pending: -1, since: now, pendingAt: now, fresh: true}
			s.faces[f.Track] = st
		}
		st.seen, st.seenAt = s.gen, now
		f.Target, f.Attention, f.AttentionReason = message.Label{On: true}, "", ""
		why := s.doubt(f)
		cand := -1
		if why == "" {
			cand = s.target(f, w, h, st)
			if sd := max(f.YawStd.V, f.PitchStd.V); s.o.Doubt > 0 && s.clearance(f, w, h, cand) < s.o.Doubt*sd {
				why = ReasonUncertain
			}
		}
		doubtful, wasInDoubt := why != "", st.inDoubt
		if why == ReasonUncertain && !st.fresh && !s.settle(st, true, now) {
			why = "" // not yet for dwell: the face keeps its last known target
		} else if why == "" && s.settle(st, false, now) {
			why = ReasonUncertain // in doubt until clear for dwell
		}
		if why != "" {
			// The last known target is kept for when the face is trusted
			// again; this frame says nothing of where it looks.
			f.Dwell = message.Num{}
			f.Attention, f.AttentionReason = StateUnknown, why
			if st.doubtAt.IsZero() {
				st.doubtAt = now
			}
			continue
		}
		switch {
		case doubtful:
			// A doubt shorter than the dwell: the last known target holds.
		case st.fresh:
			// A new face looks where it is first seen looking.
			st.target, st.pending, st.since, st.fresh = cand, cand, now, false
		case wasInDoubt:
			// Out of a doubt that lasted the dwell: the face looks where it
			// is seen now (the dwell has been served), since the doubt
			// began if that is elsewhere.
			if cand != st.target {
				st.target, st.since = cand, st.doubtAt
			}
			st.pending = cand
		default:
			s.follow(st, cand, now)
		}
		if !doubtful {
			st.doubtAt = time.Time{}
		}
		if st.target >= 0 {
			f.Target.Name, f.Target.Known = s.names[st.target], true
		}
		f.Dwell = message.Some(now.Sub(st.since).Seconds())
		switch s.o.Profile {
		case ProfileNone:
			f.Attention = StateAway
			if st.target >= 0 {
				f.Attention = StateLooking
			}
		case ProfileEngagement:
			s.events = st.eng.observe(s.events, &s.o.Engagement, now, st.target >= 0 && s.attending[st.target], st.since, f.Track, f.Target)
			f.Attention = st.eng.level
		}
	}
	if s.o.Profile == ProfileDriver {
		s.driverFrame(faces, now, primary)
	}
	for id, st := range s.faces {
		if st.seen != s.gen {
			if st.eng.engaged() {
				s.events = st.eng.end(s.events, st.seenAt, id, "lost")
			}
			delete(s.faces, id)
		}
	}
	s.summarise(faces, now, primary)
	s.counters.frame(&s.sum, s.events, s.lastNow, now)
	s.lastNow = now
}

// follow moves st towards the candidate target cand seen at now, with
// the dwell's hysteresis.
func (s *Stage) follow(st *faceState, cand int, now time.Time) {
	switch {
	case cand == st.target:
		st.pending = cand
	case cand != st.pending:
		// The gaze moved when the new target was first seen, or, if the
		// face was in doubt just before (a head that turns fast is often
		// uncertain while it turns), when the doubt began.
		st.pending, st.pendingAt, st.movedAt = cand, now, now
		if !st.doubtAt.IsZero() {
			st.movedAt = st.doubtAt
		}
	}
	if st.pending != st.target && now.Sub(st.pendingAt) >= s.o.Dwell {
		st.target, st.since = st.pending, st.movedAt
	}
}

// settle puts the dwell on doubt, as on targets, so that a face at the
// edge of its doubt band does not flicker between a target and unknown:
// a face goes into doubt once it has been doubtful for the dwell, and
// out of it once it has been clear for the dwell. It returns whether the
// face is in doubt.
func (s *Stage) settle(st *faceState, doubtful bool, now time.Time) bool {
	switch {
	case doubtful:
		st.clearAt = time.Time{}
		if st.doubtAt.IsZero() {
			st.doubtAt = now
		}
		if now.Sub(st.doubtAt) >= s.o.Dwell {
			st.inDoubt = true
		}
	case st.inDoubt:
		if st.clearAt.IsZero() {
			st.clearAt = now
		}
		if now.Sub(st.clearAt) >= s.o.Dwell {
			st.inDoubt, st.clearAt = false, time.Time{}
		}
	}
	return st.inDoubt
}

// doubt is why face f's direction cannot be trusted, "" if it can.
func (s *Stage) doubt(f *message.Face) string {
	switch {
	case !f.Yaw.Set || !f.Pitch.Set:
		return ReasonNoPose
	case s.o.MaxStd > 0 && (f.YawStd.Set && f.YawStd.V > s.o.MaxStd || f.PitchStd.Set && f.PitchStd.V > s.o.MaxStd):
		return ReasonUncertain
	}
	return ""
}

// driverFrame runs the driver's rules on the primary face (the driver);
// the other faces are passengers, of whom the profile says nothing.
func (s *Stage) driverFrame(faces []message.Face, now time.Time, primary int) {
	gated := s.speed.gated(s.o.Driver, s.o.Clock.Now())
	if primary < 0 || primary >= len(faces) {
		s.events = s.drv.observe(s.events, now, false, false, now, 0, message.Label{}, gated)
		return
	}
	f := &faces[primary]
	st := s.faces[f.Track]
	known := f.AttentionReason == ""
	onTask := known && st.target >= 0 && s.attending[st.target]
	s.events = s.drv.observe(s.events, now, known, onTask, st.since, f.Track, f.Target, gated)
	if known {
		f.Attention = s.drv.state(now)
	}
}

// Events returns, once, the events that started or ended in the last
// Apply or Suspend (valid until the next of those).
func (s *Stage) Events() []message.Event {
	if s == nil {
		return nil
	}
	evs := s.events
	s.events = s.events[:0]
	return evs
}

// Suspend says that no frame is seen any more (why: ReasonPaused,
// ReasonOffline or ReasonStopped) at now: every event in progress ends
// (dated by the last frame seen) and every face is forgotten; the
// driver's rules start again with the next face.
func (s *Stage) Suspend(now time.Time, why string) {
	if s == nil {
		return
	}
	s.events = s.events[:0]
	end := s.lastNow
	if end.IsZero() {
		end = now
	}
	s.events = s.drv.endAll(s.events, end, why)
	s.drv.reset()
	for id, st := range s.faces {
		if st.eng.engaged() {
			s.events = st.eng.end(s.events, st.seenAt, id, why)
		}
		delete(s.faces, id)
	}
	s.counters.frame(nil, s.events, time.Time{}, now)
	s.sum.Track, s.sum.Target, s.sum.Since, s.sum.Dwell = message.Num{}, message.Label{On: true}, time.Time{}, message.Num{}
	s.sum.State, s.sum.Reason, s.sum.Attending, s.sum.Active, s.sum.Time = StateUnknown, why, nil, s.activeBuf[:0], now
	s.lastNow = time.Time{}
}

// summarise makes the attention summary of the primary face.
func (s *Stage) summarise(faces []message.Face, now time.Time, primary int) {
	m := &s.sum
	m.Time, m.Active = now, s.activeBuf[:0]
	if s.o.Profile == ProfileDriver {
		m.Active = s.drv.activeKinds(m.Active)
	}
	if primary < 0 || primary >= len(faces) {
		m.Track, m.Target, m.Since, m.Dwell, m.Attending = message.Num{}, message.Label{On: true}, time.Time{}, message.Num{}, nil
		m.State, m.Reason = StateUnknown, ReasonNoFace
		return
	}
	f := &faces[primary]
	st := s.faces[f.Track]
	m.Track, m.Target, m.Dwell = message.Some(float64(f.Track)), f.Target, f.Dwell
	if m.Dwell.Set {
		m.Dwell.V = message.Hundredths(m.Dwell.V) // as the face's, published
	}
	if f.AttentionReason != "" {
		m.Since, m.Attending, m.State, m.Reason = time.Time{}, nil, StateUnknown, f.AttentionReason
		return
	}
	m.Since, m.State, m.Reason = st.since, f.Attention, ""
	m.Attending = &notAttending
	if st.target >= 0 && s.attending[st.target] {
		m.Attending = &attending
	}
	if s.o.Profile == ProfileEngagement && st.eng.engaged() {
		m.Active = append(m.Active, message.EventEngagement)
	}
}

// The values Summary's Attending points to.
var attending, notAttending = true, false

// Summary is the primary face's attention as of the last Apply or
// Suspend, with the neutral pose's status (set, learnt, calibrating,
// none); changed says whether it differs from the last one returned as
// changed (Dwell and Time aside): the attention topic is change-driven.
func (s *Stage) Summary(neutral string) (m *message.Attention, changed bool) {
	if s == nil {
		return nil, false
	}
	s.sum.Neutral = neutral
	a, b := &s.sum, &s.last
	changed = !s.sent || a.Profile != b.Profile || a.Track != b.Track || a.Target != b.Target || !a.Since.Equal(b.Since) ||
		a.State != b.State || a.Reason != b.Reason || a.Neutral != b.Neutral || !slices.Equal(a.Active, b.Active) ||
		(a.Attending == nil) != (b.Attending == nil) || a.Attending != nil && *a.Attending != *b.Attending
	if changed {
		s.sent = true
		s.last = s.sum
		s.last.Active = append(s.lastActive[:0], s.sum.Active...)
	}
	return &s.sum, changed
}

// target is the target face f looks at: among those that contain its
// direction, the one whose centre is nearest. The face's current target
// holds until it is margin degrees outside it; another must be entered
// margin degrees inside.
func (s *Stage) target(f *message.Face, w, h int, st *faceState) int {
	if !f.Yaw.Set || !f.Pitch.Set {
		return -1
	}
	cur := -1
	if st != nil {
		cur = st.target
	}
	for _, fallback := range [2]bool{false, true} {
		best, bestD := -1, math.Inf(1)
		for i := range s.o.Targets {
			t := &s.o.Targets[i]
			if t.Fallback != fallback {
				continue
			}
			yaw, pitch := s.direction(f, t.Frame, w, h)
			inset := s.o.Margin
			if i == cur {
				inset = -s.o.Margin
			}
			if !t.contains(yaw, pitch, inset) {
				continue
			}
			cy, cp := t.centre()
			if d := angleBetween(yaw, pitch, cy, cp); d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// clearance is how far, in degrees, face f's direction is from the border
// of target i (inside it), or, for i < 0, from the nearest target (outside
// them all); +Inf without targets.
func (s *Stage) clearance(f *message.Face, w, h int, i int) float64 {
	if i >= 0 {
		t := &s.o.Targets[i]
		yaw, pitch := s.direction(f, t.Frame, w, h)
		return math.Abs(t.inside(yaw, pitch))
	}
	d := math.Inf(1)
	for j := range s.o.Targets {
		t := &s.o.Targets[j]
		yaw, pitch := s.direction(f, t.Frame, w, h)
		d = min(d, math.Abs(t.inside(yaw, pitch)))
	}
	return d
}

// direction is the face's head direction (yaw, pitch) in frame fr.
func (s *Stage) direction(f *message.Face, fr Frame, w, h int) (yaw, pitch float64) {
	yaw, pitch = f.Yaw.V, f.Pitch.V
	if fr == Neutral {
		return yaw, pitch
	}
	// The estimate itself: the camera's angles (raw) where a neutral pose
	// made the published ones relative.
	roll := f.Roll.V
	if f.RawYaw.Set {
		yaw, pitch, roll = f.RawYaw.V, f.RawPitch.V, f.RawRoll.V
	}
	if fr == Ray {
		return yaw, pitch
	}
	ry, rp := s.Ray(f.Box, w, h)
	cy, cp, _ := rotation.Head(ry, rp, 0).Mul(rotation.Head(yaw, pitch, roll)).Angles()
	return cy, cp
}

// Ray is the pose, in the camera's frame, of a head at box that looks
// straight into the lens: the direction back along its ray. A face right
// of the image's centre that looks at the camera turns its nose to the
// image's left (yaw > 0); one above the centre looks down (pitch < 0).
func (s *Stage) Ray(box [4]float64, w, h int) (yaw, pitch float64) {
	f := float64(w) / 2 / math.Tan(s.o.FOV/2*deg)
	cx, cy := (box[0]+box[2])/2, (box[1]+box[3])/2
	return math.Atan((cx-float64(w)/2)/f) / deg, math.Atan((cy-float64(h)/2)/f) / deg
}

// Info is what Home Assistant is told of the stage: its profile, its
// targets, the profile's states and the kinds of its events.
func (s *Stage) Info() message.AttentionInfo {
	a := message.AttentionInfo{Profile: s.o.Profile, Targets: append([]string(nil), s.names...)}
	switch s.o.Profile {
	case ProfileNone:
		a.States = []string{StateLooking, StateAway}
	case ProfileDriver:
		a.States = []string{StateAttentive, StateGlancing, StateDistracted, StateUnresponsive}
		a.Events = driverKinds[:]
	case ProfileEngagement:
		a.States = []string{LevelDisengaged, LevelEngaging, LevelEngaged, LevelDisengaging}
		a.Events = []string{message.EventEngagement}
	}
	return a
}
