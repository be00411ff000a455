package build

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/pipeline/attention"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// The frame path follows the configuration: with posed's defaults a
// face-free room where the cascades see a face (a door, UMD_066: facefinder
// score 7.8) publishes nothing, the network refusing it; with the network
// off (detect.verify false, scan_every 0) the phantom is published, as it
// was before the network; and a face is published either way.
func TestTrackerFollowsConfig(t *testing.T) {
	root := datatest.Root(t)
	room, err := dataset.LoadGray(filepath.Join(root, "scenes", "images", "UMD_066.jpg"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	face := datatest.Frame640(t)
	on := config.Default()
	on.Model.Path = filepath.Join("..", "..", "models", "default.gllim")
	off := on
	off.Detect.Verify, off.Detect.ScanEvery = false, 0
	est, m, err := Estimator(on.Model)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name              string
		cfg               config.Config
		roomFaces, faces  int
		scanned, verified bool
	}{
		{"defaults", on, 0, 1, true, true},
		{"network off", off, 1, 1, false, false},
	} {
		tr, err := Tracker(c.cfg, est, detect.CalibrationOf(m.Calibration))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tr.Process(room)); got != c.roomFaces {
			t.Errorf("%s: %d faces in the empty room, want %d", c.name, got, c.roomFaces)
		}
		if tr.Timing().Scanned != c.scanned {
			t.Errorf("%s: the first frame scanned %v", c.name, tr.Timing().Scanned)
		}
		// The second frame is the cascades': the door again, verified
		// (refused) with the network on.
		tr.Process(room)
		if got := tr.Timing().Unverified > 0; got != c.verified {
			t.Errorf("%s: the cascades' phantom verified and refused: %v", c.name, got)
		}
		tr.Reset()
		if got := len(tr.Process(face)); got != c.faces {
			t.Errorf("%s: %d faces on the benchmark frame, want %d", c.name, got, c.faces)
		}
	}
	bad := on
	bad.Detect.VerifyScore = 2
	if _, err := Tracker(bad, est, detect.Identity); err == nil {
		t.Error("a verify_score of 2 built a tracker")
	}
}

// The stages' options say what the configuration says: zones and the
// primary face's rule; the neutral pose; attention's targets, the built-in camera cone and
// a configured cone.
func TestStageOptionsFollowConfig(t *testing.T) {
	c, err := config.Parse([]byte(`
zones: {named: {driver: [0, 0, 320, 480]}}
primary: {mode: nearest, point: [150, 160]}
zero: {yaw: -20, pitch: 5, seconds: 2, learn: true, forget: 45s}
attention:
  camera: 12
  targets:
    road: {yaw: [-20, 20], pitch: [-10, 10]}
    tv: {cone: [30, 5, 8], frame: camera}
`))
	if err != nil {
		t.Fatal(err)
	}
	z := ZoneOptions(c.Zones, c.Primary)
	if z.Named["driver"] != [4]float64{0, 0, 320, 480} || z.Mode != "nearest" || z.Point != [2]float64{150, 160} {
		t.Errorf("zone options %+v", z)
	}
	if n := NeutralOptions(c.Zero); n != (neutral.Options{Yaw: -20, Pitch: 5, Seconds: 2, Learn: true, Forget: 45 * time.Second}) {
		t.Errorf("neutral options %+v", n)
	}
	a := AttentionOptions(c.Attention)
	got := map[string]attention.Target{}
	for _, tg := range a.Targets {
		got[tg.Name] = tg
	}
	if cam := got[attention.CameraTarget]; cam.Radius != 12 || !cam.Fallback || cam.Frame != attention.Ray {
		t.Errorf("camera target %+v, want a 12° fallback cone around the ray", cam)
	}
	if road := got["road"]; road.Yaw != [2]float64{-20, 20} || road.Pitch != [2]float64{-10, 10} || road.Radius != 0 {
		t.Errorf("road %+v", road)
	}
	if tv := got["tv"]; tv.Yaw[0] != 30 || tv.Pitch[0] != 5 || tv.Radius != 8 || tv.Frame != attention.Camera {
		t.Errorf("tv %+v", tv)
	}
	if s, err := Attention(c.Attention); err != nil || s == nil {
		t.Errorf("the stage: %v", err)
	}
}
