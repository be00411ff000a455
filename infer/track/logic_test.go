package track

import (
	"image"
	"math"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/yunet"
)

// The tracker's own logic (ids, order, schedule, misses, smoothing,
// duplicates, uncertainty) with a scripted detector and estimator: no
// model, no data set.

// scriptDetector returns faces as its script says and counts its calls.
type scriptDetector struct {
	faces []detect.Face
	calls int
}

func (d *scriptDetector) DetectInto(_ *detect.Buffers, _ *image.Gray, _ image.Rectangle) []detect.Face {
	d.calls++
	return d.faces
}

// scriptEstimator keeps the box where it starts and answers yaw(box) with
// a standard deviation std.
type scriptEstimator struct {
	yaw func(feature.Box) float64
	std float64
}

func (e *scriptEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	y := e.yaw(from)
	return pose.Result{Box: from, Angles: [3]float64{y, -y, 0}, Std: [3]float64{e.std, e.std, e.std}}
}
func (e *scriptEstimator) Refines() bool       { return true }
func (e *scriptEstimator) HasAngle(i int) bool { return true }

func square(x, y, s float64) detect.Face {
	return detect.Face{Box: feature.Box{X: x, Y: y, W: s, H: s}, Score: 5}
}

func scripted(cfg Config) (*Tracker, *scriptDetector, *scriptEstimator, *image.Gray) {
	det := &scriptDetector{}
	est := &scriptEstimator{yaw: func(b feature.Box) float64 { return b.X / 10 }, std: 5}
	return New(cfg, det, detect.Identity, est), det, est, image.NewGray(image.Rect(0, 0, 640, 480))
}

// Two faces keep their ids frame after frame, are reported largest first,
// and the detector runs on schedule only.
func TestTrackIDsOrderSchedule(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 3, LostAfter: 2, MinIoU: 0.3, Smoothing: 0, MaxStd: 60}
	tr, det, _, img := scripted(cfg)
	det.faces = []detect.Face{square(100, 100, 80), square(400, 100, 120)}
	for frame := 1; frame <= 7; frame++ {
		faces := tr.Process(img)
		if len(faces) != 2 || faces[0].ID != 2 || faces[1].ID != 1 || faces[0].Box.W != 120 {
			t.Fatalf("frame %d: %+v", frame, faces)
		}
		if faces[1].Angles[0] != 10 || faces[0].Angles[0] != 40 || faces[0].Angles[1] != -40 {
			t.Fatalf("frame %d: angles %v %v", frame, faces[0].Angles, faces[1].Angles)
		}
	}
	if det.calls != 3 { // frames 1, 4, 7
		t.Errorf("detector ran %d times in 7 frames with Every 3, want 3", det.calls)
	}
	if got := tr.Timing(); !got.Detected {
		t.Errorf("frame 7 ran a detection, Timing says %+v", got)
	}
}

// A face the detector stops finding is kept through LostAfter missed
// detections and dropped at the next; MaxFaces caps what is reported.
func TestTrackLostAfterAndMaxFaces(t *testing.T) {
	cfg := Config{MaxFaces: 1, Every: 1, LostAfter: 2, MinIoU: 0.3, Smoothing: 0, MaxStd: 60}
	tr, det, _, img := scripted(cfg)
	det.faces = []detect.Face{square(100, 100, 80), square(400, 100, 120)}
	if faces := tr.Process(img); len(faces) != 1 || faces[0].ID != 2 {
		t.Fatalf("MaxFaces 1: %+v", faces)
	}
	det.faces = []detect.Face{square(100, 100, 80)}
	var seen []int
	for frame := 0; frame < 4; frame++ {
		faces := tr.Process(img)
		seen = append(seen, len(tr.tracks))
		if len(faces) != 1 {
			t.Fatalf("frame %d: %+v", frame, faces)
		}
	}
	if want := []int{2, 2, 1, 1}; !slices.Equal(seen, want) {
		t.Errorf("tracks after each missed detection: %v, want %v (dropped after LostAfter = 2 misses)", seen, want)
	}
}

// The angles follow the filter (TurnNoise, White, at the frames' times):
// a new track starts at its first estimate with the model's σ, and each
// frame after moves it as a Kalman filter of the same measurements does
// (kalmanRef); a face whose yaw uncertainty exceeds MaxStd is dropped;
// two nested detections of one face make one track.
func TestTrackFilterUncertaintyDuplicates(t *testing.T) {
	const q, white = 2e4, 0.5
	cfg := Config{MaxFaces: 4, Every: 100, LostAfter: 2, MinIoU: 0.3, Smoothing: 0.5, MaxStd: 30, TurnNoise: q, White: white}
	tr, det, est, img := scripted(cfg)
	det.faces = []detect.Face{square(200, 100, 100), square(205, 105, 90)} // nested: IoU 0.81
	yaw := 0.0
	est.yaw = func(feature.Box) float64 { return yaw }
	at := time.Unix(100, 0)
	faces := tr.ProcessAt(img, at)
	if len(faces) != 1 || faces[0].Angles[0] != 0 || faces[0].Std[0] != est.std {
		t.Fatalf("nested detections: %+v", faces)
	}
	v := est.std * est.std
	ref := kalmanRef{x: mat.NewVecDense(2, []float64{0, 0}), p: mat.NewDense(2, 2, []float64{white * v, 0, 0, initialRate * initialRate})}
	for i, dt := range []float64{0.05, 0.1, 0.05, 0.2} {
		yaw = 10
		at = at.Add(time.Duration(dt * float64(time.Second)))
		faces = tr.ProcessAt(img, at)
		ref.predict(dt, q)
		ref.update(yaw, white*v)
		// The reference's σ with the bias the filter cannot remove.
		std := math.Sqrt(ref.p.At(0, 0) + (1-white)*v)
		if len(faces) != 1 || math.Abs(faces[0].Angles[0]-ref.x.AtVec(0)) > 1e-9 || math.Abs(faces[0].Std[0]-std) > 1e-9 {
			t.Fatalf("step %d: %+v, want yaw %g σ %g", i, faces, ref.x.AtVec(0), std)
		}
	}
	// Without the filter the angles are smoothed as the boxes are: a new
	// track starts unsmoothed.
	cfg.TurnNoise = 0
	tr, det, est, img = scripted(cfg)
	det.faces = []detect.Face{square(200, 100, 100)}
	est.yaw = func(feature.Box) float64 { return yaw }
	for i, c := range [][2]float64{{0, 0}, {10, 5}, {10, 7.5}, {-4, 1.75}} {
		yaw = c[0]
		if faces = tr.Process(img); len(faces) != 1 || math.Abs(faces[0].Angles[0]-c[1]) > 1e-12 {
			t.Fatalf("unfiltered, frame %d: yaw %g published as %+v, want %g (smoothing 0.5)", i, c[0], faces, c[1])
		}
	}
	est.std = 31
	if faces = tr.Process(img); len(faces) != 0 {
		t.Errorf("a face with yaw std 31 > MaxStd 30 is reported: %+v", faces)
	}
}

// A face a detection finds on this frame is reported however uncertain
// its pose (the detector says a face is there); without a detection the
// same uncertainty drops it.
func TestTrackDetectedFaceOutlivesMaxStd(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 2, LostAfter: 2, MinIoU: 0.3, MaxStd: 30}
	tr, det, est, img := scripted(cfg)
	det.faces = []detect.Face{square(200, 100, 100)}
	est.std = 31
	if faces := tr.Process(img); len(faces) != 1 || det.calls != 1 {
		t.Fatalf("frame 1 (detected, yaw std 31 > MaxStd 30): %+v, %d detections", faces, det.calls)
	}
	if faces := tr.Process(img); len(faces) != 0 || det.calls != 1 {
		t.Errorf("frame 2 (tracked, yaw std 31 > MaxStd 30): %+v, %d detections; want the face dropped", faces, det.calls)
	}
}

// A detection starts a track only if the model's yaw std from its box is
// at most StartStd; it is tried again at every detection while nothing is
// tracked, and a track once started is held by MaxStd alone.
func TestTrackStartStd(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 3, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, StartStd: 20}
	tr, det, est, img := scripted(cfg)
	det.faces = []detect.Face{square(200, 100, 100)}
	est.std = 25
	for frame := 1; frame <= 2; frame++ {
		if faces := tr.Process(img); len(faces) != 0 || det.calls != frame || tr.Timing().Refused != 1 {
			t.Fatalf("frame %d (yaw std 25 > StartStd 20): %+v after %d detections, %d refused; want no track, a detection every frame, refused", frame, faces, det.calls, tr.Timing().Refused)
		}
	}
	est.std = 15
	faces := tr.Process(img)
	if len(faces) != 1 || det.calls != 3 || tr.Timing().Refused != 0 {
		t.Fatalf("frame 3 (yaw std 15): %+v after %d detections; want the track started", faces, det.calls)
	}
	id := faces[0].ID
	est.std = 40 // above StartStd, below MaxStd: the started track stays
	for frame := 4; frame <= 7; frame++ {
		if faces := tr.Process(img); len(faces) != 1 || faces[0].ID != id {
			t.Fatalf("frame %d (tracked, yaw std 40): %+v; want track %d kept", frame, faces, id)
		}
	}
	if det.calls != 5 {
		t.Errorf("%d detections by frame 7, want 5 (frames 1–3 untracked, then 4 and 7 on schedule)", det.calls)
	}
	cfg.StartStd = 0 // off
	tr, det, est, img = scripted(cfg)
	det.faces, est.std = []detect.Face{square(200, 100, 100)}, 55
	if faces := tr.Process(img); len(faces) != 1 {
		t.Errorf("StartStd 0: %+v; want the detection to start a track", faces)
	}
}

// A tracked face whose yaw moves more than RecheckTurn between two frames
// makes the next frame a detection; a smaller move, or RecheckTurn 0,
// waits for Every.
func TestTrackRecheckTurn(t *testing.T) {
	for _, c := range []struct {
		turn, jump float64
		calls      int
	}{{45, 60, 2}, {45, -60, 2}, {45, 40, 1}, {0, 120, 1}} {
		cfg := Config{MaxFaces: 4, Every: 100, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RecheckTurn: c.turn}
		tr, det, est, img := scripted(cfg)
		det.faces = []detect.Face{square(200, 100, 100)}
		yaw := 10.0
		est.yaw = func(feature.Box) float64 { return yaw }
		for frame := 1; frame <= 6; frame++ {
			if frame == 4 {
				yaw += c.jump
			}
			if faces := tr.Process(img); len(faces) != 1 || faces[0].ID != 1 {
				t.Fatalf("turn %g, jump %g, frame %d: %+v", c.turn, c.jump, frame, faces)
			}
			if frame == 5 && tr.Timing().Detected != (c.calls == 2) {
				t.Errorf("turn %g, jump %g: frame 5 detected %v", c.turn, c.jump, tr.Timing().Detected)
			}
		}
		if det.calls != c.calls {
			t.Errorf("RecheckTurn %g, yaw jump %g at frame 4: %d detections in 6 frames, want %d", c.turn, c.jump, det.calls, c.calls)
		}
	}
}

// The detector looks only in Region (within the frame).
func TestTrackRegion(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, Region: image.Rect(100, 50, 400, 900)}
	rec := &regionDetector{}
	tr := New(cfg, rec, detect.Identity, &scriptEstimator{yaw: func(feature.Box) float64 { return 0 }, std: 5})
	tr.Process(image.NewGray(image.Rect(0, 0, 640, 480)))
	if rec.r != image.Rect(100, 50, 400, 480) {
		t.Errorf("detector asked for %v, want the region within the frame", rec.r)
	}
}

type regionDetector struct{ r image.Rectangle }

func (d *regionDetector) DetectInto(_ *detect.Buffers, _ *image.Gray, r image.Rectangle) []detect.Face {
	d.r = r
	return nil
}

// scriptVerifier answers by the box's x and counts its calls.
type scriptVerifier struct {
	face  func(feature.Box) bool
	calls int
}

func (v *scriptVerifier) Verify(_ *image.Gray, b feature.Box) bool {
	v.calls++
	return v.face(b)
}

// scriptScanner returns its faces and counts its calls.
type scriptScanner struct {
	faces []detect.Face
	calls int
}

func (s *scriptScanner) Scan(*image.Gray, image.Rectangle, []feature.Box) []detect.Face {
	s.calls++
	return s.faces
}

// A detection the verifier refuses starts no track and is refused again
// without asking until Config.RejectFor frames have passed; one it accepts
// starts a track, and a tracked face is not verified again.
func TestTrackVerifier(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: 5}
	det := &scriptDetector{faces: []detect.Face{square(100, 100, 80), square(400, 100, 80)}}
	v := &scriptVerifier{face: func(b feature.Box) bool { return b.X > 300 }}
	est := &scriptEstimator{yaw: func(b feature.Box) float64 { return 0 }, std: 5}
	tr := New(cfg, det, detect.Identity, est, WithVerifier(v))
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	for frame := 1; frame <= 8; frame++ {
		faces := tr.Process(img)
		if len(faces) != 1 || faces[0].Box.X != 400 {
			t.Fatalf("frame %d: faces %+v, want the accepted one only", frame, faces)
		}
		if got := tr.Timing().Unverified; got != 1 {
			t.Errorf("frame %d: %d unverified, want 1", frame, got)
		}
		// Asked on frame 1 about both boxes, then about the refused box
		// again once its refusal (frames 1–6) has run out: frame 7.
		want := 2
		if frame >= 7 {
			want = 3
		}
		if v.calls != want {
			t.Errorf("frame %d: the verifier was asked %d times, want %d", frame, v.calls, want)
		}
	}
}

// The scanner runs every Config.ScanEvery frames from the first; its faces
// start tracks without verification, and a face only the scanner sees is
// kept by it while the detector misses it.
func TestTrackScanner(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 2, LostAfter: 1, MinIoU: 0.3, MaxStd: 60, ScanEvery: 3}
	det := &scriptDetector{}
	v := &scriptVerifier{face: func(feature.Box) bool { return false }}
	sc := &scriptScanner{faces: []detect.Face{square(200, 150, 100)}}
	est := &scriptEstimator{yaw: func(b feature.Box) float64 { return 0 }, std: 5}
	tr := New(cfg, det, detect.Identity, est, WithVerifier(v), WithScanner(sc))
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	var id uint64
	for frame := 1; frame <= 12; frame++ {
		faces := tr.Process(img)
		if len(faces) != 1 {
			t.Fatalf("frame %d: %d faces, want the scanned one", frame, len(faces))
		}
		if id == 0 {
			id = faces[0].ID
		} else if faces[0].ID != id {
			t.Fatalf("frame %d: the face changed id", frame)
		}
		if want := (frame + 2) / 3; sc.calls != want {
			t.Errorf("frame %d: %d scans, want %d", frame, sc.calls, want)
		}
		if scanned := tr.Timing().Scanned; scanned != (frame%3 == 1) {
			t.Errorf("frame %d: scanned %v", frame, scanned)
		}
	}
	if v.calls != 0 {
		t.Errorf("the scanner's face was verified %d times", v.calls)
	}
	// Reset: the next frame is a scene's first, scanned.
	tr.Reset()
	sc.faces = nil
	if faces := tr.Process(img); len(faces) != 0 || !tr.Timing().Scanned {
		t.Errorf("after Reset: %d faces, scanned %v", len(faces), tr.Timing().Scanned)
	}
}

// Faces side by side in one frame's detections are two tracks however
// close: two persons cheek to cheek (centres 0.6 box sides apart, where
// the centre rule for a track that slid off its face would join them),
// and a face beside its reflection (0.6 of one box inside the other) from
// the scan; a cascade's larger window around a face it also found is one
// face, and so is a second detection overlapping a face by more than
// MinIoU.
func TestTrackFacesSideBySide(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, ScanEvery: 2}
	est := &scriptEstimator{yaw: func(b feature.Box) float64 { return 0 }, std: 5}
	for _, c := range []struct {
		name  string
		scan  bool
		faces []detect.Face
		want  int
	}{
		{"cheek to cheek, scanned", true, []detect.Face{square(228, 60, 180), square(127, 139, 190)}, 2},
		{"cheek to cheek, cascades", false, []detect.Face{square(228, 60, 180), square(127, 139, 190)}, 2},
		{"a reflection, scanned", true, []detect.Face{square(117, 122, 220), square(254, 164, 140)}, 2},
		{"a larger window around a face, cascades", false, []detect.Face{square(200, 200, 64), square(160, 150, 149)}, 1},
		{"overlapping, scanned", true, []detect.Face{square(200, 200, 100), square(230, 210, 100)}, 1},
	} {
		det, sc := &scriptDetector{}, &scriptScanner{}
		if c.scan {
			sc.faces = c.faces
		} else {
			det.faces = c.faces
		}
		tr := New(cfg, det, detect.Identity, est, WithScanner(sc))
		if !c.scan {
			tr.Process(image.NewGray(image.Rect(0, 0, 640, 480))) // the scan's frame finds nothing
		}
		faces := tr.Process(image.NewGray(image.Rect(0, 0, 640, 480)))
		if tr.Timing().Scanned != c.scan {
			t.Fatalf("%s: scanned %v", c.name, tr.Timing().Scanned)
		}
		if len(faces) != c.want {
			t.Errorf("%s: %d faces, want %d", c.name, len(faces), c.want)
		}
	}
}

// shiftEstimator refines every box 7 px to the right and answers yaw 30
// with a standard deviation std.
type shiftEstimator struct{ std float64 }

func (e *shiftEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	from.X += 7
	return pose.Result{Box: from, Angles: [3]float64{30, 5, 0}, Std: [3]float64{e.std, e.std, e.std}}
}
func (e *shiftEstimator) Refines() bool       { return true }
func (e *shiftEstimator) HasAngle(i int) bool { return true }

// turned is a detection of a face seen turned (nose towards the image's
// left).
func turned(x, y, s float64) detect.Face {
	f := square(x, y, s)
	f.View = detect.YawPositive
	return f
}

// A face the network confirms and sees turned, and the model cannot read
// (yaw σ above StartStd), is reported with Unread: the detection's box, no
// angles, not refined, moved by detections alone, dropped when they miss
// it, and read with its id once the model's σ falls to StartStd. Without
// Unread, with no network to confirm it, or seen frontal, it starts no
// track, as before.
func TestTrackUnread(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 3, LostAfter: 1, MinIoU: 0.3, MaxStd: 60, StartStd: 20, Unread: true}
	det := &scriptDetector{faces: []detect.Face{turned(400, 100, 80)}}
	v := &scriptVerifier{face: func(feature.Box) bool { return true }}
	est := &shiftEstimator{std: 35}
	tr := New(cfg, det, detect.Identity, est, WithVerifier(v))
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	unread := func(frame int, faces []Face, x float64) uint64 {
		t.Helper()
		if len(faces) != 1 || faces[0].Has != [3]bool{} || faces[0].Angles != [3]float64{} || faces[0].Box.X != x {
			t.Fatalf("frame %d: %+v; want one face without angles at x %g (the detection's box)", frame, faces, x)
		}
		return faces[0].ID
	}
	id := unread(1, tr.Process(img), 400)
	if tm := tr.Timing(); tm.Refused != 0 {
		t.Errorf("frame 1: timing %+v, want none refused", tm)
	}
	// Between detections the box stays (no refinement moves it), and an
	// unread face makes no frame a detection.
	unread(2, tr.Process(img), 400)
	unread(3, tr.Process(img), 400)
	if det.calls != 1 {
		t.Errorf("%d detections in 3 frames with Every 3, want 1", det.calls)
	}
	// A detection moves it.
	det.faces = []detect.Face{turned(430, 100, 80)}
	if got := unread(4, tr.Process(img), 430); got != id {
		t.Errorf("frame 4: the face changed id %d → %d", id, got)
	}
	// Readable again: the same track, with angles and a refined box.
	est.std = 15
	faces := tr.Process(img)
	if len(faces) != 1 || faces[0].ID != id || faces[0].Has != [3]bool{true, true, true} || faces[0].Angles[0] != 30 || faces[0].Box.X != 437 {
		t.Fatalf("frame 5 (σ 15): %+v; want track %d read, yaw 30, box refined to x 437", faces, id)
	}
	// Unread again and missed by the detections: dropped after LostAfter.
	tr.Reset()
	est.std = 35
	unread(1, tr.Process(img), 430)
	det.faces = nil
	for frame := 2; frame <= 7; frame++ {
		tr.Process(img)
	}
	if n := len(tr.Process(img)); n != 0 {
		t.Errorf("an unread face the detections missed twice is still reported (%d faces)", n)
	}

	// Unread off, no network, or seen frontal: refused as before.
	for _, c := range []struct {
		name   string
		unread bool
		face   detect.Face
		opts   []Option
	}{
		{"Unread false", false, turned(400, 100, 80), []Option{WithVerifier(v)}},
		{"no verifier or scanner", true, turned(400, 100, 80), nil},
		{"seen frontal", true, square(400, 100, 80), []Option{WithVerifier(v)}},
	} {
		cfg.Unread = c.unread
		det := &scriptDetector{faces: []detect.Face{c.face}}
		tr := New(cfg, det, detect.Identity, &shiftEstimator{std: 35}, c.opts...)
		if faces := tr.Process(img); len(faces) != 0 || tr.Timing().Refused != 1 {
			t.Errorf("%s: %+v, %d refused; want no face, the detection refused", c.name, faces, tr.Timing().Refused)
		}
	}
	// The scanner's faces need no verifier.
	cfg.Unread, cfg.ScanEvery = true, 1
	sc := &scriptScanner{faces: []detect.Face{turned(200, 150, 100)}}
	tr = New(cfg, &scriptDetector{}, detect.Identity, &shiftEstimator{std: 35}, WithScanner(sc))
	unread(1, tr.Process(img), 200)

	// Seen frontal, a face the scan is at least UnreadScore sure of is
	// unread too; one it is less sure of, or a cascade's verified face
	// (whose score is the cascade's), is refused.
	cfg.UnreadScore = 0.85
	for _, c := range []struct {
		name  string
		score float64
		scan  bool
		want  int
	}{{"scan, sure", 0.9, true, 1}, {"scan, unsure", 0.8, true, 0}, {"verified cascade face", 9, false, 0}} {
		f := square(200, 150, 100)
		f.Score = c.score
		var tr *Tracker
		if c.scan {
			tr = New(cfg, &scriptDetector{}, detect.Identity, &shiftEstimator{std: 35}, WithScanner(&scriptScanner{faces: []detect.Face{f}}))
		} else {
			cfg := cfg
			cfg.ScanEvery = 0
			tr = New(cfg, &scriptDetector{faces: []detect.Face{f}}, detect.Identity, &shiftEstimator{std: 35}, WithVerifier(v))
		}
		faces := tr.Process(img)
		if len(faces) != c.want || c.want == 1 && faces[0].Has != [3]bool{} {
			t.Errorf("frontal, %s: %+v; want %d face(s) without angles", c.name, faces, c.want)
		}
	}
}

// scriptLandmarker finds a face on every look and counts them.
type scriptLandmarker struct{ looks int }

func (l *scriptLandmarker) Landmarks(_ *image.Gray, box feature.Box) (yunet.Face, bool) {
	l.looks++
	f := yunet.Face{X: box.X, Y: box.Y, W: box.W, H: box.H, Score: 0.9}
	for i := range f.Landmarks {
		f.Landmarks[i] = box.X + float64(i)
	}
	return f, true
}

// noFuser reads nothing (a face past the expert's gate).
type noFuser struct{}

func (noFuser) Fuse(*pose.Result, feature.Box, *feature.Landmarks) bool { return false }

// addFuser moves yaw by +3° and halves its σ: a landmark reading.
type addFuser struct{}

func (addFuser) Fuse(r *pose.Result, _ feature.Box, _ *feature.Landmarks) bool {
	r.Angles[0] += 3
	r.Std[0] /= 2
	r.Landmarks = true
	return true
}

// Landmarks are looked for on a face's first frame, then every
// LandmarkEvery frames and when its yaw moves more than landmarkMove; in
// between the last look's correction is carried over to the model's
// angles and σ, and the landmarks are published with a look only.
func TestTrackLandmarkSchedule(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 100, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, LandmarkEvery: 3}
	det := &scriptDetector{faces: []detect.Face{square(200, 100, 100)}}
	yaw := 20.0
	est := &scriptEstimator{yaw: func(feature.Box) float64 { return yaw }, std: 8}
	lm := &scriptLandmarker{}
	tr := New(cfg, det, detect.Identity, est, WithLandmarks(lm, addFuser{}))
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	for i, c := range []struct {
		yaw   float64
		looks int // after this frame
	}{{20, 1}, {21, 1}, {22, 1}, {22, 2}, {25, 2}, {29, 3}, {29, 3}, {33, 3}, {33, 4}} {
		yaw = c.yaw
		faces := tr.Process(img)
		if len(faces) != 1 {
			t.Fatalf("frame %d: %+v", i, faces)
		}
		f := faces[0]
		if lm.looks != c.looks {
			t.Errorf("frame %d: %d looks, want %d", i, lm.looks, c.looks)
		}
		if f.Angles[0] != c.yaw+3 || f.Std[0] != 4 {
			t.Errorf("frame %d: yaw %g σ %g, want the model's %g corrected by +3 and σ halved", i, f.Angles[0], f.Std[0], c.yaw)
		}
	}
	// A look that fuses nothing (past the expert's gate) holds until the
	// next is due: not a network run every frame.
	lm.looks = 0
	tr = New(cfg, det, detect.Identity, est, WithLandmarks(lm, noFuser{}))
	for range 6 {
		tr.Process(img)
	}
	if lm.looks != 2 {
		t.Errorf("a face the expert does not read: %d looks in 6 frames, want 2 (every 3)", lm.looks)
	}
	// Published with the looks only.
	lm.looks = 0
	tr = New(cfg, det, detect.Identity, est, WithLandmarks(lm, addFuser{}))
	yaw = 0
	for i := range 4 {
		f := tr.Process(img)[0]
		if want := i%3 == 0; f.HasLandmarks != want {
			t.Errorf("frame %d: landmarks published %v, want %v", i, f.HasLandmarks, want)
		}
		if m := f.Message(); (m.Landmarks != [5][2]float64{}) != f.HasLandmarks {
			t.Errorf("frame %d: message landmarks %v", i, m.Landmarks)
		}
	}
}

// stepEstimator moves a box half way toward the face at *x and 3 px past
// it: a refinement whose fixed point (x + 6) is not where the face is.
type stepEstimator struct{ x *float64 }

func (e stepEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	from.X += 0.5*(*e.x-from.X) + 3
	return pose.Result{Box: from, Angles: [3]float64{10, 0, 0}, Std: [3]float64{5, 5, 5}}
}
func (stepEstimator) Refines() bool       { return true }
func (stepEstimator) HasAngle(i int) bool { return true }

// Anchored: a still face's refinement starts from its detection's box on
// every frame, so each frame reads it as the first did (refined again and
// again, the box goes to the refinement's fixed point instead); a moving
// face's start follows the refined box's moves, so the box keeps up.
func TestTrackAnchored(t *testing.T) {
	for _, anchored := range []bool{false, true} {
		cfg := Config{MaxFaces: 4, Every: 100, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, Anchored: anchored}
		x := 200.0
		det := &scriptDetector{faces: []detect.Face{square(x, 100, 100)}}
		tr := New(cfg, det, detect.Identity, stepEstimator{&x})
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		var boxes []float64
		for range 6 {
			boxes = append(boxes, tr.Process(img)[0].Box.X)
		}
		// The first frame: 200 + 0 + 3.
		still := slices.IndexFunc(boxes, func(b float64) bool { return b != 203 }) < 0
		if still != anchored {
			t.Errorf("anchored %v: a still face's boxes %v", anchored, boxes)
		}
		// The face moves 8 px a frame: the box follows within 10 px.
		for i := range 10 {
			x += 8
			b := tr.Process(img)[0].Box.X
			if anchored && i > 3 && math.Abs(b-x) > 10 {
				t.Errorf("moving face at %g: box at %g", x, b)
			}
		}
	}
}

// refineEstimator answers yaw *turn + from.X/100 at any box, moves the box
// 4 px right per prediction (three a refinement) and counts its
// refinements and steps.
type refineEstimator struct {
	turn        *float64
	full, steps int
}

func (e *refineEstimator) read(from feature.Box) (float64, feature.Box) {
	from.X += 4
	return *e.turn + from.X/100, from
}

func (e *refineEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	e.full++
	y, b1 := e.read(from)
	b3 := b1
	b3.X += 8
	return pose.Result{Box: b3, Angles: [3]float64{y + 1, 0, 0}, Std: [3]float64{5, 5, 5}, Iterations: 3,
		First: [3]float64{y, 0, 0}, FirstStd: [3]float64{4, 4, 4}, FirstBox: b1}
}

func (e *refineEstimator) Step(_ *image.Gray, from feature.Box, _ *pose.Result) pose.Result {
	e.steps++
	y, b1 := e.read(from)
	return pose.Result{Box: b1, Angles: [3]float64{y, 0, 0}, Std: [3]float64{4, 4, 4}, Iterations: 1,
		First: [3]float64{y, 0, 0}, FirstStd: [3]float64{4, 4, 4}, FirstBox: b1}
}
func (e *refineEstimator) Refines() bool       { return true }
func (e *refineEstimator) HasAngle(i int) bool { return i == 0 }

// RefineEvery: an anchored face is refined in full on its first frame and
// every RefineEvery-th after, read with one step in between; it publishes
// what the full refinement would have on a still face (the step's change
// carried onto the last full answer), and a turn past refineTurn or a detection that renews
// its anchor refines it in full at once.
func TestTrackRefineEvery(t *testing.T) {
	run := func(every, detEvery int, turns []float64) ([]Face, *refineEstimator) {
		cfg := Config{MaxFaces: 4, Every: detEvery, LostAfter: 100, MinIoU: 0.3, MaxStd: 60, Anchored: true, RefineEvery: every}
		turn := 0.0
		est := &refineEstimator{turn: &turn}
		det := &scriptDetector{faces: []detect.Face{square(200, 100, 100)}}
		tr := New(cfg, det, detect.Identity, est)
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		var out []Face
		for _, a := range turns {
			turn = a
			f := tr.Process(img)
			if len(f) != 1 {
				t.Fatalf("every %d: %d faces", every, len(f))
			}
			out = append(out, f[0])
		}
		return out, est
	}
	still := make([]float64, 9)
	want, ref := run(1, 100, still)
	got, est := run(4, 100, still)
	if ref.steps != 0 || ref.full != 9 {
		t.Errorf("RefineEvery 1: %d refinements, %d steps; want 9, 0", ref.full, ref.steps)
	}
	// Full on frames 1, 5 and 9; steps on the 6 between.
	if est.full != 3 || est.steps != 6 {
		t.Errorf("RefineEvery 4, a still face: %d refinements, %d steps; want 3, 6", est.full, est.steps)
	}
	for i := range want {
		if math.Abs(got[i].Angles[0]-want[i].Angles[0]) > 1e-9 || math.Abs(got[i].Box.X-want[i].Box.X) > 1e-9 {
			t.Errorf("frame %d: stepped yaw %g box %g, refined %g box %g", i+1, got[i].Angles[0], got[i].Box.X, want[i].Angles[0], want[i].Box.X)
		}
	}
	// A 5° turn on frame 3 (past refineTurn): a step, then in full.
	_, est = run(4, 100, []float64{0, 0, 5, 5, 5})
	if est.full != 2 || est.steps != 4 {
		t.Errorf("a 5° turn: %d refinements, %d steps; want 2 (frames 1, 3), 4 (frames 2 to 5)", est.full, est.steps)
	}
	// 2° (within refineTurn): carried by the step, as a third of the
	// mean of three predictions.
	got, est = run(4, 100, []float64{0, 0, 2, 2})
	if est.full != 1 || math.Abs(got[3].Angles[0]-got[1].Angles[0]-2.0/3) > 1e-9 {
		t.Errorf("a 2° turn: %d refinements, yaw %g → %g", est.full, got[1].Angles[0], got[3].Angles[0])
	}
	// A detection every 2 frames renews the anchor: those frames in full.
	_, est = run(4, 2, still[:6])
	if est.full != 3 || est.steps != 3 {
		t.Errorf("detections every 2 frames: %d refinements, %d steps; want 3, 3", est.full, est.steps)
	}
}

// seeingDetector is a scriptDetector that sees (Seer) only boxes of at
// least min pixels.
type seeingDetector struct {
	scriptDetector
	min float64
}

func (d *seeingDetector) Sees(box feature.Box, _ image.Rectangle) bool { return box.W >= d.min }

// A detection that could not have found a face (Seer) counts no miss
// against it: a face smaller than the detector's smallest is kept through
// detections that miss it, a face it could find is dropped after
// LostAfter misses, as before.
func TestTrackMissesOnlyWhereSeen(t *testing.T) {
	for _, c := range []struct {
		min  float64
		kept bool
	}{{60, true}, {40, false}} {
		cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, Smoothing: 0, MaxStd: 60}
		det := &seeingDetector{min: c.min}
		est := &scriptEstimator{yaw: func(b feature.Box) float64 { return b.X / 10 }, std: 5}
		tr := New(cfg, det, detect.Identity, est)
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		det.faces = []detect.Face{square(100, 100, 48)}
		tr.Process(img)
		det.faces = nil
		n := 0
		for range 6 {
			n = len(tr.Process(img))
		}
		if kept := n == 1; kept != c.kept {
			t.Errorf("a 48-px face, a detector seeing from %g px: %d faces after 6 misses, want kept %v", c.min, n, c.kept)
		}
	}
}

// faceAtEstimator reads a face at *x: its σ grows with a box's distance
// from it, and it keeps the box where it starts.
type faceAtEstimator struct{ x *float64 }

func (e faceAtEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	s := 2 + math.Abs(from.X-*e.x)/5
	return pose.Result{Box: from, Angles: [3]float64{10, 0, 0}, Std: [3]float64{s, s, s}, Iterations: 1}
}
func (faceAtEstimator) Refines() bool       { return true }
func (faceAtEstimator) HasAngle(i int) bool { return true }

// An anchored track that a detection matches only by the centre rule
// (overlap under sameFace) is re-anchored on it where the model reads the
// face better there (the face moved, the track slid off), and keeps its
// own box where the model reads it better in the track (the detection a
// poor window half on the face).
func TestTrackKeepsItsBoxAgainstAPoorDetection(t *testing.T) {
	for _, c := range []struct {
		name       string
		face, detX float64
		wantX      float64
	}{
		{"a poor window beside the face", 100, 140, 100},
		{"the face moved", 140, 140, 140},
	} {
		cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, Anchored: true}
		x := 100.0
		det := &scriptDetector{faces: []detect.Face{square(100, 100, 100)}}
		tr := New(cfg, det, detect.Identity, faceAtEstimator{&x})
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		tr.Process(img)
		x = c.face
		det.faces = []detect.Face{square(c.detX, 100, 100)} // IoU 0.43 with the track
		f := tr.Process(img)
		if len(f) != 1 || f[0].Box.X != c.wantX {
			t.Errorf("%s: faces %+v, want one at x %g", c.name, f, c.wantX)
		}
	}
}

// fromEstimator answers *yaw at any box, leaves the box where it is and
// records the box each refinement starts from.
type fromEstimator struct {
	yaw   *float64
	froms []feature.Box
}

func (e *fromEstimator) Estimate(_ *image.Gray, from feature.Box) pose.Result {
	e.froms = append(e.froms, from)
	return pose.Result{Box: from, Angles: [3]float64{*e.yaw, 0, 0}, Std: [3]float64{5, 5, 5}}
}
func (*fromEstimator) Refines() bool     { return true }
func (*fromEstimator) HasAngle(int) bool { return true }

// turnLandmarker finds the face 30 px right of the box it is asked about,
// seen frontal (eyes level either side of the nose).
type turnLandmarker struct{ looks int }

func (l *turnLandmarker) Landmarks(_ *image.Gray, box feature.Box) (yunet.Face, bool) {
	l.looks++
	f := yunet.Face{X: box.X + 30, Y: box.Y, W: box.W, H: box.H, Score: 0.9}
	cx, cy := f.X+f.W/2, f.Y+f.H/2
	f.Landmarks = [10]float64{cx - 20, cy - 10, cx + 20, cy - 10, cx, cy + 5, cx - 15, cy + 25, cx + 15, cy + 25}
	return f, true
}

// Anchored, a landmark look that the yaw's move called for renews the
// track's anchor: the next frame is read from the look's face as a
// detection's box, not from the box placed for the pose before the turn.
// A scheduled look on a still face does not move the anchor.
func TestTrackReanchorsOnATurn(t *testing.T) {
	for _, anchored := range []bool{false, true} {
		cfg := Config{MaxFaces: 4, Every: 100, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, Anchored: anchored, LandmarkEvery: 2}
		det := &scriptDetector{faces: []detect.Face{square(200, 100, 100)}}
		yaw := 20.0
		est := &fromEstimator{yaw: &yaw}
		lm := &turnLandmarker{}
		tr := New(cfg, det, detect.Identity, est, WithLandmarks(lm, addFuser{}))
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		for range 4 { // looks on frames 0 and 2, on schedule
			tr.Process(img)
		}
		for i, b := range est.froms {
			if b != det.faces[0].Box {
				t.Fatalf("anchored %v: a still face's frame %d read from %+v, want the detection's %+v", anchored, i, b, det.faces[0].Box)
			}
		}
		yaw = 30 // the head turned: frame 4 looks again
		tr.Process(img)
		tr.Process(img)
		if lm.looks != 3 {
			t.Fatalf("anchored %v: %d looks, want 3", anchored, lm.looks)
		}
		look, _ := lm.Landmarks(img, det.faces[0].Box)
		want := detect.AsDetection(look).Box
		got := est.froms[len(est.froms)-1]
		if renewed := got == want; renewed != anchored {
			t.Errorf("anchored %v: the frame after the turn read from %+v; the look's face as a detection is %+v", anchored, got, want)
		}
	}
}

// scriptConfirmer answers by the box, and records the boxes asked about
// and whether each was an unread face's.
type scriptConfirmer struct {
	answer func(b feature.Box) (found, sure bool)
	asked  []feature.Box
	unread []bool
}

func (c *scriptConfirmer) Confirm(_ *image.Gray, b feature.Box, unread bool) (found, sure bool) {
	c.asked, c.unread = append(c.asked, b), append(c.unread, unread)
	return c.answer(b)
}

// The confirmer is told which new faces the model cannot read: an unread
// face is asked about at its detection's box, as unread (the look head
// then judges it at any size, detect.Network.Confirm), a read one at the
// refined box, as read.
func TestTrackConfirmerToldUnread(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, StartStd: 20, Unread: true}
	v := &scriptVerifier{face: func(feature.Box) bool { return true }}
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	for _, c := range []struct {
		std    float64
		x      float64
		unread bool
	}{{35, 400, true}, {5, 407, false}} {
		conf := &scriptConfirmer{answer: func(feature.Box) (bool, bool) { return true, true }}
		det := &scriptDetector{faces: []detect.Face{turned(400, 100, 80)}}
		tr := New(cfg, det, detect.Identity, &shiftEstimator{std: c.std}, WithVerifier(v), WithConfirmer(conf))
		if faces := tr.Process(img); len(faces) != 1 {
			t.Fatalf("σ %g: %d faces, want 1", c.std, len(faces))
		}
		if len(conf.asked) != 1 || conf.asked[0].X != c.x || conf.unread[0] != c.unread {
			t.Errorf("σ %g: asked about %v (unread %v); want one box at x %g, unread %v", c.std, conf.asked, conf.unread, c.x, c.unread)
		}
	}
}

// A new face is confirmed once, at the box the model refined (not the
// detection's), before it is reported: one the confirmer refuses is never
// reported, counts as unconfirmed, and the cascades' detections of its box
// are then refused without asking for Config.RejectFor frames, as the
// verifier's refusals are; a confirmed face is not asked about again.
func TestTrackConfirmer(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: 5}
	det := &scriptDetector{faces: []detect.Face{square(100, 100, 80), square(400, 100, 80)}}
	v := &scriptVerifier{face: func(feature.Box) bool { return true }}
	c := &scriptConfirmer{answer: func(b feature.Box) (bool, bool) { return b.X > 300, b.X > 300 }}
	// The model refines every box 7 px to the right (shiftEstimator).
	tr := New(cfg, det, detect.Identity, &shiftEstimator{std: 5}, WithVerifier(v), WithConfirmer(c))
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	for frame := 1; frame <= 8; frame++ {
		faces := tr.Process(img)
		if len(faces) != 1 || faces[0].Box.X < 300 {
			t.Fatalf("frame %d: faces %+v, want the confirmed one only", frame, faces)
		}
		want := 0
		if frame == 1 || frame == 7 {
			want = 1
		}
		if got := tr.Timing().Unconfirmed; got != want {
			t.Errorf("frame %d: %d unconfirmed, want %d", frame, got, want)
		}
	}
	// Asked on frame 1 about both faces, at the refined boxes, then about
	// the refused one again once its refusal (frames 1–6) ran out.
	want := []feature.Box{{X: 107, Y: 100, W: 80, H: 80}, {X: 407, Y: 100, W: 80, H: 80}, {X: 107, Y: 100, W: 80, H: 80}}
	if !slices.Equal(c.asked, want) {
		t.Errorf("the confirmer was asked about %v, want %v", c.asked, want)
	}
	if v.calls != 3 {
		t.Errorf("the verifier was asked %d times, want 3 (both faces, then the refused one on frame 7)", v.calls)
	}
	// Without a confirmer both faces are reported.
	tr = New(cfg, det, detect.Identity, &shiftEstimator{std: 5}, WithVerifier(v))
	if faces := tr.Process(img); len(faces) != 2 {
		t.Errorf("without a confirmer: %d faces, want 2", len(faces))
	}
}

// A face the confirmer finds without being sure of it is looked at on
// its next frames until confirmLooks looks have found it, even if one of
// them is sure; a look that misses it ends it, as a refusal on its first
// frame does (Timing.Unconfirmed, its box refused for Config.RejectFor
// frames). With Config.HoldUnsure it is not reported until confirmed;
// without, it is reported meanwhile. A face confirmed is not asked about
// again. (Before, a sure look ended the looks: a phantom the look doubted
// on a noisy frame, sure of it on the next, was kept until its look again
// five frames later, docs/measured.md, "A face found where one was
// refused".)
func TestTrackConfirmerDoubt(t *testing.T) {
	for _, hold := range []bool{true, false} {
		cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: 20, HoldUnsure: hold}
		// Three faces, each found unsure on its first look: the left one
		// on every look, the middle one sure on its second and missed on
		// its third, the right one missed on its second.
		det := &scriptDetector{faces: []detect.Face{square(100, 100, 80), square(300, 100, 80), square(500, 100, 80)}}
		looks := [3]int{}
		c := &scriptConfirmer{answer: func(b feature.Box) (found, sure bool) {
			face := int(b.X) / 200
			looks[face]++
			switch {
			case looks[face] == 1:
				return true, false
			case face == 1 && looks[face] == 2:
				return true, true
			case face >= 1:
				return false, false
			}
			return true, false
		}}
		v := &scriptVerifier{face: func(feature.Box) bool { return true }}
		tr := New(cfg, det, detect.Identity, &shiftEstimator{std: 5}, WithVerifier(v), WithConfirmer(c))
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		type frame struct {
			faces       []int // by x / 200
			unconfirmed int
		}
		want := []frame{{nil, 0}, {nil, 1}, {[]int{0}, 1}, {[]int{0}, 0}, {[]int{0}, 0}}
		if !hold {
			want[0].faces, want[1].faces = []int{0, 1, 2}, []int{0, 1}
		}
		for i, w := range want {
			var got []int
			for _, f := range tr.Process(img) {
				got = append(got, int(f.Box.X)/200)
			}
			slices.Sort(got)
			if !slices.Equal(got, w.faces) {
				t.Errorf("hold %v, frame %d: faces %v (by x / 200), want %v", hold, i+1, got, w.faces)
			}
			if got := tr.Timing().Unconfirmed; got != w.unconfirmed {
				t.Errorf("hold %v, frame %d: %d unconfirmed, want %d", hold, i+1, got, w.unconfirmed)
			}
		}
		// The left and middle faces are looked at on frames 1–3, the
		// right one on frames 1–2, and the two refused never again (their
		// boxes refused).
		if looks != [3]int{confirmLooks, confirmLooks, 2} {
			t.Errorf("hold %v: looks by face %v, want [%d %d 2]", hold, looks, confirmLooks, confirmLooks)
		}
	}
}

// scoreLandmarker finds the face on every look with the confidence
// *score (none at 0), and counts its looks.
type scoreLandmarker struct {
	score *float64
	looks int
}

func (l *scoreLandmarker) Landmarks(_ *image.Gray, box feature.Box) (yunet.Face, bool) {
	l.looks++
	if *l.score == 0 {
		return yunet.Face{}, false
	}
	return yunet.Face{X: box.X, Y: box.Y, W: box.W, H: box.H, Score: *l.score}, true
}

// A small face the detections miss (a 40-px face on the half-size scan)
// stays while its landmark looks find it as surely as presentScore: a
// look counts as its detection. Found less surely, or not at all (the
// person left), the detections' misses end it after LostAfter + 1, as
// without looks.
func TestTrackLookKeepsAFaceDetectionsMiss(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, Smoothing: 0, MaxStd: 60, LandmarkEvery: 3}
	for _, c := range []struct {
		score float64
		kept  bool
	}{{0.9, true}, {presentScore, true}, {0.6, false}, {0, false}} {
		det := &scriptDetector{faces: []detect.Face{square(200, 100, 40)}}
		est := &scriptEstimator{yaw: func(feature.Box) float64 { return 10 }, std: 5}
		score := c.score
		lm := &scoreLandmarker{score: &score}
		tr := New(cfg, det, detect.Identity, est, WithLandmarks(lm, noFuser{}))
		img := image.NewGray(image.Rect(0, 0, 640, 480))
		tr.Process(img)
		det.faces = nil // every detection from here misses it
		frames := 0
		for range 30 {
			if len(tr.Process(img)) == 0 {
				break
			}
			frames++
		}
		switch {
		case c.kept && frames != 30:
			t.Errorf("looks at %g: the face dropped after %d missed detections", c.score, frames)
		case !c.kept && frames != cfg.LostAfter:
			t.Errorf("looks at %g: the face kept for %d missed detections, want %d", c.score, frames, cfg.LostAfter)
		}
		if lm.looks < 2 {
			t.Errorf("looks at %g: %d looks", c.score, lm.looks)
		}
	}
}

// A tracked face the network has not found surely for ConfirmEvery frames
// is looked at closely again (Config.ConfirmEvery): a face its landmark
// looks find at presentScore, or a scan reports as it reports a new face,
// never is; one that the detections alone keep (the cascades, or the
// scan's weak answers on it) is, every ConfirmEvery frames. A look that
// misses it is made again on the next frame, and ends it as unconfirmed if
// it misses too (reconfirmMisses); one miss alone is forgiven. The box of
// a face so ended is refused to the cascades as a new face's is; a scan's
// face starts a new track, looked at closely as every new face is.
func TestTrackConfirmsATrackedFaceAgain(t *testing.T) {
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: 20, LandmarkEvery: 1, ConfirmEvery: 4}
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	both, once := []int{9, 10}, []int{5, 9}
	for _, c := range []struct {
		name   string
		look   float64 // the landmark looks' confidence (0: none)
		scan   int     // 0: the cascades find the face; 1: a scan, 2: a scan's weak answer
		refuse []int   // the frames whose looks miss the face
		asked  []int   // frames on which the confirmer is asked
		ends   int     // the frame it ends on (0: it does not)
		back   int     // the frame it is reported again after it ended (0: not within 14)
	}{
		{"looks sure", 0.9, 0, both, []int{1}, 0, 0},
		{"looks unsure", 0.5, 0, both, []int{1, 5, 9, 10}, 10, 0},
		{"no look", 0, 0, both, []int{1, 5, 9, 10}, 10, 0},
		{"one miss at a time", 0.5, 0, once, []int{1, 5, 6, 10, 14}, 0, 0},
		{"a scan", 0.5, 1, both, []int{1}, 0, 0},
		// Found again by the scan on frame 11, where it was refused on
		// frame 10: a suspect, sure on its first look and published once
		// its looks have run their course (confirmLooks).
		{"a scan's weak answer", 0.5, 2, both, []int{1, 5, 9, 10, 11, 12, 13}, 10, 13},
	} {
		face := square(200, 100, 80)
		face.Weak = c.scan == 2
		det := &scriptDetector{faces: []detect.Face{face}}
		var asked []int
		frame := 0
		conf := &scriptConfirmer{answer: func(feature.Box) (bool, bool) {
			asked = append(asked, frame)
			return !slices.Contains(c.refuse, frame), true
		}}
		score := c.look
		opts := []Option{WithVerifier(&scriptVerifier{face: func(feature.Box) bool { return true }}), WithConfirmer(conf), WithLandmarks(&scoreLandmarker{score: &score}, noFuser{})}
		cc := cfg
		if c.scan > 0 {
			cc.ScanEvery = 1
			opts = append(opts, WithScanner(&scriptScanner{faces: det.faces}))
		}
		tr := New(cc, det, detect.Identity, &scriptEstimator{yaw: func(feature.Box) float64 { return 10 }, std: 5}, opts...)
		for frame = 1; frame <= 14; frame++ {
			faces := tr.Process(img)
			gone := c.ends > 0 && frame >= c.ends && (c.back == 0 || frame < c.back)
			if gone == (len(faces) == 1) {
				t.Errorf("%s, frame %d: %d faces, want %d", c.name, frame, len(faces), map[bool]int{true: 0, false: 1}[gone])
			}
			want := 0
			if frame == c.ends {
				want = 1
			}
			if got := tr.Timing().Unconfirmed; got != want {
				t.Errorf("%s, frame %d: %d unconfirmed, want %d", c.name, frame, got, want)
			}
		}
		if !slices.Equal(asked, c.asked) {
			t.Errorf("%s: the confirmer was asked on frames %v, want %v", c.name, asked, c.asked)
		}
	}
}

// A face found where the network refused one lately (a new face's close
// look missed it, or a tracked face's looks again) is a suspect: it is
// not reported until its confirmLooks looks have all found it, one of
// them surely, and ends if one misses or all are unsure. A phantom the
// scan finds again and again is then published once, not on every return
// (docs/measured.md, "A phantom kept"). Elsewhere, or once doubtFor·RejectFor frames have passed, a
// face found unsure is reported at once, as before.
func TestTrackSuspectsAFaceWhereOneWasRefused(t *testing.T) {
	const rejectFor = 2
	cfg := Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: rejectFor, ScanEvery: 1}
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	type look struct{ found, sure bool }
	miss, unsure, sure := look{false, false}, look{true, false}, look{true, true}
	later := int(doubtFor*rejectFor) + 2 // past the suspicion
	for _, c := range []struct {
		name     string
		looks    map[int]look // the confirmer's answer by frame (unsure where not said)
		absent   []int        // frames on which the scan finds nothing
		reported []int        // frames on which the face is reported
		ends     []int        // frames on which a face ends unconfirmed
	}{
		{"found unsure, never refused", map[int]look{}, nil, []int{1, 2, 3, 4, 5, 6}, nil},
		{"refused, then found unsure", map[int]look{1: miss}, nil, nil, []int{1, 4}},
		// A sure look does not cut a suspect's looks short: it is
		// published once all confirmLooks have found it.
		{"refused, then found surely on its second look", map[int]look{1: miss, 3: sure}, nil, []int{4, 5, 6}, []int{1}},
		{"refused, then found surely at once", map[int]look{1: miss, 2: sure}, nil, []int{4, 5, 6}, []int{1}},
		{"refused, found surely at once, then missed", map[int]look{1: miss, 2: sure, 3: miss}, nil, nil, []int{1, 3, 6}},
		{"refused, found again once its refusal ended", map[int]look{1: miss}, seq(2, 1+rejectFor), nil, []int{1, 6}},
		{"refused long before", map[int]look{1: miss}, seq(2, later-1), seq(later, later+2), []int{1}},
	} {
		face := square(200, 100, 80)
		sc := &scriptScanner{}
		frame := 0
		conf := &scriptConfirmer{answer: func(feature.Box) (bool, bool) {
			l, ok := c.looks[frame]
			if !ok {
				l = unsure
			}
			return l.found, l.sure
		}}
		tr := New(cfg, &scriptDetector{}, detect.Identity, &scriptEstimator{yaw: func(feature.Box) float64 { return 10 }, std: 5},
			WithScanner(sc), WithConfirmer(conf))
		var reported, ends []int
		last := max(6, later+2)
		for frame = 1; frame <= last; frame++ {
			sc.faces = []detect.Face{face}
			if slices.Contains(c.absent, frame) {
				sc.faces = nil
			}
			if frame > 1 && len(sc.faces) > 0 {
				// The scan's box of a phantom moves: larger, its overlap
				// with the refused box under sameFace.
				sc.faces = []detect.Face{square(185, 85, 120)}
			}
			if len(tr.Process(img)) == 1 {
				reported = append(reported, frame)
			}
			if tr.Timing().Unconfirmed > 0 {
				ends = append(ends, frame)
			}
		}
		if c.name != "refused long before" {
			reported = slices.DeleteFunc(reported, func(f int) bool { return f > 6 })
			ends = slices.DeleteFunc(ends, func(f int) bool { return f > 6 })
		}
		if !slices.Equal(reported, c.reported) {
			t.Errorf("%s: reported on frames %v, want %v", c.name, reported, c.reported)
		}
		if !slices.Equal(ends, c.ends) {
			t.Errorf("%s: ended unconfirmed on frames %v, want %v", c.name, ends, c.ends)
		}
	}
}

// seq returns the integers from a to b.
func seq(a, b int) []int {
	var s []int
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}

// A full list of refusals makes room for a new one by forgetting a
// suspicion, never a refusal still refusing.
func TestTrackRefusalsFullKeepTheRefusing(t *testing.T) {
	tr := New(Config{MaxFaces: 4, Every: 1, LostAfter: 2, MinIoU: 0.3, MaxStd: 60, RejectFor: 2}, &scriptDetector{}, detect.Identity,
		&scriptEstimator{yaw: func(feature.Box) float64 { return 0 }, std: 5})
	box := func(i int) feature.Box { return square(float64(10+30*i), 10, 20).Box }
	tr.frame = 10
	for i := range maxRefusals {
		if i == 3 {
			tr.frame = 11 // one refused a frame later: its suspicion lasts longer
		}
		tr.refuse(box(i))
	}
	has := func(b feature.Box) bool {
		return slices.ContainsFunc(tr.refused, func(r refusal) bool { return r.box == b })
	}
	tr.refuse(box(maxRefusals)) // every one still refusing
	if has(box(maxRefusals)) || len(tr.refused) != maxRefusals {
		t.Fatalf("a refusal past the bound replaced one still refusing: %d remembered", len(tr.refused))
	}
	tr.frame = 13 // the first three refuse no more (until 12) and only suspect
	tr.refuse(box(maxRefusals + 1))
	if !has(box(maxRefusals+1)) || len(tr.refused) != maxRefusals {
		t.Fatalf("the new refusal was not remembered in a full list: %d remembered", len(tr.refused))
	}
	gone := 0
	for i := range maxRefusals {
		if !has(box(i)) {
			if i >= 3 {
				t.Errorf("refusal %d, still refusing, was forgotten", i)
			}
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("%d refusals forgotten for one new one, want 1", gone)
	}
	if !tr.suspected(box(3)) {
		t.Errorf("a face at a box refused 2 frames ago is not suspected")
	}
}
