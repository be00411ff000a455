package attention_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	. "github.com/edgepose/posed/pipeline/attention"
)

// t0 is the scripts' first frame time; frames come every 100 ms.
var t0 = time.Unix(5000, 0)

const tick = 100 * time.Millisecond

// segment is a stretch of a script: the primary face looking at (yaw,
// pitch) for d, with standard deviation std (0: 2°), or no face (lost).
type segment struct {
	d          time.Duration
	yaw, pitch float64
	std        float64
	lost       bool
}

// timeline is what a script gave: every event, and each frame's state.
type timeline struct {
	start  time.Time // the first frame's
	events []message.Event
	states []string
	sums   []message.Attention // the summaries that changed
}

// play feeds the script to s, a frame every 100 ms from t0.
func play(t *testing.T, s *Stage, script ...segment) timeline {
	t.Helper()
	tl := timeline{start: t0}
	if last, ok := played[s]; ok {
		tl.start = last.Add(tick) // a script played after another goes on from it
	}
	now := tl.start
	for _, sg := range script {
		for end := now.Add(sg.d); now.Before(end); now = now.Add(tick) {
			var faces []message.Face
			prim := -1
			if !sg.lost {
				f := face(sg.yaw, sg.pitch)
				std := sg.std
				if std == 0 {
					std = 2
				}
				f.YawStd, f.PitchStd = message.Some(std), message.Some(std)
				faces, prim = []message.Face{f}, 0
			}
			s.Apply(faces, 640, 480, now, prim)
			played[s] = now
			tl.events = append(tl.events, s.Events()...)
			st := "-"
			if prim >= 0 {
				st = faces[0].Attention
			}
			tl.states = append(tl.states, st)
			if m, ok := s.Summary("none"); ok {
				c := *m
				c.Active = append([]string(nil), m.Active...)
				tl.sums = append(tl.sums, c)
			}
		}
	}
	return tl
}

// kinds lists the events as kind/phase@seconds from the first frame.
func (tl timeline) kinds() string {
	var b []string
	for _, e := range tl.events {
		b = append(b, fmt.Sprintf("%s/%s@%.1f", e.Kind, e.Phase, e.Time.Sub(tl.start).Seconds()))
	}
	return strings.Join(b, " ")
}

// played is the last frame each stage was given by play.
var played = map[*Stage]time.Time{}

// fromConfig is the stage of an attention block, as posed builds it
// (pipeline/assemble), with wall as its wall clock if given.
func fromConfig(a config.Attention, wall ...clock.Clock) (*Stage, error) {
	o := assemble.AttentionOptions(a)
	if len(wall) > 0 {
		o.Clock = wall[0]
	}
	return New(o)
}

func driverStage(t *testing.T, mod func(*config.Attention), wall ...clock.Clock) *Stage {
	t.Helper()
	a := config.Default().Attention
	a.Profile = "driver"
	a.Targets = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}},
		"mirror": {Cone: []float64{50, 0, 10}}}
	a.Driver.Attending = []string{"road", "mirror"}
	if mod != nil {
		mod(&a)
	}
	s, err := fromConfig(a, wall...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A long distraction starts exactly `long` after the gaze leaves the road
// (the first frame looking away: the dwell is backdated) and ends when it
// returns, dated by the first frame back; a mirror is not a distraction.
func TestLongDistraction(t *testing.T) {
	s := driverStage(t, nil)
	tl := play(t, s, segment{d: 2 * time.Second}, segment{d: 4 * time.Second, yaw: 75}, segment{d: 2 * time.Second},
		segment{d: 5 * time.Second, yaw: 50}, segment{d: time.Second})
	if got, want := tl.kinds(), "long_distraction/start@5.0 long_distraction/end@6.0"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	start, end := tl.events[0], tl.events[1]
	if start.Since != t0.Add(2*time.Second) || start.DurationS != 3 || !start.Target.Known && start.Target.Name != "" {
		t.Errorf("start %+v: want since 2 s, 3 s away", start)
	}
	if end.DurationS != 4 || end.Why != "returned" {
		t.Errorf("end %+v: want 4 s away, returned", end)
	}
	// States: attentive, glancing (once the 0.2 s dwell has confirmed the
	// glance) before 3 s away, distracted after, attentive again once the
	// return is confirmed.
	for i, want := range map[int]string{10: StateAttentive, 21: StateAttentive, 22: StateGlancing, 49: StateGlancing, 50: StateDistracted,
		61: StateDistracted, 62: StateAttentive, 80: StateAttentive} {
		if tl.states[i] != want {
			t.Errorf("frame %d (%.1f s): state %q, want %q", i, float64(i)/10, tl.states[i], want)
		}
	}
}

// Unresponsive past 6 s away; both events end together when the gaze
// comes back.
func TestUnresponsive(t *testing.T) {
	tl := play(t, driverStage(t, nil), segment{d: time.Second}, segment{d: 7 * time.Second, yaw: -70}, segment{d: time.Second})
	want := "long_distraction/start@4.0 unresponsive/start@7.0 unresponsive/end@8.0 long_distraction/end@8.0"
	if got := tl.kinds(); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if tl.states[75] != StateUnresponsive {
		t.Errorf("state at 7.5 s: %q", tl.states[75])
	}
}

// Time sharing accumulates across glances (each shorter than `long`) and
// forgets them after its window: five 2 s glances within 30 s start it at
// the fifth's end (10 s summed); it ends when the first glance leaves
// the window.
func TestTimeSharing(t *testing.T) {
	var script []segment
	for range 5 {
		script = append(script, segment{d: 3 * time.Second}, segment{d: 2 * time.Second, yaw: 45, pitch: -30})
	}
	script = append(script, segment{d: 30 * time.Second})
	tl := play(t, driverStage(t, nil), script...)
	// Glances at 3–5, 8–10, 13–15, 18–20, 23–25 s: 10 s summed at 25 s
	// (the window then reaches back to −5 s); at 33.1 s the first glance
	// has begun to leave it.
	want := "time_sharing/start@25.0 time_sharing/end@33.1"
	if got := tl.kinds(); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if e := tl.events[0]; e.Since != t0.Add(3*time.Second) || e.DurationS < 9.9 {
		t.Errorf("start %+v: since the first glance (3 s), 10 s summed", e)
	}
	// Four glances are not enough, however long the wait.
	tl = play(t, driverStage(t, nil), script[:8]...)
	if len(tl.events) != 0 {
		t.Errorf("four glances: %q", tl.kinds())
	}
}

// Uncertainty makes the state unknown, not road; the last known direction
// holds meanwhile (on the road: no distraction), and past `unmonitored`
// posed says it cannot monitor.
func TestUncertainIsUnknown(t *testing.T) {
	s := driverStage(t, nil)
	tl := play(t, s, segment{d: time.Second}, segment{d: 12 * time.Second, std: 40}, segment{d: time.Second})
	if tl.states[5] != StateAttentive || tl.states[50] != StateUnknown || tl.states[135] != StateAttentive {
		t.Errorf("states %q", tl.states)
	}
	// Doubt, like a target, holds for the 0.2 s dwell before it counts,
	// and so does the return to certainty: unknown from 1.2 to 13.2 s.
	if got, want := tl.kinds(), "unmonitored/start@11.2 unmonitored/end@13.2"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	var reasons []string
	for _, m := range tl.sums {
		reasons = append(reasons, m.State+"/"+m.Reason)
	}
	if got := strings.Join(reasons, " "); !strings.Contains(got, "unknown/uncertain") || strings.Contains(got, "attentive/uncertain") {
		t.Errorf("summaries %q", got)
	}
	for _, m := range tl.sums {
		if m.State == StateUnknown && (m.Attending != nil || m.Target.Known) {
			t.Errorf("an unknown summary says attending %v, target %+v", m.Attending, m.Target)
		}
	}
	// Looking away, then lost: still away (the head may have turned
	// beyond the detector), so the distraction comes.
	tl = play(t, driverStage(t, nil), segment{d: time.Second}, segment{d: time.Second, yaw: 70}, segment{d: 4 * time.Second, lost: true})
	if got, want := tl.kinds(), "long_distraction/start@4.0"; got != want {
		t.Errorf("away then lost: %q, want %q", got, want)
	}
}

// Below min_speed no warning starts; one in progress ends (speed); a
// speed older than speed_timeout is forgotten.
func TestSpeedGating(t *testing.T) {
	wall := clock.NewManual(time.Unix(9000, 0))
	s := driverStage(t, func(a *config.Attention) { a.Driver.MinSpeed = 20 }, wall)
	if err := s.SetSpeed(10); err != nil {
		t.Fatal(err)
	}
	if tl := play(t, s, segment{d: time.Second}, segment{d: 5 * time.Second, yaw: 75}); len(tl.events) != 0 {
		t.Errorf("at 10 km/h: %q", tl.kinds())
	}
	if err := s.SetSpeed(60); err != nil {
		t.Fatal(err)
	}
	tl := play(t, s, segment{d: time.Second, yaw: 75})
	if got := tl.kinds(); got != "long_distraction/start@0.0" {
		t.Errorf("speeding up while away: %q (the distraction starts at once)", got)
	}
	_ = s.SetSpeed(5)
	if got := play(t, s, segment{d: 200 * time.Millisecond, yaw: 75}).kinds(); got != "long_distraction/end@0.0" {
		t.Errorf("slowing down: %q", got)
	}
	wall.Advance(11 * time.Second) // the speed is stale: warnings on (away for 6.2 s by now)
	if got := play(t, s, segment{d: 200 * time.Millisecond, yaw: 75}).kinds(); got != "long_distraction/start@0.0 unresponsive/start@0.0" {
		t.Errorf("stale speed: %q", got)
	}
	for _, bad := range []float64{-1, 600} {
		if s.SetSpeed(bad) == nil {
			t.Errorf("speed %g accepted", bad)
		}
	}
}

// Pausing ends what is in progress and starts the rules again.
func TestSuspendEndsEvents(t *testing.T) {
	s := driverStage(t, nil)
	play(t, s, segment{d: time.Second}, segment{d: 4 * time.Second, yaw: 75})
	s.Suspend(t0.Add(time.Hour), ReasonPaused)
	evs := s.Events()
	if len(evs) != 1 || evs[0].Kind != message.EventLongDistraction || evs[0].Phase != "end" || evs[0].Why != ReasonPaused ||
		evs[0].Time != t0.Add(4900*time.Millisecond) {
		t.Fatalf("events on pause %+v", evs)
	}
	m, changed := s.Summary("none")
	if !changed || m.State != StateUnknown || m.Reason != ReasonPaused || len(m.Active) != 0 {
		t.Errorf("summary on pause %+v (changed %v)", m, changed)
	}
}

// ROS4HRI's levels from looking at the camera, with the on and off
// delays; a face that leaves ends its engagement.
func TestEngagementLevels(t *testing.T) {
	a := config.Default().Attention
	a.Profile = "engagement"
	s, err := fromConfig(a)
	if err != nil {
		t.Fatal(err)
	}
	tl := play(t, s, segment{d: time.Second, yaw: 75}, segment{d: 3 * time.Second}, segment{d: time.Second, yaw: 75},
		segment{d: time.Second}, segment{d: 3 * time.Second, yaw: 75}, segment{d: 2 * time.Second}, segment{d: time.Second, lost: true})
	for i, want := range map[int]string{5: LevelDisengaged, 15: LevelEngaging, 25: LevelEngaged, 45: LevelDisengaging,
		55: LevelEngaged, 65: LevelDisengaging, 85: LevelDisengaged, 95: LevelEngaging, 105: LevelEngaged} {
		if tl.states[i] != want {
			t.Errorf("%.1f s: %q, want %q", float64(i)/10, tl.states[i], want)
		}
	}
	want := "engagement/start@2.0 engagement/end@6.0 engagement/start@10.0 engagement/end@10.9"
	if got := tl.kinds(); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if e := tl.events[1]; e.DurationS != 5 || e.Why != "away" {
		t.Errorf("end %+v: 5 s from the first look (1 s) to looking away (6 s)", e)
	}
	if e := tl.events[3]; e.Why != "lost" {
		t.Errorf("a face that leaves: %+v", e)
	}
}

// The summary is change-driven: a face that keeps looking at the road
// gives one, not one per frame; a change of target, state or neutral
// status gives another.
func TestSummaryChangeDriven(t *testing.T) {
	s := driverStage(t, nil)
	tl := play(t, s, segment{d: 5 * time.Second}, segment{d: 5 * time.Second, yaw: 75})
	var got []string
	for _, m := range tl.sums {
		got = append(got, fmt.Sprintf("%s/%s/%v", m.Target.Name, m.State, m.Active))
	}
	// road; none glancing (0.2 s dwell); distracted with the event.
	want := "road/attentive/[] /glancing/[] /distracted/[long_distraction]"
	if strings.Join(got, " ") != want {
		t.Errorf("summaries %q, want %q", strings.Join(got, " "), want)
	}
	if _, ok := s.Summary("learnt"); !ok {
		t.Error("a new neutral status is not a change")
	}
	if _, ok := s.Summary("learnt"); ok {
		t.Error("the same summary twice is a change")
	}
	if *tl.sums[0].Attending != true || *tl.sums[1].Attending != false {
		t.Error("attending does not follow the road")
	}
}

// /metrics' figures: time per target of the primary face, events by kind.
func TestCounters(t *testing.T) {
	s := driverStage(t, nil)
	play(t, s, segment{d: 2 * time.Second}, segment{d: 4 * time.Second, yaw: 75}, segment{d: 2 * time.Second, std: 40})
	got := map[string]float64{}
	for _, f := range s.TargetSeconds() {
		got[f.Label] = f.Value
	}
	// Each frame counts the 100 ms before it, at the target decided (the
	// 0.2 s dwell, for doubt too): road 0.1–2.1 s, none 2.2–6.1 s,
	// unknown 6.2–7.9 s.
	if !near(got["road"], 2.1) || !near(got["none"], 4) || !near(got["unknown"], 1.8) || got["mirror"] != 0 || got["camera"] != 0 {
		t.Errorf("seconds per target %v", got)
	}
	for _, f := range s.EventCounts() {
		if want := map[string]float64{message.EventLongDistraction: 1}[f.Label]; f.Value != want {
			t.Errorf("%s: %g events, want %g", f.Label, f.Value, want)
		}
	}
}

func near(a, b float64) bool { return a > b-1e-6 && a < b+1e-6 }

// A head that turns fast is often uncertain while it turns: the gaze is
// dated from the doubt's first frame, so the distraction still starts 3 s
// after the turn (on Pointing'04's person 7 the model's σ passes 15° for
// the first two frames at 60° (there, over 15°, the bound then): the end-to-end test saw 3.2 s before).
func TestTurnThroughDoubt(t *testing.T) {
	tl := play(t, driverStage(t, nil), segment{d: 2 * time.Second}, segment{d: 200 * time.Millisecond, yaw: 75, std: 35},
		segment{d: 4 * time.Second, yaw: 75})
	if got, want := tl.kinds(), "long_distraction/start@5.0"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	// A doubt that ends where it began moves nothing.
	tl = play(t, driverStage(t, nil), segment{d: 2 * time.Second}, segment{d: 300 * time.Millisecond, std: 35},
		segment{d: 4 * time.Second})
	if len(tl.events) != 0 || tl.states[len(tl.states)-1] != StateAttentive {
		t.Errorf("a doubt on the road: %q %q", tl.kinds(), tl.states[len(tl.states)-1])
	}
}

// A face is in doubt when its σ could carry it across the border of the
// target it looks at (or of the nearest, looking at none): attention.doubt
// times σ. A flat bound on σ alone did not make the road decision any
// better on AFLW2000 (87.7 % agreement with the labels for every bound
// from 8° to none); the border-relative doubt made it 91.5 % on the 87 %
// of faces it decides (posectl decisions, docs/measured.md).
func TestDoubtNearBorder(t *testing.T) {
	a := config.Default().Attention
	a.Targets, a.Camera, a.Doubt, a.Margin = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}}, 0, 0.5, 0
	for _, c := range []struct {
		yaw, std float64
		want     string // target, or ? for unknown
	}{{20, 4, "road"}, {20, 6, "?"}, {0, 40, "?"}, {0, 20, "road"}, {30, 10, ""}, {30, 20, "?"}, {80, 25, ""}} {
		s, err := fromConfig(a)
		if err != nil {
			t.Fatal(err)
		}
		f := []message.Face{face(c.yaw, 0)}
		f[0].YawStd, f[0].PitchStd = message.Some(c.std), message.Some(1)
		s.Apply(f, 640, 480, t0, 0)
		got := f[0].Target.Name
		if f[0].Attention == StateUnknown {
			got = "?"
			if f[0].AttentionReason != ReasonUncertain || f[0].Target.Known {
				t.Errorf("yaw %g σ %g: unknown %+v", c.yaw, c.std, f[0])
			}
		}
		if got != c.want {
			t.Errorf("yaw %g σ %g: %q, want %q", c.yaw, c.std, got, c.want)
		}
	}
}

// A target in the ray frame (the living room's TV, beside the camera) is
// looked at wherever the face is: the estimate itself is compared with
// it, the ray not added.
func TestRayFrameTarget(t *testing.T) {
	a := config.Default().Attention
	a.Camera, a.Targets = 0, map[string]config.AttentionTarget{"tv": {Cone: []float64{0, -7, 14}, Frame: "ray"}}
	s, err := fromConfig(a)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range []float64{10, 300, 1150} { // across a 1280-pixel frame
		f := []message.Face{face(2, -6)}
		f[0].Track = uint64(i + 1)
		f[0].Box = [4]float64{x, 300, x + 100, 400}
		s.Apply(f, 1280, 720, t0, 0)
		if f[0].Target.Name != "tv" {
			t.Errorf("a face at x %g looking at the TV: %+v", x, f[0].Target)
		}
	}
}

// At the edge of the doubt band, noise does not flicker the state between
// the road and unknown: doubt, like a target, must hold for the dwell
// (the control, without a dwell, flickers).
func TestDoubtDwell(t *testing.T) {
	flips := func(dwell time.Duration) int {
		a := config.Default().Attention
		a.Targets, a.Camera, a.Doubt, a.Dwell = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}}, 0, 0.5, dwell
		s, err := fromConfig(a)
		if err != nil {
			t.Fatal(err)
		}
		n, last := 0, ""
		for i := range 60 {
			// σ 6: the band's edge is 3° inside the border, at 19.5°; the
			// yaw wanders ±1° around it, on the road throughout.
			f := []message.Face{face(19.5+math.Sin(float64(i)*2.1), 0)}
			f[0].YawStd, f[0].PitchStd = message.Some(6), message.Some(1)
			s.Apply(f, 640, 480, t0.Add(time.Duration(i)*tick), 0)
			if i > 0 && f[0].Attention != last {
				n++
			}
			last = f[0].Attention
		}
		return n
	}
	if n := flips(0); n < 10 {
		t.Fatalf("control: without a dwell the state flipped only %d times", n)
	}
	if n := flips(200 * time.Millisecond); n > 2 {
		t.Errorf("with the dwell the state flipped %d times", n)
	}
}

// Out of a doubt that lasted, the face looks where it is seen at once:
// the target it had before the doubt is not shown again for a dwell, and
// the move is dated from the doubt's start.
func TestOutOfDoubt(t *testing.T) {
	tl := play(t, driverStage(t, nil), segment{d: time.Second}, segment{d: time.Second, yaw: 75, std: 35},
		segment{d: 4 * time.Second, yaw: 75})
	for i := 20; i < len(tl.states); i++ {
		if tl.states[i] == StateAttentive {
			t.Fatalf("%.1f s: attentive again after the doubt: %q", float64(i)/10, tl.states[10:30])
		}
	}
	if got, want := tl.kinds(), "long_distraction/start@4.0"; got != want {
		t.Errorf("events %q, want %q (away since the doubt began, at 1 s)", got, want)
	}
}

// A speed hovering at min_speed (19.9 and 20.1 km/h every 0.3 s) during one
// distraction makes one event of each kind, not one per crossing (it made
// 19 starts and 20 ends): the warnings come on at min_speed and go off
// only below min_speed − SpeedMargin.
func TestSpeedHysteresis(t *testing.T) {
	wall := clock.NewManual(time.Unix(9000, 0))
	s := driverStage(t, func(a *config.Attention) { a.Driver.MinSpeed = 20 }, wall)
	var tl timeline
	play(t, s, segment{d: time.Second})
	for i := range 40 { // 12 s away
		v := 20.1
		if i%2 == 1 {
			v = 19.9
		}
		if err := s.SetSpeed(v); err != nil {
			t.Fatal(err)
		}
		wall.Advance(300 * time.Millisecond)
		tl.events = append(tl.events, play(t, s, segment{d: 300 * time.Millisecond, yaw: 75}).events...)
	}
	tl.start = t0.Add(time.Second)
	starts, ends := 0, 0
	for _, e := range tl.events {
		if e.Phase == "start" {
			starts++
		} else {
			ends++
		}
	}
	if want := "long_distraction/start@3.0 unresponsive/start@6.0 time_sharing/start@10.0"; starts != 3 || ends != 0 || tl.kinds() != want {
		t.Errorf("hovering at min_speed while away for 12 s: %d starts and %d ends (%q), want each kind once: %q", starts, ends, tl.kinds(), want)
	}
	// Under min_speed − margin the warnings go off: what is in progress ends.
	_ = s.SetSpeed(14.9)
	got := play(t, s, segment{d: 200 * time.Millisecond, yaw: 75}).kinds()
	if !strings.Contains(got, "long_distraction/end") || !strings.Contains(got, "unresponsive/end") {
		t.Errorf("at 14.9 km/h: %q, want the events ended", got)
	}
	// And they stay off up to min_speed.
	_ = s.SetSpeed(19.9)
	if got := play(t, s, segment{d: 8 * time.Second, yaw: 75}).kinds(); got != "" {
		t.Errorf("back at 19.9 km/h: %q, want none", got)
	}
}
