package attention_test

import (
	"math"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/message"
	. "github.com/edgepose/posed/pipeline/attention"
)

const deg = math.Pi / 180

// face is a face of track 1 at the centre of a 640×480 frame, of box side
// 100, with the given published angles.
func face(yaw, pitch float64) message.Face {
	return message.Face{Track: 1, Box: [4]float64{270, 190, 370, 290}, Yaw: message.Some(yaw), Pitch: message.Some(pitch), Roll: message.Some(0)}
}

// run feeds one face's yaws, a frame every 100 ms, and returns the target
// of each frame ("" for none).
func run(t *testing.T, s *Stage, yaws []float64) []string {
	t.Helper()
	t0 := time.Unix(1000, 0)
	var out []string
	for i, y := range yaws {
		f := []message.Face{face(y, 0)}
		s.Apply(f, 640, 480, t0.Add(time.Duration(i)*100*time.Millisecond), 0)
		if !f[0].Target.On {
			t.Fatal("no target field")
		}
		out = append(out, f[0].Target.Name)
	}
	return out
}

func road(margin float64, dwell time.Duration) *Stage {
	s, err := New(Options{FOV: 60, Margin: margin, Dwell: dwell,
		Targets: []Target{{Name: "road", Yaw: [2]float64{-22.5, 22.5}, Pitch: [2]float64{-25, 25}}}})
	if err != nil {
		panic(err)
	}
	return s
}

func changes(ts []string) int {
	n := 0
	for i := 1; i < len(ts); i++ {
		if ts[i] != ts[i-1] {
			n++
		}
	}
	return n
}

// Noise at a border does not flicker: a yaw wandering ±1.5° around the
// road's edge (22.5°) changes the target once at most with the margin
// (3°); without margin or dwell it flickers every frame or two (the
// control).
func TestHysteresisAtBorder(t *testing.T) {
	var yaws []float64
	for i := range 40 {
		yaws = append(yaws, 22.5+1.5*math.Sin(float64(i)*2.1))
	}
	if n := changes(run(t, road(0, 0), yaws)); n < 10 {
		t.Fatalf("control: without hysteresis the target changed only %d times", n)
	}
	if got := run(t, road(3, 200*time.Millisecond), yaws); changes(got) > 0 {
		t.Errorf("with hysteresis: %q", got)
	}
	// Starting well inside, the same wandering stays on the road.
	if got := run(t, road(3, 200*time.Millisecond), append([]float64{0}, yaws...)); changes(got) > 0 || got[0] != "road" {
		t.Errorf("from inside, with hysteresis: %q", got)
	}
	// Clearly out, then clearly back: both are followed.
	got := run(t, road(3, 200*time.Millisecond), []float64{0, 0, 40, 40, 40, 40, 0, 0, 0, 0})
	want := []string{"road", "road", "road", "road", "", "", "", "", "road", "road"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("a glance away and back: %q, want %q", got, want)
		}
	}
}

// Dwell is the time on the current target, from the frame the gaze moved
// there (not from the end of the dwell that confirmed it).
func TestDwell(t *testing.T) {
	s := road(3, 200*time.Millisecond)
	t0 := time.Unix(1000, 0)
	var last message.Face
	for i, y := range []float64{0, 0, 0, 40, 40, 40, 40, 40} {
		f := []message.Face{face(y, 0)}
		s.Apply(f, 640, 480, t0.Add(time.Duration(i)*100*time.Millisecond), 0)
		last = f[0]
		if i == 2 && (f[0].Target.Name != "road" || f[0].Dwell.V != 0.2) {
			t.Errorf("frame 2: %+v, dwell %v, want road 0.2 s", f[0].Target, f[0].Dwell.V)
		}
	}
	// Away since frame 3 (0.3 s); at frame 7 (0.7 s): 0.4 s on "none".
	if last.Target.Known || last.Dwell.V != 0.4 {
		t.Errorf("away: %+v, dwell %v s, want none for 0.4 s", last.Target, last.Dwell.V)
	}
	// A face with no yaw looks at no known target.
	f := []message.Face{{Track: 2, Box: [4]float64{0, 0, 10, 10}}}
	s.Apply(f, 640, 480, t0, 0)
	if f[0].Target.Known || !f[0].Target.On {
		t.Errorf("a face without angles: %+v", f[0].Target)
	}
}

// The ray: a person who walks across a wide frame while looking at a
// television along the camera's axis shows a face turned by less and less
// as they near the axis; in the camera's frame, corrected by each face's
// ray, they look at the television all the way. The same region in the
// neutral frame (uncorrected) loses them at the edges; the built-in camera
// target follows those who look into the lens wherever they stand.
func TestRayCorrection(t *testing.T) {
	s, err := fromConfig(config.Attention{FOV: 90, Margin: 0, Dwell: 0, Camera: 10,
		Targets: map[string]config.AttentionTarget{
			"tv":      {Yaw: []float64{-8, 8}, Pitch: []float64{-8, 8}, Frame: "camera"},
			"tv_flat": {Yaw: []float64{-8, 8}, Pitch: []float64{-8, 8}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	lens, err := fromConfig(config.Attention{FOV: 90, Camera: 10,
		Targets: map[string]config.AttentionTarget{"tv": {Yaw: []float64{-8, 8}, Pitch: []float64{-8, 8}, Frame: "camera"}}})
	if err != nil {
		t.Fatal(err)
	}
	w, h := 1280, 480
	focal := float64(w) / 2 / math.Tan(45*deg)
	now := time.Unix(1000, 0)
	for cx := 60.0; cx <= 1220; cx += 116 {
		// Looking along the camera's axis from x = cx: the face is turned
		// away from the ray by its angle.
		ray := math.Atan((cx-float64(w)/2)/focal) / deg
		f := []message.Face{{Track: 1, Box: [4]float64{cx - 40, 200, cx + 40, 280}, Yaw: message.Some(-ray), Pitch: message.Some(0), Roll: message.Some(0)}}
		s.Apply(f, w, h, now, 0)
		if f[0].Target.Name != "tv" && f[0].Target.Name != "tv_flat" {
			t.Errorf("at x %.0f (ray %.1f°) looking along the axis: %q, want tv", cx, ray, f[0].Target.Name)
		}
		if math.Abs(ray) > 10 && f[0].Target.Name != "tv" {
			t.Errorf("at x %.0f: %q: only the ray-corrected target holds the face", cx, f[0].Target.Name)
		}
		// Looking into the lens from there: the camera target (where no
		// configured target holds the face: "tv" does near the axis).
		f = []message.Face{{Track: 2, Box: f[0].Box, Yaw: message.Some(2), Pitch: message.Some(-1), Roll: message.Some(0)}}
		lens.Apply(f, w, h, now, 0)
		if want := CameraTarget; math.Abs(ray) > 10 && f[0].Target.Name != want {
			t.Errorf("at x %.0f looking into the lens: %q, want camera", cx, f[0].Target.Name)
		}
	}
	// The ray's signs: right of centre, looking at the lens turns the nose
	// to the image's left (yaw > 0); above the centre, looking down.
	yaw, pitch := s.Ray([4]float64{1180, 0, 1280, 100}, w, h)
	if !(yaw > 30 && pitch < -10) {
		t.Errorf("ray of a face at the top right: yaw %.1f, pitch %.1f", yaw, pitch)
	}
}

// The block works as written: a face looking ahead is on "road",
// one turned away on none (null), never "camera": configured targets win
// over the built-in one.
func TestRoadBlock(t *testing.T) {
	c := config.Default()
	c.Attention.Targets = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := fromConfig(c.Attention)
	if err != nil {
		t.Fatal(err)
	}
	// 100 ms a frame, 200 ms of dwell: away from the third frame at 45°,
	// back from the third frame at 5°.
	got := run(t, s, []float64{0, 1, -2, 10, 45, 45, 45, 60, 5, 5, 5})
	for i, want := range []string{"road", "road", "road", "road", "road", "road", "", "", "", "", "road"} {
		if got[i] != want {
			t.Fatalf("targets %q, want road or none as the head turns", got)
		}
	}
}

// Targets are checked: an empty region, a field of view out of range.
func TestNewRefuses(t *testing.T) {
	for name, o := range map[string]Options{
		"fov 0":        {FOV: 0},
		"empty region": {FOV: 60, Targets: []Target{{Name: "x", Yaw: [2]float64{5, 5}, Pitch: [2]float64{0, 1}}}},
		"margin 50":    {FOV: 60, Margin: 50},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// The stage allocates nothing per frame once its tracks are known, under
// every profile, while its events start and end and its summary changes:
// two faces turning to and from the road every 4 s.
func TestApplyDoesNotAllocate(t *testing.T) {
	for _, profile := range []string{ProfileNone, ProfileDriver, ProfileEngagement} {
		a := config.Default().Attention
		a.Profile = profile
		a.Targets = map[string]config.AttentionTarget{"road": {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}}
		a.Driver.Long, a.Driver.Unresponsive, a.Engagement.Targets = time.Second, 2*time.Second, []string{"road"}
		s, err := fromConfig(a)
		if err != nil {
			t.Fatal(err)
		}
		f := []message.Face{face(5, 0), face(40, 3)}
		f[1].Track = 2
		now, n, events := time.Unix(1000, 0), 0, 0
		step := func() {
			now = now.Add(100 * time.Millisecond)
			n++
			f[0].Yaw = message.Some(float64(n/40%2) * 60)
			s.Apply(f, 640, 480, now, 0)
			events += len(s.Events())
			s.Summary(ProfileNone)
		}
		for range 200 {
			step()
		}
		if a := testing.AllocsPerRun(400, step); a != 0 {
			t.Errorf("%s: Apply allocates %.2f times per frame", profile, a)
		}
		if profile != ProfileNone && events == 0 {
			t.Errorf("%s: no event in 60 s of turns", profile)
		}
	}
}

// BenchmarkApply: the stage's cost per frame of two faces against a
// driver's targets (road, two mirrors, the cluster) and the camera, with
// the driver's rules.
func BenchmarkApply(b *testing.B) {
	a := config.Default().Attention
	a.Targets = map[string]config.AttentionTarget{
		"road":         {Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}},
		"left_mirror":  {Cone: []float64{45, -5, 10}},
		"right_mirror": {Cone: []float64{-60, -5, 10}},
		"cluster":      {Yaw: []float64{-10, 10}, Pitch: []float64{-45, -25}},
	}
	a.Profile, a.Driver.Attending = ProfileDriver, []string{"road", "left_mirror", "right_mirror", "cluster"}
	s, err := fromConfig(a)
	if err != nil {
		b.Fatal(err)
	}
	f := []message.Face{face(5, 0), face(40, -5)}
	f[1].Track = 2
	now := time.Unix(1000, 0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(66 * time.Millisecond)
		s.Apply(f, 640, 480, now, 0)
	}
}
