// Package track turns frames into tracked faces: it detects faces
// periodically, estimates each face's pose and refines its box every frame
// (so a face the detector loses, in profile say, is still followed by the
// pose model's own box refinement), keeps stable track ids and smooths
// angles and boxes.
package track

import (
	"image"
	"math"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/message"
)

// Config tunes the tracker.
type Config struct {
	MaxFaces  int     // faces reported per frame, largest first
	Every     int     // full-frame detection every N frames while faces are tracked
	LostAfter int     // full detections in a row that miss a face before it is dropped
	MinIoU    float64 // a detection continues a track above this overlap
	Smoothing float64 // exponential smoothing weight of the past box (and angles without TurnNoise), [0, 1)
	// The angles' filter (angleFilter): TurnNoise is the spectral density
	// q of the angular acceleration that moves a head's turning rate,
	// (°/s)²/s; White the share of the model's variance that differs from
	// frame to frame (0, 1]. TurnNoise 0: the angles are smoothed as the
	// boxes are (Smoothing).
	TurnNoise, White float64
	// Interval is the time between two frames that Process assumes
	// (ProcessAt is told); 0: 1/15 s.
	Interval time.Duration
	// LandmarkEvery: with WithLandmarks, a face's landmarks are looked for
	// every LandmarkEvery frames (and when its yaw moves; 0 or 1: every
	// frame), the last look's correction carried between
	// (Tracker.landmarks).
	LandmarkEvery int
	// Anchored: a tracked face's refinement starts each frame from where
	// the last one started (its detection's box), moved as the refined
	// box moved, instead of from the last refined box: refined again
	// frame after frame, a still face's box drifts to the model's fixed
	// point, which reads the face worse than the detection's box it was
	// trained on (docs/measured.md, "Landmarks and time").
	Anchored bool
	// RefineEvery: with Anchored and an estimator that can Step, a
	// tracked face is refined in full (every iteration) on every
	// RefineEvery-th frame, on a frame whose anchor a detection renewed,
	// and on a frame where its first prediction moved more than
	// refineTurn from the last full refinement's; in between, one
	// prediction from the anchor is read as the change since that
	// refinement (Tracker.estimate). 0 or 1: in full on every frame.
	RefineEvery int
	// MaxStd: a tracked face whose yaw std (degrees) exceeds this is
	// dropped, unless a detection found it on this frame (the detector
	// says a face is there; the std then speaks for its pose only).
	MaxStd float64
	// StartStd: a detection starts a track only if the model, from the
	// detection's box, gives a yaw std (degrees) of at most this; 0: every
	// detection does (config's track.start_std says why).
	StartStd float64
	// Unread: a detection that StartStd refuses but the network confirmed
	// (the scanner found it, or the verifier) and that is seen turned
	// (its View is not Frontal) starts an unread track instead: a face
	// the model cannot read, reported with the detection's box and no
	// angles (Face.Has all false), its box moved by detections alone,
	// until the model's yaw std from that box falls to StartStd and it is
	// read as any other. A face seen frontal is the model's easiest case:
	// one it cannot read is refused, as it is more often a phantom than a
	// face (docs/measured.md), unless the scan is sure of it (UnreadScore).
	Unread bool
	// UnreadScore: with Unread, a new face the network's scan found at
	// least this confident of starts an unread track too when it is seen
	// frontal (0: never): a face the network is sure of, which the model
	// cannot read (a person it never saw, lit or turned as it never
	// learnt), is published without angles rather than not at all. On
	// AFLW2000's unseen persons, 7 of the 34 faces missed were such faces
	// (the scan 0.85–0.92 sure). With a Confirmer, a frontal phantom is
	// the close look's to refuse, and the default is the scan's own
	// threshold: whatever the network finds, far and near, is published
	// (docs/measured.md, "A phantom up close").
	UnreadScore float64
	// RecheckStd: a tracked face whose yaw std (degrees) exceeds this
	// makes the next frame a full detection instead of waiting for Every
	// (the model doubts a box that has slid off the face, as after a fast
	// turn); 0 waits for Every.
	RecheckStd float64
	// RecheckTurn: a tracked face whose yaw moves more than this many
	// degrees from one frame to the next makes the next frame a full
	// detection too. A head does not turn that fast; a box that slid off
	// the face does (the model answers a background or a half-face near
	// its mean). 0: off.
	RecheckTurn float64
	// Region, if not empty, is where the detector looks (a tracked face
	// that moves out of it is still followed).
	Region image.Rectangle
	// ScanEvery: with a Scanner (WithScanner), it detects on every
	// ScanEvery-th frame from the first, in place of the detector (1: on
	// every frame); 0: never, as detect.scan_every says.
	ScanEvery int
	// RejectFor: with a Verifier (WithVerifier), for this many frames
	// after it refused a detection, a detection of the same box (IoU >
	// 0.5) is refused without asking: a phantom of a fixed scene costs one
	// verification per RejectFor frames, not one per detection. 0: ask
	// every time.
	RejectFor int
	// HoldUnsure: with a Confirmer (WithConfirmer), a new face it finds
	// without being sure of it is not reported until the looks on its
	// next frames have confirmed it; otherwise it is reported at once and
	// ends unreported if one of those looks misses it.
	HoldUnsure bool
	// ConfirmEvery: with a Confirmer, a tracked face that the network
	// has not found surely for this many frames (a close look, a landmark
	// look of presentScore, a scan's face at its threshold) is looked at
	// closely again, and ends as an unconfirmed one if that look and the
	// next frame's miss it. Detections keep a track's box, and a scan's
	// weak answers on a tracked face its life, but only the new face was
	// ever looked at: a phantom the close look passed once, on one noisy
	// frame, was tracked for the rest of a still scene (docs/measured.md,
	// "A phantom kept"). A face whose landmark looks find it is never
	// asked again. 0: never.
	ConfirmEvery int
}

// DefaultConfig is the tracker the shipped model's figures were measured
// with (docs/measured.md) for 640×480 frames at 15 a second; config's
// defaults are these (pipeline/assemble's test holds them to it).
func DefaultConfig() Config {
	return Config{MaxFaces: 16, Every: 10, LostAfter: 3, MinIoU: 0.3, Smoothing: 0.5, TurnNoise: 1e5, White: 0.4,
		Interval: time.Second / 15, LandmarkEvery: 5, Anchored: true, RefineEvery: 10, MaxStd: 60, StartStd: 30,
		Unread: true, UnreadScore: 0.5, RecheckStd: 30, RecheckTurn: 45, ScanEvery: 8, RejectFor: defaultRejectFor, ConfirmEvery: 5}
}

// defaultRejectFor is the frames for which, after the network refused a
// face, the cascades' detections of the same box are refused without
// asking: a phantom of a fixed scene costs a verification a second or
// two, not one per detection (Config.RejectFor).
const defaultRejectFor = 30

// Refuses reports whether a detection whose pose, estimated from its box,
// has this yaw std starts no track (StartStd; an undefined std is above
// any bound).
func (c Config) Refuses(yawStd float64) bool {
	return c.StartStd > 0 && !(yawStd <= c.StartStd)
}

// Face is a tracked face in one frame.
type Face struct {
	ID     uint64
	Box    feature.Box // smoothed, pixels
	Score  float64     // the last detection's score
	View   detect.View // the view of the last detection (frontal, or turned one way)
	Angles [3]float64  // yaw, pitch, roll (degrees), smoothed
	Std    [3]float64
	Has    [3]bool // which angles the model predicts
	Age    int     // frames since the track started
	// Landmarks: the face network's five points on this frame
	// (WithLandmarks), where HasLandmarks.
	Landmarks    feature.Landmarks
	HasLandmarks bool
}

// Message is the face in its published form, at full precision: its
// track, box, score, view and the angles the model predicts, with their σ
// (the frame's stages add the rest; message.Face.Round rounds it as
// published).
func (f *Face) Message() message.Face {
	b := f.Box
	m := message.Face{Track: f.ID, Box: [4]float64{b.X, b.Y, b.X + b.W, b.Y + b.H}, Score: f.Score, View: f.View.String()}
	if f.HasLandmarks {
		for i := range m.Landmarks {
			m.Landmarks[i] = [2]float64{f.Landmarks[2*i], f.Landmarks[2*i+1]}
		}
	}
	for a, dst := range [3][2]*message.Num{{&m.Yaw, &m.YawStd}, {&m.Pitch, &m.PitchStd}, {&m.Roll, &m.RollStd}} {
		if f.Has[a] {
			*dst[0], *dst[1] = message.Some(f.Angles[a]), message.Some(f.Std[a])
		}
	}
	return m
}

// Timing is the time spent in each stage of the last frame.
type Timing struct {
	// Detect is the detection's time: the detector's with the
	// verification of its new faces, or the scanner's.
	Detect, Pose time.Duration
	Detected     bool // a full-frame detection ran (the detector or the scanner)
	Scanned      bool // …and it was the scanner
	// Unverified: detections of this frame that started no track, the
	// verifier finding no face there (asked, or refused again).
	Unverified int
	// Refused: detections of this frame that started no track, the
	// model's yaw std from their box being above Config.StartStd.
	Refused int
	// Unconfirmed: faces that end on this frame because the confirmer
	// (WithConfirmer) found no face at the model's box: on the face's
	// first frame (never reported), on one of the looks a face found
	// unsure gets (reported meanwhile unless Config.HoldUnsure), or on a
	// tracked face's look again (Config.ConfirmEvery).
	Unconfirmed int
}

type trackState struct {
	face   Face
	missed int         // detections in a row without a match
	raw    feature.Box // unsmoothed box, where the next refinement starts
	drop   bool        // to be dropped at the end of this frame
	// This frame's refinement starts from `from`: raw, or a detection
	// the track is re-anchored on; fresh skips smoothing (a new track, or
	// one re-anchored after drifting).
	from  feature.Box
	fresh bool
	// jumped: this frame's yaw moved more than Config.RecheckTurn.
	jumped bool
	// unread: the model cannot read the face (Config.Unread).
	unread bool
	// The angles' filters and the time of their last estimate.
	filt [3]angleFilter
	at   time.Time
	// unconfirmed: a new face the confirmer did not find at the model's
	// box (WithConfirmer); doubt: the looks a face the confirmer found
	// without being sure of it still waits for (unreported meanwhile with
	// Config.HoldUnsure).
	unconfirmed bool
	doubt       int
	// unvouched: the frames since the network last found the face up
	// close (Config.ConfirmEvery).
	unvouched int
	// missedLooks: the looks again in a row that missed it.
	missedLooks int
	// suspect: the face was found where the network refused one lately
	// (Tracker.suspected): it is reported only once its confirmLooks
	// looks have all found it, one of them surely (sureLook: a close look
	// since the face was new was sure of it).
	suspect, sureLook bool
	// modelStd: the model's own yaw σ on this frame, before the landmarks
	// and the filter: whether it sees a face (Config.StartStd).
	modelStd float64
	// lm is the last landmark look's correction (Tracker.landmarks).
	lm landmarkCorrection
	// full is the last full refinement (Config.RefineEvery) and fullAge
	// the frames since; one of a single prediction has nothing to spare.
	full    pose.Result
	fullAge int
	// Config.Anchored: where the next refinement starts (anchor, if
	// anchored), and whether this frame's start is a detection's (or a
	// turn's landmark look's, set on the frame before), which the anchor
	// then takes as it is.
	anchor           feature.Box
	anchored, seeded bool
}

// follow returns from moved as the refined box moved from before to
// after: its centre by the same shift, its size by the same ratio.
func follow(from, before, after feature.Box) feature.Box {
	bx, by := before.Centre()
	ax, ay := after.Centre()
	fx, fy := from.Centre()
	k := math.Sqrt(after.W * after.H / (before.W * before.H))
	if !(k > 0) || math.IsInf(k, 0) {
		k = 1
	}
	return feature.Box{X: fx + ax - bx - from.W*k/2, Y: fy + ay - by - from.H*k/2, W: from.W * k, H: from.H * k}
}

// landmarkCorrection is what a landmark look changed in a face's angles:
// the fused minus the model's angles and the ratio of their σ, the
// model's yaw then, the frames since, and whether it holds at all.
type landmarkCorrection struct {
	corr, ratio [3]float64
	yaw         float64
	age         int
	valid       bool
}

// sameFace is the overlap above which two tracks are one face.
const sameFace = 0.5

// nestedFace is the share of a detection's box inside another's above which
// the two are one face (detect.Params.Nested's default).
const nestedFace = 0.5

// sameHead is the distance between box centres, in box sides, below which a
// detection continues a track it half overlaps: the same head, which the
// track has slid half off. (Two detections of one frame are not joined by
// it: persons cheek to cheek are 0.6 box sides apart, claims.)
const sameHead = 0.75

// Detector finds the faces of a frame: infer/detect's Detector.
type Detector interface {
	DetectInto(buf *detect.Buffers, img *image.Gray, r image.Rectangle) []detect.Face
}

// Estimator estimates one face's pose and refined box from a starting box:
// a worker of infer/pose (pose.Estimator.NewWorker), used by one tracker.
type Estimator interface {
	Estimate(img *image.Gray, from feature.Box) pose.Result
	Refines() bool       // whether Estimate moves the box
	HasAngle(i int) bool // whether it predicts angle i (0 yaw, 1 pitch, 2 roll)
}

// Stepper is an Estimator that can also make its refinement's first
// prediction alone (pose.Worker.Step): Config.RefineEvery.
type Stepper interface {
	Step(img *image.Gray, from feature.Box, last *pose.Result) pose.Result
}

// Seer is a Detector or Scanner that says whether its last run over
// region could have found a face whose (uncalibrated) box is box: a track
// it does not find counts a miss (Config.LostAfter) only where it could
// (detect.Detector.Sees, detect.Network.Sees). Without it, every miss
// counts.
type Seer interface {
	Sees(box feature.Box, region image.Rectangle) bool
}

// Verifier says whether a detection's box holds a face, on evidence richer
// than the detector's (detect.Network: a convolutional network on a crop
// around it). It is asked about detections that would start a track.
type Verifier interface {
	Verify(img *image.Gray, box feature.Box) bool
}

// Scanner finds the faces of a whole frame (detect.Network at a lower
// resolution), as a detector whose faces need no verification.
type Scanner interface {
	// Scan's faces are the frame's; known are the boxes of the faces
	// tracked (as detections'), which it need not spend effort finding
	// again.
	Scan(img *image.Gray, r image.Rectangle, known []feature.Box) []detect.Face
}

// Landmarker finds the face network's face on a crop around a tracked
// face's box (detect.Network.Landmarks).
type Landmarker interface {
	Landmarks(img *image.Gray, box feature.Box) (yunet.Face, bool)
}

// Fuser folds a landmark reading of a face into the model's estimate of
// it (the estimator's worker: pose.Worker.Fuse).
type Fuser interface {
	Fuse(r *pose.Result, box feature.Box, l *feature.Landmarks) bool
}

// Confirmer says whether a new face is a face, and whether it is sure of
// it: the network's close look at the box the pose model refined, or at
// its detection's box if the model cannot read it (unread;
// detect.Network.Confirm).
type Confirmer interface {
	Confirm(img *image.Gray, box feature.Box, unread bool) (found, sure bool)
}

// confirmLooks is how many close looks a face the confirmer found without
// being sure of it gets, each on a frame of its own: all must find it,
// unless one is sure. A camera's noise moves the box the model refines
// around a phantom, and now and then a look at one of those boxes finds a
// face, seldom sure of it; a face of a person found unsure is found again
// on its next frames (docs/measured.md, "A phantom up close").
const confirmLooks = 3

// doubtFor is how many times Config.RejectFor frames a face found where
// the network refused one stays a suspect (trackState.suspect).
const doubtFor = 5

// Option adds a part to a tracker.
type Option func(*Tracker)

// WithVerifier has v check every detection before it starts a track.
func WithVerifier(v Verifier) Option { return func(t *Tracker) { t.verify = v } }

// WithLandmarks has l look for the landmarks of every face the model
// reads (on its first frame, then as Config.LandmarkEvery says) and f
// fold them into its angles.
func WithLandmarks(l Landmarker, f Fuser) Option {
	return func(t *Tracker) { t.lmk, t.fuse = l, f }
}

// WithConfirmer has c check every new face the model reads, at the box
// it refined on its first frame, before it is reported: a face c does not
// find there starts no track (Timing.Unconfirmed), and the cascades'
// detections of its box are refused for Config.RejectFor frames as the
// verifier's are. A face c finds without being sure of it is looked at
// again on its next frames until confirmLooks looks have found it (or one
// is sure), and ends as one not found if a look misses; Config.HoldUnsure
// keeps it unreported meanwhile.
func WithConfirmer(c Confirmer) Option { return func(t *Tracker) { t.confirm = c } }

// WithScanner has s detect every Config.ScanEvery-th frame, from the
// first, in place of the detector.
func WithScanner(s Scanner) Option { return func(t *Tracker) { t.scan = s } }

// Tracker processes frames one after another; it is not safe for
// concurrent use.
type Tracker struct {
	cfg     Config
	det     Detector
	calib   detect.Calibration
	est     Estimator
	step    Stepper // est, where it can Step (Config.RefineEvery)
	verify  Verifier
	confirm Confirmer
	scan    Scanner
	known   []feature.Box // the tracked faces' boxes, as detections', for the scanner
	lmk     Landmarker
	fuse    Fuser
	// Boxes the verifier refused, and the frame until which a detection
	// of one of them is refused without asking (Config.RejectFor).
	refused []refusal
	tracks  []*trackState
	free    []*trackState
	nextID  uint64
	frame   uint64
	out     []Face
	used    []bool
	dbuf    detect.Buffers
	last    Timing
	at      time.Time // the frame's time
	res     pose.Result
}

// refusal is a box the verifier or the confirmer refused on a frame: a
// detection of it is refused without asking for Config.RejectFor frames
// (Tracker.refusing), and a face found there is a suspect for doubtFor
// times as many (Tracker.suspected). Tracker.refused holds them oldest
// first.
type refusal struct {
	box feature.Box
	at  uint64
}

// maxRefusals bounds the boxes remembered: a frame full of phantoms asks
// again for the ones beyond; a full list forgets its oldest suspicion
// (past its RejectFor frames) for a new refusal (Tracker.refuse).
const maxRefusals = 16

// New returns a tracker finding faces with det (their boxes mapped by
// calib) and estimating them with est, with the parts of opts.
func New(cfg Config, det Detector, calib detect.Calibration, est Estimator, opts ...Option) *Tracker {
	if cfg.MaxFaces < 1 {
		cfg.MaxFaces = 1
	}
	if cfg.Every < 1 {
		cfg.Every = 1
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second / 15
	}
	if !(cfg.White > 0 && cfg.White <= 1) {
		cfg.White = 1
	}
	t := &Tracker{cfg: cfg, det: det, calib: calib, est: est}
	if s, ok := est.(Stepper); ok && cfg.Anchored && cfg.RefineEvery > 1 {
		t.step = s
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Reset forgets every track, refusal and frame: the next frame is a new
// scene's first (track ids go on), and a scanner that can (ResetScan)
// starts its round of tiles again.
func (t *Tracker) Reset() {
	t.free = append(t.free, t.tracks...)
	t.tracks, t.refused, t.frame, t.last = t.tracks[:0], t.refused[:0], 0, Timing{}
	if r, ok := t.scan.(interface{ ResetScan() }); ok {
		r.ResetScan()
	}
}

// Timing returns the stage times of the last frame.
func (t *Tracker) Timing() Timing { return t.last }

// doubtful reports whether a face of the last frame had a yaw std above
// Config.RecheckStd or a yaw that jumped more than Config.RecheckTurn:
// this frame then detects.
func (t *Tracker) doubtful() bool {
	for _, tr := range t.tracks {
		if t.cfg.RecheckStd > 0 && tr.face.Has[0] && tr.face.Std[0] > t.cfg.RecheckStd || tr.jumped {
			return true
		}
	}
	return false
}

// Process runs on one frame, Config.Interval after the last, and returns
// its faces, largest first. The slice is reused by the next call.
func (t *Tracker) Process(img *image.Gray) []Face {
	return t.ProcessAt(img, t.at.Add(t.cfg.Interval))
}

// ProcessAt is Process on a frame captured at time at: the angles' filter
// moves each face by the time since its last frame.
func (t *Tracker) ProcessAt(img *image.Gray, at time.Time) []Face {
	t.at = at
	t.frame++
	t.last = Timing{}
	bounds := img.Rect
	start := time.Now()
	for _, tr := range t.tracks {
		tr.from, tr.fresh = tr.raw, false
		if t.cfg.Anchored && tr.anchored {
			tr.from = tr.anchor
		}
	}
	// 1. Detect on schedule (always while nothing is tracked) and match the
	// detections with the tracks, which may re-anchor or start some. The
	// scanner, where there is one, is the detector of every ScanEvery-th
	// frame from the first (in place of the detector, whose verified
	// faces it finds too, at about the cost of one detection).
	scanDue := t.scan != nil && t.cfg.ScanEvery > 0 && (t.frame-1)%uint64(t.cfg.ScanEvery) == 0
	if scanDue || len(t.tracks) == 0 || (t.frame-1)%uint64(t.cfg.Every) == 0 || t.doubtful() {
		d0 := time.Now()
		r := img.Rect
		if !t.cfg.Region.Empty() {
			r = r.Intersect(t.cfg.Region)
		}
		t.last.Detected = true
		if scanDue {
			t.last.Scanned = true
			t.known = t.known[:0]
			for _, tr := range t.tracks {
				t.known = append(t.known, t.calib.Undo(tr.raw))
			}
			t.match(t.scan.Scan(img, r, t.known), img, true, r)
		} else {
			t.match(t.det.DetectInto(&t.dbuf, img, r), img, false, r)
		}
		t.last.Detect = time.Since(d0)
	}
	// 2. Estimate every face once, refining its box from where it was or
	// from its detection.
	for _, tr := range t.tracks {
		t.estimate(tr, img)
	}
	// 3. Drop faces that left, that the model no longer sees or never saw
	// (Config.StartStd), or that detections have missed too often; then
	// duplicates: two tracks on the same face (the detector can return two
	// nested windows for one face, or find a face that a drifting track
	// has half left) become one, with the older id and the more certain
	// estimate.
	for _, tr := range t.tracks {
		tr.drop = t.gone(tr, bounds)
	}
	for _, tr := range t.tracks {
		for _, o := range t.tracks {
			if !tr.drop && !o.drop && o.face.ID < tr.face.ID && feature.IoU(o.raw, tr.raw) > sameFace {
				tr.drop = true
				if tr.face.Has[0] && tr.face.Std[0] < o.face.Std[0] {
					o.take(tr)
				}
			}
		}
	}
	kept := t.tracks[:0]
	for _, tr := range t.tracks {
		if tr.drop {
			t.free = append(t.free, tr)
			continue
		}
		kept = append(kept, tr)
	}
	t.tracks = kept
	t.last.Pose = time.Since(start) - t.last.Detect
	// 4. Report, largest first (insertion sort: a handful of tracks, and
	// sort.Slice would allocate).
	for i := 1; i < len(t.tracks); i++ {
		for j := i; j > 0 && before(t.tracks[j], t.tracks[j-1]); j-- {
			t.tracks[j], t.tracks[j-1] = t.tracks[j-1], t.tracks[j]
		}
	}
	t.out = t.out[:0]
	for _, tr := range t.tracks {
		if len(t.out) == t.cfg.MaxFaces {
			break
		}
		if tr.doubt > 0 && (t.cfg.HoldUnsure || tr.suspect) {
			continue // not yet confirmed (Config.HoldUnsure, a suspect)
		}
		t.out = append(t.out, tr.face)
	}
	return t.out
}

// gone decides whether track tr ends with this frame: it left the frame
// (bounds), the detections missed it too often, the model no longer sees
// it, or a detection started it and the model never saw it
// (Config.StartStd).
func (t *Tracker) gone(tr *trackState, bounds image.Rectangle) bool {
	// A detection of this frame matched or started the track: a face
	// is there whatever the model's doubt (Config.MaxStd).
	found := t.last.Detected && tr.missed == 0
	// But a track a detection starts on this frame needs the model to
	// see a face too (Config.StartStd; one it starts unread has no
	// angles).
	unseen := tr.face.Age == 1 && tr.face.Has[0] && t.cfg.Refuses(tr.modelStd)
	if unseen {
		t.last.Refused++
	}
	if tr.unconfirmed {
		// No face up close: the cascades' detections of its box (where
		// this frame's refinement started) are refused without asking
		// for a while, as the verifier's are.
		t.last.Unconfirmed++
		t.refuse(t.calib.Undo(tr.from))
		return true
	}
	b := tr.raw
	return tr.missed > t.cfg.LostAfter || !b.Valid() || b.W < 8 ||
		b.X+b.W < float64(bounds.Min.X) || b.Y+b.H < float64(bounds.Min.Y) ||
		b.X > float64(bounds.Max.X) || b.Y > float64(bounds.Max.Y) ||
		(tr.face.Has[0] && tr.face.Std[0] > t.cfg.MaxStd && !found) || unseen
}

// before orders tracks by box area, largest first, then by id.
func before(x, y *trackState) bool {
	a, b := x.face.Box, y.face.Box
	if a.W*a.H != b.W*b.H {
		return a.W*a.H > b.W*b.H
	}
	return x.face.ID < y.face.ID
}

// match pairs detections with tracks by overlap with where the tracks
// were (best first). A matched track is re-anchored on its detection when
// the model does not refine boxes or the track has drifted off it; an
// unmatched detection starts a track if the verifier (if any) finds a face
// there (a scan's faces need none); an unmatched track counts a miss
// where the detection (the scanner's or the detector's, over region)
// could have found it (Seer).
func (t *Tracker) match(faces []detect.Face, img *image.Gray, scan bool, region image.Rectangle) {
	var by any = t.det
	if scan {
		by = t.scan
	}
	seer, _ := by.(Seer)
	if cap(t.used) < len(faces) {
		t.used = make([]bool, len(faces))
	}
	used := t.used[:len(faces)]
	for i := range used {
		used[i] = false
	}
	for _, tr := range t.tracks {
		best, bestIoU := -1, 0.0
		for i, f := range faces {
			if used[i] {
				continue
			}
			box := t.calib.Apply(f.Box)
			if iou := feature.IoU(box, tr.raw); iou > bestIoU && t.continues(box, tr.raw, iou) {
				best, bestIoU = i, iou
			}
		}
		if best < 0 {
			if seer == nil || seer.Sees(t.calib.Undo(tr.raw), region) {
				tr.missed++
			}
			continue
		}
		used[best] = true
		tr.missed = 0
		drifted := bestIoU < sameFace
		if drifted && t.cfg.Anchored && t.est.Refines() && !tr.unread && t.readsBetter(img, tr.from, t.calib.Apply(faces[best].Box)) {
			// Near but not on the track: either the track slid off its
			// face, or the detection is a poor box half on it (a
			// cascade's window around a small face). The model says
			// which box holds the face: here the track's, kept (a
			// 64-px face's track was re-anchored on a 149-px window
			// and refined to 292 px: docs/measured.md, "Small faces in
			// rooms").
			continue
		}
		tr.face.Score, tr.face.View = faces[best].Score, faces[best].View
		if scan && !faces[best].Weak {
			tr.unvouched = 0 // the network found it as surely as a new face (Config.ConfirmEvery)
		}
		if drifted || !t.est.Refines() || tr.unread || t.cfg.Anchored {
			// Without box refinement the detection is the best box there
			// is; with it, a track that the detection only half overlaps
			// has drifted off the face: re-anchor the track on it, without
			// smoothing towards where it had drifted. An unread face's
			// box is its detections'. An anchored track starts from its
			// detections' boxes: each new one is its new anchor.
			tr.from, tr.fresh, tr.seeded = t.calib.Apply(faces[best].Box), drifted, true
		}
	}
	for i, f := range faces {
		if used[i] || len(t.tracks) >= 4*t.cfg.MaxFaces || t.claims(faces, used, i, !scan) {
			continue
		}
		if !scan && t.verify != nil && !t.verified(img, f.Box) {
			t.last.Unverified++
			continue
		}
		tr := t.newTrack()
		tr.face.Score, tr.face.View = f.Score, f.View
		tr.suspect = t.confirm != nil && t.suspected(f.Box)
		tr.raw = t.calib.Apply(f.Box)
		tr.from, tr.fresh, tr.seeded = tr.raw, true, true
		t.tracks = append(t.tracks, tr)
		used[i] = true // it claims its face against the detections after it
	}
}

// readsBetter reports whether the model reads a face at box a more surely
// than at box b on img (a smaller yaw σ from one prediction at each).
func (t *Tracker) readsBetter(img *image.Gray, a, b feature.Box) bool {
	read := func(box feature.Box) float64 {
		var r pose.Result
		if t.step != nil {
			r = t.step.Step(img, box, nil)
		} else {
			r = t.est.Estimate(img, box)
		}
		if !t.est.HasAngle(0) || !(r.Std[0] >= 0) {
			return math.Inf(1)
		}
		return r.Std[0]
	}
	return read(a) < read(b)
}

// verified asks the verifier whether box holds a face, unless it refused
// the same box within Config.RejectFor frames; a refusal is remembered.
func (t *Tracker) verified(img *image.Gray, box feature.Box) bool {
	t.expire()
	known := false
	for _, r := range t.refused {
		known = known || t.refusing(r) && feature.IoU(r.box, box) > sameFace
	}
	if known {
		return false
	}
	if t.verify.Verify(img, box) {
		return true
	}
	t.refuse(box)
	return false
}

// refuse remembers a detection's box as refused for Config.RejectFor
// frames (verified asks no one about it meanwhile), and a face found
// there as a suspect for doubtFor of them.
func (t *Tracker) refuse(box feature.Box) {
	t.expire()
	if t.cfg.RejectFor <= 0 {
		return
	}
	if len(t.refused) == maxRefusals {
		if t.refusing(t.refused[0]) {
			return // all still refusing: the new one is asked about again
		}
		// The oldest only suspects: it gives way.
		t.refused = append(t.refused[:0], t.refused[1:]...)
	}
	t.refused = append(t.refused, refusal{box, t.frame})
}

// refusing reports whether a refusal still refuses its box without asking.
func (t *Tracker) refusing(r refusal) bool {
	return r.at+uint64(t.cfg.RejectFor) >= t.frame
}

// expire forgets the refusals that no longer even suspect (the oldest
// first: they end in the order they were made).
func (t *Tracker) expire() {
	n := 0
	for n < len(t.refused) && t.refused[n].at+doubtFor*uint64(t.cfg.RejectFor) < t.frame {
		n++
	}
	t.refused = append(t.refused[:0], t.refused[n:]...)
}

// suspected reports whether a new face's detection box lies where the
// network refused a face within doubtFor·Config.RejectFor frames.
func (t *Tracker) suspected(box feature.Box) bool {
	t.expire()
	for _, r := range t.refused {
		if t.continues(box, r.box, feature.IoU(r.box, box)) {
			return true
		}
	}
	return false
}

// continues reports whether a detection box (with overlap iou) belongs to
// the track whose box is trk: they overlap by more than MinIoU, or their
// centres are closer than sameHead times the larger side — two heads side
// by side are about a head's width apart, so this is the same head, which
// the track has half slid off.
func (t *Tracker) continues(box, trk feature.Box, iou float64) bool {
	if iou > t.cfg.MinIoU {
		return true
	}
	dx := box.X + box.W/2 - trk.X - trk.W/2
	dy := box.Y + box.H/2 - trk.Y - trk.H/2
	side := max(box.W, box.H, trk.W, trk.H)
	return dx*dx+dy*dy < sameHead*sameHead*side*side
}

// claims reports whether detection i, which matched no track, is a second
// detection of a face another detection of this frame matched or started
// a track on (used): the two overlap by more than MinIoU, or, for the
// cascades' windows (nested), one lies mostly inside the other (a larger
// window around a face). A track that no detection matched was offered
// this one already (continues), so only this frame's used detections
// remain; two detections side by side are two faces, however close,
// since the detector merged its own (two persons cheek to cheek are 0.6
// face sides apart, and a face beside its reflection in a mirror has 0.6
// of its box inside the other's: docs/measured.md, "Faces side by side").
func (t *Tracker) claims(faces []detect.Face, used []bool, i int, nested bool) bool {
	box := t.calib.Apply(faces[i].Box)
	for j, f := range faces {
		if !used[j] || j == i {
			continue
		}
		c := t.calib.Apply(f.Box)
		if feature.IoU(box, c) > t.cfg.MinIoU || nested && (feature.Inside(box, c) > nestedFace || feature.Inside(c, box) > nestedFace) {
			return true
		}
	}
	return false
}

// take moves o's estimate (box, angles, score) into tr, which keeps its id
// and age.
func (tr *trackState) take(o *trackState) {
	tr.raw, tr.missed, tr.unread, tr.filt, tr.lm = o.raw, 0, o.unread, o.filt, o.lm
	tr.anchor, tr.anchored, tr.seeded = o.anchor, o.anchored, o.seeded
	tr.full, tr.fullAge = o.full, o.fullAge
	id, age := tr.face.ID, tr.face.Age
	tr.face = o.face
	tr.face.ID, tr.face.Age = id, age
}

func (t *Tracker) newTrack() *trackState {
	var tr *trackState
	if n := len(t.free); n > 0 {
		tr, t.free = t.free[n-1], t.free[:n-1]
		*tr = trackState{}
	} else {
		tr = &trackState{}
	}
	t.nextID++
	tr.face.ID = t.nextID
	return tr
}

// estimate runs the pose model from tr.from and folds the answer into
// the track, smoothed unless tr.fresh.
func (t *Tracker) estimate(tr *trackState, img *image.Gray) {
	r := &t.res // the tracker's: its address goes to the Fuser
	if !t.stepped(tr, img, r) {
		*r = t.est.Estimate(img, tr.from)
		tr.full, tr.fullAge = *r, 0
	}
	f := &tr.face
	readable := !t.cfg.Refuses(r.Std[0])
	switch {
	case f.Age == 0 && !readable && t.startsUnread(f):
		tr.unread = true
	case tr.unread && readable:
		// Read at last: a face like any other from here, its angles not
		// smoothed towards the none it had.
		tr.unread, tr.fresh = false, true
	}
	a := t.cfg.Smoothing
	if tr.fresh {
		a = 0
	}
	if tr.unread {
		// The model cannot read it: the box follows the detections, and
		// no angle is told.
		r.Box = tr.from
	}
	if t.cfg.Anchored {
		// The next frame starts where this one started, moved as the
		// refined box moved since the last frame (docs/internals.md).
		if tr.seeded || !tr.anchored {
			tr.anchor = tr.from
		} else {
			tr.anchor = follow(tr.from, tr.raw, r.Box)
		}
		tr.anchored, tr.seeded = true, false
	}
	tr.raw = r.Box
	tr.modelStd = r.Std[0]
	if t.confirm != nil && (f.Age == 0 && (tr.unread || readable) || tr.doubt > 0) {
		// A new face: the network must find it up close at the model's
		// box, or at its detection's if the model cannot read it, and
		// again on its next frames if it is not sure (Confirmer).
		found, sure := t.confirm.Confirm(img, r.Box, tr.unread)
		tr.unvouched = 0
		tr.sureLook = tr.sureLook || sure // false on a new track (newTrack)
		switch {
		case !found:
			tr.unconfirmed, tr.doubt = true, 0
		case f.Age == 0 && sure && !tr.suspect:
			tr.doubt = 0
		case f.Age == 0:
			// Found unsure, or a suspect: the looks run their course.
			// A sure look on one noisy frame does not cut them short:
			// a phantom the look doubted was now and then sure of on
			// the next frame, then missed by every look after.
			tr.doubt = confirmLooks - 1
		case tr.doubt > 1:
			tr.doubt--
		case tr.suspect && !tr.sureLook:
			// A suspect must be found surely once within its looks.
			tr.unconfirmed, tr.doubt = true, 0
		default:
			tr.doubt, tr.suspect = 0, false
		}
	}
	t.landmarks(tr, img, r)
	t.reconfirm(tr, img, r.Box)
	tr.jumped = !tr.unread && t.cfg.RecheckTurn > 0 && !tr.fresh && f.Age > 0 && t.est.HasAngle(0) &&
		math.Abs(r.Angles[0]-f.Angles[0]) > t.cfg.RecheckTurn
	f.Box = feature.Box{
		X: a*f.Box.X + (1-a)*r.Box.X, Y: a*f.Box.Y + (1-a)*r.Box.Y,
		W: a*f.Box.W + (1-a)*r.Box.W, H: a*f.Box.H + (1-a)*r.Box.H,
	}
	dt := t.at.Sub(tr.at).Seconds()
	tr.at = t.at
	for i := range f.Angles {
		f.Has[i] = !tr.unread && t.est.HasAngle(i)
		if !f.Has[i] {
			f.Angles[i], f.Std[i] = 0, r.Std[i]
			continue
		}
		z, v := r.Angles[i], r.Std[i]*r.Std[i]
		fl := &tr.filt[i]
		switch {
		case t.cfg.TurnNoise <= 0:
			// No filter: exponential smoothing, as the boxes.
			f.Angles[i], f.Std[i] = a*f.Angles[i]+(1-a)*z, r.Std[i]
			if math.IsNaN(f.Angles[i]) {
				f.Angles[i] = z
			}
			continue
		case tr.fresh || math.IsNaN(fl.x[0]):
			fl.reset(z, v, t.cfg.White)
		default:
			fl.predict(min(dt, maxGap), t.cfg.TurnNoise)
			fl.update(z, v, t.cfg.White)
		}
		f.Angles[i], f.Std[i] = fl.angle(), fl.std()
	}
	f.Age++
}

// reconfirm looks at track tr's face closely again, at box (this frame's,
// as refined), on the Config.ConfirmEvery-th frame since the network last
// found it surely; after a look that misses it, again on the next frame,
// and reconfirmMisses misses in a row end it as unconfirmed (gone), its
// box refused to the cascades for a while as a new face's is.
func (t *Tracker) reconfirm(tr *trackState, img *image.Gray, box feature.Box) {
	if t.confirm == nil || t.cfg.ConfirmEvery <= 0 || tr.unconfirmed || tr.doubt > 0 {
		return
	}
	if tr.unvouched >= t.cfg.ConfirmEvery {
		found, _ := t.confirm.Confirm(img, box, tr.unread)
		tr.unvouched = 0
		switch {
		case found:
			tr.missedLooks = 0
		case tr.missedLooks+1 >= reconfirmMisses:
			tr.unconfirmed = true
		default:
			tr.missedLooks++
			tr.unvouched = t.cfg.ConfirmEvery - 1 // the next frame looks again
		}
	}
	tr.unvouched++
}

// reconfirmMisses is how many looks again in a row (one a frame) must miss
// a tracked face before it ends (Config.ConfirmEvery): a small face of a
// person that one look on a noisy frame misses is often found by the
// next, where a phantom seldom passes two. One miss enough cost 8 of 4265
// faces pasted into the held-out face-free scenes by their 60th frame, two
// 7, with the phantoms of the five scenes that kept them a frame or two
// longer (docs/measured.md, "A phantom kept").
const reconfirmMisses = 2

// refineTurn is the move (degrees) of an angle's first prediction since
// the last full refinement past which a face is refined in full again:
// turned that far, the refinement's later steps may read it otherwise.
const refineTurn = 3

// stepped reads track tr's face with one prediction from its anchor where
// Config.RefineEvery allows (the track anchored, not renewed by a
// detection on this frame, its last full refinement recent and its first
// prediction moved at most refineTurn since): r is then that refinement's
// answer, its box moved as the first step's box moved, its σ in the ratio
// of the first prediction's, and its angles, the mean of its n
// predictions (pose.Settings.Average), moved by 1/n of what the first
// moved: the later steps start from boxes the refinement has brought onto
// the face, and read a face that moved a little as they read it before.
// (Moved by all of it, a face sliding a pixel a frame read 1° off the
// full refinement, the first prediction's own jitter; a turn past
// refineTurn is refined in full.) A still face's frames cost one
// prediction in place of two or three and read the same. It reports
// whether it did.
func (t *Tracker) stepped(tr *trackState, img *image.Gray, r *pose.Result) bool {
	if t.step == nil || !tr.anchored || tr.seeded || tr.fresh || tr.unread ||
		tr.full.Iterations < 2 || tr.fullAge+1 >= t.cfg.RefineEvery {
		return false
	}
	p := &tr.full
	s := t.step.Step(img, tr.from, p)
	for i := range p.Angles {
		if t.est.HasAngle(i) && !(math.Abs(s.First[i]-p.First[i]) <= refineTurn) {
			return false
		}
	}
	*r = *p
	n := float64(p.Iterations)
	for i := range r.Angles {
		if !t.est.HasAngle(i) {
			continue
		}
		r.Angles[i] += (s.First[i] - p.First[i]) / n
		if p.FirstStd[i] > 0 && s.FirstStd[i] > 0 {
			r.Std[i] *= s.FirstStd[i] / p.FirstStd[i]
		}
	}
	r.Box = follow(p.Box, p.FirstBox, s.FirstBox)
	r.Iterations = s.Iterations
	tr.fullAge++
	return true
}

// maxGap bounds the time the filter moves a face by between two frames: a
// stalled camera does not throw its faces along their last turn.
const maxGap = 0.5

// landmarkMove is the move of the model's yaw (degrees) since a face's
// last landmark look past which its correction is not carried but looked
// for again: a head that turned that far shows the model another face,
// and the last look's correction belongs to the pose it had. At 10° a
// head turning in 15° steps read 0.04–0.11° worse in yaw (Pointing'04,
// every person left out, sensor noise of 3 grey levels: docs/measured.md,
// "A head turning: the filter"); a still face jitters far less than 5°.
const landmarkMove = 5

// presentScore is the confidence of a landmark look that counts as a
// detection of its face (Config.LostAfter): the value detect.confirm_sure
// takes by default for the close look (a constant of the tracker's, not
// that key); 95 % of AFLW2000's faces of persons got a landmark look of
// 0.73 or more. Small faces tracked between scans were dropped by detections that
// find them only now and then; at 0.5, phantoms on noisy frames were kept
// longer (docs/measured.md, "Small faces in rooms").
const presentScore = 0.7

// landmarks folds the face network's landmarks into the estimate r of
// track tr (WithLandmarks). A look runs on a face's first frame, then
// every Config.LandmarkEvery frames, and whenever the model's yaw has
// moved landmarkMove since the last; in between, the correction the last
// look made to the model's angles (the fused minus the model's) is carried
// over to each frame's, with its σ shrunk in the same ratio: the
// landmarks correct the model's bias on this face, which holds while the
// face holds its pose, and the model follows its moves every frame. The
// landmarks are published on the frames of a look. Anchored, a look the
// yaw's move called for also renews the track's anchor: the next frame
// starts from the look's face as a detection's box.
func (t *Tracker) landmarks(tr *trackState, img *image.Gray, r *pose.Result) {
	f := &tr.face
	f.HasLandmarks = false
	if t.lmk == nil || tr.unread || tr.unconfirmed {
		return
	}
	lc := &tr.lm
	lc.age++
	moved := lc.valid && math.Abs(r.Angles[0]-lc.yaw) > landmarkMove
	if lc.valid && lc.age < t.cfg.LandmarkEvery && !moved {
		for i := range r.Angles {
			r.Angles[i] += lc.corr[i]
			r.Std[i] *= lc.ratio[i]
		}
		return
	}
	// A look holds until the next one is due, whatever it found: a face
	// the network does not find, or past the expert's gate, is not looked
	// at again every frame (it carries no correction).
	lc.valid, lc.age, lc.yaw = true, 0, r.Angles[0]
	lc.corr, lc.ratio = [3]float64{}, [3]float64{1, 1, 1}
	nf, ok := t.lmk.Landmarks(img, r.Box)
	if !ok {
		return
	}
	if nf.Score >= presentScore {
		// The face is there: the network found it up close, as surely as
		// the close look is sure of a new face. Detections that cannot
		// find it (a 50-px face on the half-size scan, or under the
		// cascades' smallest window) do not drop it while the looks find
		// it; one that left is no longer found here, and the detections'
		// misses end it.
		tr.missed = 0
		tr.unvouched = 0
	}
	f.Landmarks, f.HasLandmarks = nf.Landmarks, true
	if moved && t.cfg.Anchored {
		// A head that turned is read from where a detection would put its
		// box now: the network's face on this look, as the scan reports
		// its faces. The last detection's box, moved as the refined box
		// moved, was placed for the pose before the turn
		// (docs/measured.md, "A head turning: the filter").
		tr.anchor, tr.seeded = t.calib.Apply(detect.AsDetection(nf).Box), true
	}
	model, std := r.Angles, r.Std
	if !t.fuse.Fuse(r, feature.Box{X: nf.X, Y: nf.Y, W: nf.W, H: nf.H}, &f.Landmarks) {
		return
	}
	for i := range r.Angles {
		lc.corr[i], lc.ratio[i] = r.Angles[i]-model[i], 1
		if std[i] > 0 {
			lc.ratio[i] = r.Std[i] / std[i]
		}
	}
}

// startsUnread reports whether a new track's face, which the model cannot
// read, goes on unread (Config.Unread): the network found its detection
// on this frame (the scan's, or verified) and sees it turned, or the scan
// is at least UnreadScore sure of it whatever its view.
func (t *Tracker) startsUnread(f *Face) bool {
	if !t.cfg.Unread {
		return false
	}
	sure := t.cfg.UnreadScore > 0 && t.last.Scanned && f.Score >= t.cfg.UnreadScore
	return (t.last.Scanned || t.verify != nil) && f.View != detect.Frontal || sure
}
