package track

import (
	"cmp"
	"image"
	"image/draw"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgepose/posed/train/dataset/datatest"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// turning returns Pointing'04 person 7 (series 1, pitch 0) turning the
// head from yaw −90° to +90° and back in 15° steps, as `make run` replays
// it, with the ground-truth yaw of each frame.
func turning(t *testing.T) ([]*image.Gray, []float64) {
	t.Helper()
	samples, err := dataset.Read(filepath.Join(dataset.Root(), "pointing04"))
	if err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	byYaw := map[float64]string{}
	for _, s := range samples {
		if s.Subject == "7" && s.Series == 1 && s.Pitch == 0 {
			byYaw[s.Yaw] = s.Path
		}
	}
	var yaws []float64
	for y := -90.0; y <= 90; y += 15 {
		yaws = append(yaws, y)
	}
	for y := 75.0; y >= -90; y -= 15 {
		yaws = append(yaws, y)
	}
	frames := make([]*image.Gray, len(yaws))
	for i, y := range yaws {
		if frames[i], err = dataset.LoadGray(byYaw[y]); err != nil {
			t.Fatal(err)
		}
	}
	return frames, yaws
}

// newTracker is a tracker on the default model, with the detector's
// minimum face size set for small frames.
func newTracker(t *testing.T, cfg Config) *Tracker {
	t.Helper()
	tr, _ := trackerWith(t, cfg, 40)
	return tr
}

// defaultConfig is the daemon's default tracking (config.Default), with
// detection every 5 frames as in `make run`.
func defaultConfig() Config {
	return Config{MaxFaces: 4, Every: 5, LostAfter: 3, MinIoU: 0.3, Smoothing: 0.5, MaxStd: 60, StartStd: 30, RecheckStd: 30, RecheckTurn: 45}
}

// One person turning the head is one face with one track id, never two
// overlapping faces (the detector may return two nested windows for one
// face; the refinement pulls both onto it), and yaw follows the turn.
func TestOnePersonOneTrack(t *testing.T) {
	frames, yaws := turning(t)
	tr := newTracker(t, defaultConfig())
	ids := map[uint64]int{}
	errSum, n := 0.0, 0
	for round := 0; round < 2; round++ {
		for i, f := range frames {
			faces := tr.Process(f)
			for a := range faces {
				ids[faces[a].ID]++
				for b := a + 1; b < len(faces); b++ {
					if iou := feature.IoU(faces[a].Box, faces[b].Box); iou > 0.3 {
						t.Errorf("round %d frame %d (yaw %g): faces %d and %d overlap (IoU %.2f)", round, i, yaws[i], faces[a].ID, faces[b].ID, iou)
					}
				}
			}
			if len(faces) > 0 {
				d := faces[0].Angles[0] - yaws[i]
				errSum += max(d, -d)
				n++
			}
		}
	}
	total := 2 * len(frames)
	t.Logf("track ids and frames: %v; yaw MAE %.1f° over %d of %d frames", ids, errSum/float64(n), n, total)
	if n < total*3/4 {
		t.Errorf("a face in %d of %d frames", n, total)
	}
	if len(ids) > 2 {
		t.Errorf("%d track ids for one person: %v", len(ids), ids)
	}
	// Smoothing 0.5 lags a 15°-per-frame turn by about 15°; on top of the
	// model's ~10° error (this person is in its training set) 25° is loose.
	if mae := errSum / float64(n); mae > 25 {
		t.Errorf("yaw MAE %.1f°: the track does not follow the turn", mae)
	}
}

// Two people: both are found, reported largest first, and MaxFaces caps
// the report; when they leave the frame their tracks end.
func TestTwoFacesLargestFirstAndLeaving(t *testing.T) {
	frames, _ := turning(t)
	front := frames[6] // yaw 0
	small := image.NewGray(image.Rect(0, 0, front.Rect.Dx()*2/3, front.Rect.Dy()*2/3))
	for y := 0; y < small.Rect.Dy(); y++ {
		for x := 0; x < small.Rect.Dx(); x++ {
			small.Pix[y*small.Stride+x] = front.Pix[(y*3/2)*front.Stride+x*3/2]
		}
	}
	scene := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range scene.Pix {
		scene.Pix[i] = 128
	}
	draw.Draw(scene, image.Rect(0, 0, 384, 288), front, image.Point{}, draw.Src)
	draw.Draw(scene, image.Rect(384, 240, 640, 432), small, image.Point{}, draw.Src)
	empty := image.NewGray(scene.Rect)
	for i := range empty.Pix {
		empty.Pix[i] = 128
	}

	cfg := defaultConfig()
	cfg.Every = 1
	tr := newTracker(t, cfg)
	var faces []Face
	for range 3 {
		faces = tr.Process(scene)
	}
	if len(faces) != 2 {
		t.Fatalf("%d faces in a scene of two people: %+v", len(faces), faces)
	}
	if faces[0].Box.W <= faces[1].Box.W || faces[0].Box.X > 384 || faces[1].Box.X < 384 {
		t.Errorf("not largest first: %+v", faces)
	}

	cfg.MaxFaces = 1
	one := newTracker(t, cfg)
	one.Process(scene)
	if got := one.Process(scene); len(got) != 1 || got[0].Box.X > 384 {
		t.Errorf("MaxFaces 1 reports %+v, want the larger face only", got)
	}

	for i := 0; i < 10; i++ {
		faces = tr.Process(empty)
	}
	if len(faces) != 0 {
		t.Errorf("faces remain after they left: %+v", faces)
	}
}

// A face that moves between two detections further than one refinement
// follows (a fast head movement, or a refinement that slid off the face)
// leaves its track half off it; the detection finds the face overlapping
// the stale box and the track continues there with its id: one face,
// never a second track, and the box back on the face.
func TestDetectionPullsBackADriftedTrack(t *testing.T) {
	frames, _ := turning(t)
	front := frames[6] // yaw 0
	at := func(x, y int) *image.Gray {
		s := image.NewGray(image.Rect(0, 0, 640, 480))
		for i := range s.Pix {
			s.Pix[i] = 128
		}
		draw.Draw(s, image.Rect(x, y, x+384, y+288), front, image.Point{}, draw.Src)
		return s
	}
	before, after := at(60, 60), at(60+jumpX, 60+jumpY)
	ref := newTracker(t, defaultConfig()).Process(after)
	if len(ref) != 1 {
		t.Fatalf("%d faces in the moved scene", len(ref))
	}
	want := ref[0].Box

	tr := newTracker(t, defaultConfig()) // smoothing on: the re-anchored box must not lag
	var faces []Face
	for range 5 { // frame 1 detects, 2-5 follow
		faces = tr.Process(before)
	}
	if len(faces) != 1 {
		t.Fatalf("%d faces in the first scene", len(faces))
	}
	id := faces[0].ID
	t.Logf("the jump leaves the track box at IoU %.2f with the face", feature.IoU(faces[0].Box, want))
	faces = tr.Process(after) // frame 6: one refinement from the old box, then a detection
	if len(faces) != 1 || faces[0].ID != id {
		t.Fatalf("after the detection: %d faces %+v, want one, track %d", len(faces), faces, id)
	}
	if iou := feature.IoU(faces[0].Box, want); iou < 0.7 {
		t.Errorf("track box %+v has IoU %.2f with the face at %+v", faces[0].Box, iou, want)
	}
}

// The jump, in pixels: the face is about 105 pixels wide.
const jumpX, jumpY = 45, 40

// Two heads side by side, as close as heads get, stay two tracks through
// the detections that re-match them.
func TestAdjacentHeadsStayTwoTracks(t *testing.T) {
	frames, _ := turning(t)
	front := frames[6]
	one := newTracker(t, defaultConfig()).Process(front)
	if len(one) != 1 {
		t.Fatalf("%d faces in the photograph", len(one))
	}
	b := one[0].Box
	w := int(1.15 * b.W) // crops a little wider than the face box, set edge to edge
	crop := image.Rect(int(b.X+b.W/2)-w/2, int(b.Y)-w/4, int(b.X+b.W/2)+w/2, int(b.Y)-w/4+2*w)
	scene := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range scene.Pix {
		scene.Pix[i] = 128
	}
	draw.Draw(scene, image.Rect(100, 100, 100+w, 100+2*w), front, crop.Min, draw.Src)
	draw.Draw(scene, image.Rect(100+w, 100, 100+2*w, 100+2*w), front, crop.Min, draw.Src)
	tr := newTracker(t, defaultConfig())
	var faces []Face
	for i := range 11 { // detections at frames 1, 6 and 11
		faces = tr.Process(scene)
		if i == 0 && len(faces) != 2 {
			t.Fatalf("%d faces detected in a scene of two heads %d px apart", len(faces), w)
		}
	}
	if len(faces) != 2 || faces[0].ID == faces[1].ID || max(faces[0].ID, faces[1].ID) != 2 {
		t.Errorf("two heads %d px apart (faces %.0f px): %d faces %+v, want the two first tracks", w, b.W, len(faces), faces)
	}
}

// People who are never frontal (Pointing'04 persons 4, 7 and 12, each
// both series, every pitch from −60° to 60°, |yaw| ≥ 60°: 84 frames a
// person, nodding while turned one way, then the other: yaw 60, 75, 90
// with pitch up, down, up) are acquired and followed with the detector's
// turned cascade: a face on at least 90 % of each person's frames and 93 %
// of the 252 (95.6 % measured with the shipped cascade; the replay jumps from one side to the other
// three times, and the first frame after a jump is a miss for any tracker
// that does not detect on every frame), where facefinder alone finds them
// on fewer. A track the model doubts (track.recheck_std) or whose yaw
// jumps (track.recheck_turn: the box slid off after a jump) is checked by
// detection on the next frame: more frames with the face, for a few more
// detections. (The shipped cascade was trained on every person; posectl
// detections measures persons it never saw.)
func TestNeverFrontalPerson(t *testing.T) {
	samples, err := dataset.Read(filepath.Join(dataset.Root(), "pointing04"))
	if err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	type replay struct {
		seq    []dataset.Sample
		frames []*image.Gray
	}
	var people []replay
	for _, person := range []string{"4", "7", "12"} {
		var seq []dataset.Sample
		for _, s := range samples {
			if s.Subject == person && math.Abs(s.Yaw) >= 60 {
				seq = append(seq, s)
			}
		}
		if len(seq) != 84 {
			t.Fatalf("person %s: %d frames with |yaw| ≥ 60°, want 84", person, len(seq))
		}
		// In each series, by yaw, and by pitch up at one yaw, down at the next.
		slices.SortStableFunc(seq, func(a, b dataset.Sample) int {
			if c := cmp.Or(cmp.Compare(a.Series, b.Series), cmp.Compare(math.Copysign(1, a.Yaw), math.Copysign(1, b.Yaw)), cmp.Compare(math.Abs(a.Yaw), math.Abs(b.Yaw))); c != 0 {
				return c
			}
			if int(math.Abs(a.Yaw)/15)%2 == 1 {
				return cmp.Compare(b.Pitch, a.Pitch)
			}
			return cmp.Compare(a.Pitch, b.Pitch)
		})
		frames := make([]*image.Gray, len(seq))
		for i, s := range seq {
			if frames[i], err = dataset.LoadGray(s.Path); err != nil {
				t.Fatal(err)
			}
		}
		people = append(people, replay{seq, frames})
	}
	// share replays one person with a fresh tracker: the frames with the
	// face (a box of IoU > 0.2 with the labelled one) and the detections.
	share := func(p replay, turned bool, recheck float64) (int, int) {
		cfg := defaultConfig()
		cfg.Every, cfg.RecheckStd = 10, recheck
		if recheck == 0 {
			cfg.RecheckTurn = 0
		}
		tr, _ := trackerTurned(t, cfg, 40, turned)
		seen, detections := 0, 0
		for i, f := range p.frames {
			hit := false
			faces := tr.Process(f)
			if tr.Timing().Detected {
				detections++
			}
			for _, face := range faces {
				if feature.IoU(face.Box, p.seq[i].Box.Square()) > 0.2 {
					hit = true
				}
			}
			if hit {
				seen++
			} else if turned && recheck > 0 {
				t.Logf("missed: person %s, yaw %g pitch %g series %d: %v", p.seq[i].Subject, p.seq[i].Yaw, p.seq[i].Pitch, p.seq[i].Series, faces)
			}
		}
		return seen, detections
	}
	var frames, with, noRecheck, without, dets, detsNo int
	for _, p := range people {
		w, d := share(p, true, 30)
		n, dn := share(p, true, 0)
		f, _ := share(p, false, 30)
		t.Logf("person %s: a face on %d of %d frames with the turned cascade (%d detections; %d and %d without rechecks), %d with facefinder alone",
			p.seq[0].Subject, w, len(p.frames), d, n, dn, f)
		if w < len(p.frames)*9/10 {
			t.Errorf("person %s, never frontal: seen on %d of %d frames, want ≥ 90 %%", p.seq[0].Subject, w, len(p.frames))
		}
		frames, with, noRecheck, without, dets, detsNo = frames+len(p.frames), with+w, noRecheck+n, without+f, dets+d, detsNo+dn
	}
	pc := func(n int) float64 { return 100 * float64(n) / float64(frames) }
	t.Logf("%d frames: a face on %.1f %% with the turned cascade (%d detections; %.1f %% and %d without rechecks), %.1f %% with facefinder alone",
		frames, pc(with), dets, pc(noRecheck), detsNo, pc(without))
	if pc(with) < 93 || pc(with) < pc(without)+10 {
		t.Errorf("never-frontal people seen on %.1f %% of the frames (facefinder alone %.1f %%), want ≥ 93 %% and 10 points more", pc(with), pc(without))
	}
	if with <= noRecheck || dets > detsNo+frames/10 {
		t.Errorf("rechecking doubtful tracks: %d of the frames with %d detections, %d with %d without", with, dets, noRecheck, detsNo)
	}
}

// withBoxes is a detector that adds fixed boxes to another's detections.
type withBoxes struct {
	Detector
	extra []detect.Face
}

func (d withBoxes) DetectInto(buf *detect.Buffers, img *image.Gray, r image.Rectangle) []detect.Face {
	return append(d.Detector.DetectInto(buf, img, r), d.extra...)
}

// The model checks what the detector reports (StartStd): on Pointing'04
// person 7 turning, detections of the plain wall in the four corners of
// every frame mostly start no track, while the face (found by facefinder
// and the turned cascade) is published on as many frames as without it.
func TestStartStdRefusesBackground(t *testing.T) {
	frames, yaws := turning(t)
	corners := []detect.Face{square(2, 2, 90), square(290, 2, 90), square(2, 190, 90), square(290, 190, 90)}
	// run processes each frame as the first of its scene and counts the
	// frames with the face (a box over the middle of the frame) and the
	// corner boxes published.
	base, _ := trackerTurned(t, defaultConfig(), 40, true)
	run := func(startStd float64) (face, wall int) {
		cfg := defaultConfig()
		cfg.StartStd = startStd
		for i, f := range frames {
			tr := New(cfg, withBoxes{base.det, corners}, base.calib, base.est)
			found := false
			for _, fc := range tr.Process(f) {
				cx, cy := fc.Box.Centre()
				if cx > 120 && cx < 260 && cy > 60 && cy < 230 {
					found = true
				} else {
					wall++
				}
			}
			if found {
				face++
			} else {
				t.Logf("start_std %g: yaw %g°, no face", startStd, yaws[i])
			}
		}
		return face, wall
	}
	face0, wall0 := run(0)
	face, wall := run(30)
	t.Logf("%d frames: face on %d (%d without the check); %d of %d wall boxes published (%d without)", len(frames), face, face0, wall, len(corners)*len(frames), wall0)
	if face < face0 {
		t.Errorf("the check loses the face: on %d frames, %d without it", face, face0)
	}
	if wall0 < len(corners)*len(frames)*3/4 || wall > wall0*2/5 {
		t.Errorf("wall boxes published: %d with the check, %d without (of %d); want most without and at most 40 %% of those with", wall, wall0, len(corners)*len(frames))
	}
}

// With the default model, a face read with one prediction between full
// refinements (Config.RefineEvery) publishes what refining it in full on
// every frame publishes: the same on a still face (within 10⁻⁶° and px),
// within half a degree
// and a pixel on one that moves a pixel a frame; with fewer predictions.
func TestRefineEveryReadsAsRefined(t *testing.T) {
	src := datatest.Frame640(t)
	frame := func(dx int) *image.Gray {
		g := image.NewGray(src.Rect)
		draw.Draw(g, g.Rect, src, image.Pt(-dx, 0), draw.Src)
		return g
	}
	for _, move := range []int{0, 1} {
		var yaws, xs [2][]float64 // published yaw and box
		var preds [2]int
		for k, every := range []int{1, 5} {
			cfg := Config{MaxFaces: 4, Every: 1 << 30, LostAfter: 3, MinIoU: 0.3, Smoothing: 0.5, MaxStd: 60,
				TurnNoise: 1e5, White: 0.4, Anchored: true, RefineEvery: every}
			tr := newTracker(t, cfg)
			// The model alone: a landmark look reads a face a degree
			// apart from boxes a fraction of a pixel apart, whichever
			// way they were refined.
			tr.lmk = nil
			for i := range 15 {
				f := tr.Process(frame(i * move))
				if len(f) != 1 {
					t.Fatalf("refine_every %d, frame %d: %d faces", every, i+1, len(f))
				}
				yaws[k] = append(yaws[k], f[0].Angles[0])
				xs[k] = append(xs[k], f[0].Box.X)
				preds[k] += tr.res.Iterations
			}
		}
		// Still, a step reads the components that carried the full
		// refinement's weight (pose.Result.Heavy), all but 5·10⁻⁸ of it.
		tol, btol := 1e-6, 1e-6
		if move > 0 {
			tol, btol = 0.5, 1
		}
		for i := range yaws[0] {
			if d := math.Abs(yaws[1][i] - yaws[0][i]); d > tol {
				t.Errorf("moving %d px a frame, frame %d: yaw %.3f stepped, %.3f refined", move, i+1, yaws[1][i], yaws[0][i])
			}
			if d := math.Abs(xs[1][i] - xs[0][i]); d > btol {
				t.Errorf("moving %d px a frame, frame %d: box at x %.2f stepped, %.2f refined", move, i+1, xs[1][i], xs[0][i])
			}
		}
		if !(preds[1] < preds[0]*2/3) {
			t.Errorf("moving %d px a frame: %d predictions stepped, %d refined", move, preds[1], preds[0])
		}
	}
}
