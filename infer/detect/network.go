package detect

import (
	"cmp"
	"fmt"
	"image"
	"math"
	"slices"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/yunet"
)

// NetworkParams configure the face network (infer/yunet) as posed runs
// it: as the verifier of the cascades' new faces, on a crop around each,
// and as a scan of the whole frame at a lower resolution.
type NetworkParams struct {
	// VerifyScore: a detection is a face where the network finds one on
	// its crop with at least this confidence (0–1).
	VerifyScore float64
	// ScanScore is the smallest confidence of a face the scan reports;
	// ScanShrink the factor the frame is shrunk by for it (2: a 640×480
	// frame is scanned at 320×240, which finds faces from about 30 pixels).
	ScanScore  float64
	ScanShrink int
	// ScanTiles: every other scan runs at ScanShrink times the
	// resolution (the frame's own, for one of scanMaxSide or less) on one
	// of this many tiles of the frame (2, 4, 6 or 9: 1×2, 2×2, 2×3, 3×3,
	// each grown by tileOverlap on every side), in turn, in place of the
	// shrunk scan: a face too small for the shrunk scan is seen at full
	// size once every 2·ScanTiles scans, each scan at about the shrunk
	// one's cost. 0: off; none where ScanShrink is 1 (the scan runs at
	// the frame's resolution already).
	ScanTiles int
	// ScanLooks: a scan also takes up to this many of its weak faces
	// (a confidence from lookFrom up to ScanScore) that are on no face
	// already tracked, the most confident first and in turn from scan to
	// scan, and looks at each on a crop where the face is about
	// LandmarkSide/LandmarkContext pixels wide (a landmark look); a face
	// found there with ScanScore is reported. A weak face on a tracked
	// face is reported without a look. The network finds faces of 16–24
	// pixels (a 32–48 pixel face on the shrunk scan) seldom and weakly,
	// and faces of 64 surely. 0: off (and weak faces are not reported).
	ScanLooks int
	// ConfirmScore: a new face the pose model reads is kept only where
	// the network finds it again, with at least this confidence, on a
	// close look at the model's box (Confirm). 0: off.
	ConfirmScore float64
	// ConfirmSure: a close look at least this confident is sure of its
	// face; one from ConfirmScore up to it is not, and the tracker looks
	// again on the face's next frames (track.WithConfirmer). 0, or at most
	// ConfirmScore: every face found is sure.
	ConfirmSure float64
	// ConfirmHead: a close look less confident than headSure, at a box
	// smaller than headSide, finds a face only where this head, on the
	// network's features there, sees one too (LookHead); nil: the look's
	// confidence alone.
	ConfirmHead *LookHead
}

// lookFrom is the smallest confidence of a scan's weak face that a look
// may take (ScanLooks): on the shrunk scan of pasted small faces it keeps
// half the 32–47 pixel faces the scan misses, at about one weak face a
// scene (docs/measured.md, "Small faces in rooms").
const lookFrom = 0.2

// tileLookFrom is lookFrom on a tile's scan: at the frame's resolution a
// 32–47 px face the network misses is more often among its answers from
// 0.1 than from 0.2, and a tile holds a quarter of the frame's weak
// answers, so that a look a scan still reaches them (docs/measured.md,
// "Small faces in rooms").
const tileLookFrom = 0.1

// DefaultNetworkParams are the measured defaults (docs/measured.md, "Faces
// in the wild").
func DefaultNetworkParams() NetworkParams {
	return NetworkParams{VerifyScore: 0.5, ScanScore: 0.5, ScanShrink: 2, ScanTiles: 4, ScanLooks: 1, ConfirmScore: 0.4, ConfirmSure: 0.7, ConfirmHead: DefaultLookHead()}
}

// A verification's crop is verifyContext detection sides wide, shrunk by a
// whole factor toward verifySide pixels, which bounds its cost whatever the
// face's size (toward 96 pixels it refused 15 % of the cascades' faces at
// 75–90°, toward 128 6 %: docs/measured.md).
const (
	maxScanLooks  = 8
	verifyContext = 2
	verifySide    = 128
)

// Problems lists every unusable setting, named as the configuration's keys
// under detect.
func (p NetworkParams) Problems() []Problem {
	var out []Problem
	if !(p.VerifyScore > 0 && p.VerifyScore < 1) {
		out = append(out, Problem{"verify_score", fmt.Sprintf("%g is not in (0, 1)", p.VerifyScore)})
	}
	if !(p.ScanScore > 0 && p.ScanScore < 1) {
		out = append(out, Problem{"scan_score", fmt.Sprintf("%g is not in (0, 1)", p.ScanScore)})
	}
	if p.ScanShrink < 1 || p.ScanShrink > 8 {
		out = append(out, Problem{"scan_shrink", fmt.Sprintf("%d is not 1 to 8", p.ScanShrink)})
	}
	if _, _, ok := tileGrid(p.ScanTiles); !ok {
		out = append(out, Problem{"scan_tiles", fmt.Sprintf("%d is not 0 (off), 2, 4, 6 or 9", p.ScanTiles)})
	}
	if !(p.ConfirmScore >= 0 && p.ConfirmScore < 1) {
		out = append(out, Problem{"confirm", fmt.Sprintf("%g is not 0 (off) or in (0, 1)", p.ConfirmScore)})
	}
	if !(p.ConfirmSure >= 0 && p.ConfirmSure < 1) {
		out = append(out, Problem{"confirm_sure", fmt.Sprintf("%g is not 0 (every face found is sure) or in (0, 1)", p.ConfirmSure)})
	}
	if p.ScanLooks < 0 || p.ScanLooks > maxScanLooks {
		out = append(out, Problem{"scan_looks", fmt.Sprintf("%d is not 0 (off) to %d", p.ScanLooks, maxScanLooks)})
	}
	return out
}

// Network is the face network as a verifier and a scanner
// (track.Verifier, track.Scanner). It is not safe for concurrent use: one
// per tracker.
type Network struct {
	net   *yunet.Net
	p     NetworkParams
	buf   yunet.Buffers
	out   []Face
	weak  []yunet.Face                       // a scan's weak faces (ScanLooks)
	patch [LandmarkSide * LandmarkSide]uint8 // Landmarks' crop
	z     [LookFeatures]float32              // a close look's features (ConfirmHead)
	scans int                                // scans since ResetScan (ScanTiles: the even ones are the tiles')
	// The last scan's shrink, and its tile (empty for the shrunk frame's).
	lastShrink int
	lastTile   image.Rectangle
}

// scanSees is, with scan tiles, the smallest face side (pixels of the
// picture the network runs on) whose absence from the shrunk scan counts
// as a miss (Sees): below it the shrunk scan finds faces too seldom for
// its silence to say they left (at 16–24 px, a third), and the face's
// tile judges it.
const scanSees = 24

// Sees reports whether the last scan could have found a face whose box
// is box: its centre in region and, with scan tiles, on a scan of the
// shrunk frame its side at least scanSees at that resolution, on a tile's
// scan the face in the tile and at most as wide as the tile's overlap
// (a wider one may be cut by the tile's edge). Without tiles the shrunk
// scan judges every face.
func (n *Network) Sees(box feature.Box, region image.Rectangle) bool {
	cx, cy := box.Centre()
	c := image.Pt(int(cx), int(cy))
	if !c.In(region) {
		return false
	}
	if !n.tiled(n.lastShrink) {
		return true
	}
	s := math.Sqrt(box.W * box.H)
	if n.lastTile.Empty() {
		return s >= float64(scanSees*n.lastShrink)
	}
	return c.In(n.lastTile) && s <= 2*tileOverlap
}

// tiled reports whether scans of a frame shrunk k times take turns with
// tiles: where tiles are set and see more than the whole frame's scan, at
// a higher resolution than it (ScanShrink 1 scans the frame's own).
func (n *Network) tiled(k int) bool {
	cols, rows, _ := tileGrid(n.p.ScanTiles)
	return cols*rows >= 2 && k > 1 && n.p.ScanShrink > 1
}

// ResetScan starts the round of scans again (ScanTiles): a new scene's
// first scan is of the whole frame, its second of the top left tile.
func (n *Network) ResetScan() { n.scans = 0 }

// NewNetwork returns net as a verifier and scanner with p, or p's first
// problem.
func NewNetwork(net *yunet.Net, p NetworkParams) (*Network, error) {
	if pr := p.Problems(); len(pr) > 0 {
		return nil, fmt.Errorf("detect: %s: %s", pr[0].Field, pr[0].Why)
	}
	return &Network{net: net, p: p}, nil
}

// Verify reports whether the network finds, on a crop around box, a face
// that box finds (feature.Finds: its centre within half the box's side of
// the box's, its side 0.5–2.5 times the box's).
func (n *Network) Verify(img *image.Gray, box feature.Box) bool {
	cx, cy := box.Centre()
	s := math.Sqrt(box.W * box.H)
	half := verifyContext * s / 2
	crop := image.Rect(int(cx-half), int(cy-half), int(math.Ceil(cx+half)), int(math.Ceil(cy+half))).Intersect(img.Rect)
	if crop.Empty() {
		return false
	}
	k := max(1, int(verifyContext*s)/verifySide)
	for _, f := range n.net.DetectShrunk(&n.buf, img, crop, k, n.p.VerifyScore) {
		if feature.Finds(feature.Box{X: f.X, Y: f.Y, W: f.W, H: f.H}, box) {
			return true
		}
	}
	return false
}

// A landmark look's crop: LandmarkContext box sizes around the box's
// centre, resampled to LandmarkSide pixels a side (a multiple of 32, the
// network's padding), so that its cost is the same whatever the face's
// size: the face is about LandmarkSide/LandmarkContext pixels wide there
// (docs/measured.md, "Landmarks on every face").
const (
	LandmarkContext = 2
	LandmarkSide    = 128
	// landmarkScore is the smallest confidence of the face a landmark look
	// keeps: the box is a tracked face already, so the look only needs the
	// network to place its points, not to decide that a face is there.
	landmarkScore = 0.3
)

// Landmarks runs the network on a crop around box (a tracked face's) and
// returns the face it finds there that box finds (feature.Finds), the most
// confident if several, in the frame's pixels: its box, confidence and
// five landmarks. It allocates nothing once its buffers have grown.
func (n *Network) Landmarks(img *image.Gray, box feature.Box) (yunet.Face, bool) {
	return n.look(img, box, LandmarkContext, landmarkScore)
}

// confirmContext is the side of a confirming look's crop in box sides
// (Confirm): on LandmarkSide pixels the face is some 85 pixels wide, as
// near as the network's largest faces of a 128-pixel picture, where a
// landmark look's 2 sides show it at 64 (docs/measured.md, "A phantom up
// close").
const confirmContext = 1.5

// Confirm reports whether the network finds, with ConfirmScore, a face
// that box finds on a close look (confirmContext box sides around it,
// resampled to LandmarkSide pixels), and whether it is sure of it
// (ConfirmSure); always found and sure with ConfirmScore 0. box is a new
// face's as the pose model refined it, or its detection's if the model
// cannot read it (unread): a real face is found there as surely as far
// off, and the things a scan takes for faces at a tenth of their size (a
// spray can, a glass sphere, a car's wheel) are not, or only unsure on a
// noisy frame (docs/measured.md). The look head judges a look less sure
// than headSure at a box under headSide, and an unread face's at any
// size. It allocates nothing once its buffers have grown.
func (n *Network) Confirm(img *image.Gray, box feature.Box, unread bool) (found, sure bool) {
	if n.p.ConfirmScore == 0 {
		return true, true
	}
	f, ok := n.look(img, box, confirmContext, n.p.ConfirmScore)
	if ok && n.p.ConfirmHead != nil && f.Score < headSure && (unread || math.Sqrt(box.W*box.H) < headSide) {
		poolLook(n.z[:], n.buf.Levels(), f.Score)
		ok = n.p.ConfirmHead.Decision(n.z[:]) >= 0
	}
	return ok, ok && f.Score >= n.p.ConfirmSure
}

// headSure is the close look's confidence from which its face is one
// whatever the look head says: no phantom of the face-free scenes that
// the head refuses reaches it (the most confident 0.91), and a face
// beside another, cheek to cheek, read 0.92 there and under the head's
// threshold (docs/measured.md, "The close look's head").
const headSure = 0.9

// headSide is the box side (the frame's pixels) from which a close look's
// face that the model reads is one whatever the look head says: of the
// things the network takes for faces in the face-free scenes that the
// look passes, 7 of 182 are this large (the wheels, spheres and jars of a
// room are smaller), and AFLW2000's faces of 180–260 px that the head
// refused cost 0.6 points of faces found. A face the model cannot read
// has no angles to publish and no refined box: the head judges it at any
// size, which refuses a rose of 132 px and costs one of AFLW2000's 1475
// faces (docs/measured.md, "The close look's head").
const headSide = 128

// LookAt is Confirm's look as evidence for training a LookHead: the
// confidence of the most confident face the look finds that box finds (0
// for none) and the look's features (LookFeatures values, valid until
// the next look).
func (n *Network) LookAt(img *image.Gray, box feature.Box) (float64, []float32) {
	f, _ := n.look(img, box, confirmContext, lookAtScore)
	poolLook(n.z[:], n.buf.Levels(), f.Score)
	return f.Score, n.z[:]
}

// lookAtScore is the least confidence of a face LookAt reports.
const lookAtScore = 0.01

// look runs the network on a crop of context box sides around box,
// resampled to LandmarkSide pixels, and returns the most confident face
// of at least minScore there that box finds, in the frame's pixels.
func (n *Network) look(img *image.Gray, box feature.Box, context, minScore float64) (yunet.Face, bool) {
	cx, cy := box.Centre()
	side := context * math.Sqrt(box.W*box.H)
	if !(side >= 1) || img.Rect.Empty() {
		return yunet.Face{}, false
	}
	crop := feature.SquareAt(cx, cy, side)
	feature.Crop(n.patch[:], LandmarkSide, img, crop)
	g := image.Gray{Pix: n.patch[:], Stride: LandmarkSide, Rect: image.Rect(0, 0, LandmarkSide, LandmarkSide)}
	k := side / LandmarkSide
	best, found := yunet.Face{}, false
	for _, f := range n.net.Detect(&n.buf, &g, g.Rect, minScore) {
		f.X, f.Y, f.W, f.H = crop.X+f.X*k, crop.Y+f.Y*k, f.W*k, f.H*k
		if !feature.Finds(feature.Box{X: f.X, Y: f.Y, W: f.W, H: f.H}, box) || found && f.Score <= best.Score {
			continue
		}
		for j := range f.Landmarks {
			o := crop.X
			if j%2 == 1 {
				o = crop.Y
			}
			f.Landmarks[j] = o + f.Landmarks[j]*k
		}
		best, found = f, true
	}
	return best, found
}

// scanMaxSide bounds the longer side of the picture the scan runs on: a
// larger frame is shrunk more than ScanShrink (a 1920×1080 frame 3 times,
// to 640×360), so that the scan's time and buffers stay those of a
// 640-pixel picture whatever the camera.
const scanMaxSide = 640

// scanShrink is the factor the scan shrinks r by: ScanShrink, or more to
// bring its longer side to scanMaxSide.
func (n *Network) scanShrink(r image.Rectangle) int {
	return max(n.p.ScanShrink, (max(r.Dx(), r.Dy())+scanMaxSide-1)/scanMaxSide)
}

// Scan returns the faces the network finds in the part r of img, shrunk
// by ScanShrink (or more, to scanMaxSide), as detections: boxes where
// facefinder and the turned cascade put theirs (so that the pose model's
// calibration applies), the view from the landmarks, the network's
// confidence as the score; then, with ScanLooks, its weak faces on a box
// of known (the faces already tracked, as detections' boxes) and the
// faces its looks at other weak faces find. The slice is reused by the
// next call.
func (n *Network) Scan(img *image.Gray, r image.Rectangle, known []feature.Box) []Face {
	n.out, n.weak = n.out[:0], n.weak[:0]
	r = r.Intersect(img.Rect)
	k := n.scanShrink(r)
	n.lastShrink, n.lastTile = k, image.Rectangle{}
	n.scans++
	tile := n.tiled(k) && n.scans%2 == 0
	from := n.p.ScanScore
	if n.p.ScanLooks > 0 {
		from = min(from, lookFrom)
		if tile {
			from = min(from, tileLookFrom)
		}
	}
	if tile {
		// Every other scan: the next tile, at ScanShrink times the
		// resolution of the shrunk scan (the frame's own for one of
		// scanMaxSide or less), at about the shrunk scan's cost.
		cols, rows, _ := tileGrid(n.p.ScanTiles)
		t := tileOf(r, (n.scans/2-1)%(cols*rows), cols, rows)
		n.lastTile = t
		n.sort(inTile(n.net.DetectShrunk(&n.buf, img, t, max(k/n.p.ScanShrink, 1), from), t, r))
	} else {
		n.sort(n.net.DetectShrunk(&n.buf, img, r, k, from))
	}
	n.lookAtWeak(img, known)
	return n.out
}

// minScanFace is the smallest face (its side, pixels of the frame) a
// scan reports: the pose model reads nothing from a face smaller (its
// 64-px patch made from 11–22 px read yaw σ 24–39° there), and at full
// size (the tiles) the network finds faces down to 10 px, most of them on
// face-free scenes phantoms (docs/measured.md, "Small faces in rooms").
const minScanFace = 24

// sort puts faces of ScanScore into out as detections and the weak ones
// into weak; faces under minScanFace go.
func (n *Network) sort(faces []yunet.Face) {
	for _, f := range faces {
		if math.Sqrt(f.W*f.H) < minScanFace {
			continue
		}
		if f.Score >= n.p.ScanScore {
			n.out = append(n.out, AsDetection(f))
		} else {
			n.weak = append(n.weak, f)
		}
	}
}

// lookAtWeak settles the scan's weak faces: one on a face already
// reported is dropped; one on a known (tracked) face is reported as it is
// (the track's own evidence that its face is still there: a small face
// the shrunk scan finds only weakly is not missed by every scan, and
// costs no look); of the others, up to ScanLooks, the most confident
// first and starting one further down the list each scan (so that a weak
// thing that is no face does not take every look of a still scene), are
// looked at, and the faces the looks find with ScanScore are reported.
func (n *Network) lookAtWeak(img *image.Gray, known []feature.Box) {
	if n.p.ScanLooks == 0 || len(n.weak) == 0 {
		return
	}
	w := n.weak[:0]
	for _, f := range n.weak {
		d := AsDetection(f)
		switch {
		case n.reported(d.Box):
		case slices.ContainsFunc(known, func(k feature.Box) bool { return feature.Finds(d.Box, k) }):
			d.Weak = true
			n.out = append(n.out, d)
		default:
			w = append(w, f)
		}
	}
	slices.SortFunc(w, func(a, b yunet.Face) int { return cmp.Compare(b.Score, a.Score) })
	for i := range min(n.p.ScanLooks, len(w)) {
		f := w[(n.scans-1+i)%len(w)]
		found, ok := n.look(img, feature.Box{X: f.X, Y: f.Y, W: f.W, H: f.H}, LandmarkContext, n.p.ScanScore)
		if !ok || math.Sqrt(found.W*found.H) < minScanFace {
			continue
		}
		if d := AsDetection(found); !n.reported(d.Box) {
			n.out = append(n.out, d)
		}
	}
}

// reported says whether box finds (feature.Finds) a face this scan has
// reported already.
func (n *Network) reported(box feature.Box) bool {
	return slices.ContainsFunc(n.out, func(o Face) bool { return feature.Finds(box, o.Box) })
}

// inTile keeps the faces of a tile's scan that are the tile's to find: at
// most twice tileOverlap wide (a wider one is the shrunk scan's) and clear
// of the tile's edges inside the frame r (a face cut there is part of a
// face, which lies whole in the next tile or is the shrunk scan's). Half
// faces on the tiles' edges took the tracks of large faces and read them
// worse (AFLW2000's 30th frame: 5.57 / 8.03° against 5.20 / 7.60°).
func inTile(faces []yunet.Face, t, r image.Rectangle) []yunet.Face {
	const margin = 2
	out := faces[:0]
	for _, f := range faces {
		cut := f.X < float64(t.Min.X+margin) && t.Min.X > r.Min.X ||
			f.Y < float64(t.Min.Y+margin) && t.Min.Y > r.Min.Y ||
			f.X+f.W > float64(t.Max.X-margin) && t.Max.X < r.Max.X ||
			f.Y+f.H > float64(t.Max.Y-margin) && t.Max.Y < r.Max.Y
		if !cut && math.Sqrt(f.W*f.H) <= 2*tileOverlap {
			out = append(out, f)
		}
	}
	return out
}

// tileOverlap is how far (pixels of the frame) each scan tile reaches
// past its cell on every side: a face up to twice that wide lies whole in
// some tile, and wider faces are the shrunk scan's.
const tileOverlap = 48

// tileGrid returns the columns and rows of n scan tiles, and whether n is
// a grid posed scans (0: none).
func tileGrid(n int) (cols, rows int, ok bool) {
	switch n {
	case 0:
		return 0, 0, true
	case 2:
		return 2, 1, true
	case 4:
		return 2, 2, true
	case 6:
		return 3, 2, true
	case 9:
		return 3, 3, true
	}
	return 0, 0, false
}

// tileOf is cell i (row by row) of a cols×rows grid on r, grown by
// tileOverlap on every side and clipped to r.
// Tile is the i-th of the n tiles of r (NetworkParams.ScanTiles: 2, 4,
// 6 or 9) that the scan takes in turn, grown by the tiles' overlap; the
// empty rectangle for another n.
func Tile(r image.Rectangle, i, n int) image.Rectangle {
	cols, rows, ok := tileGrid(n)
	if !ok || cols == 0 || i < 0 || i >= n {
		return image.Rectangle{}
	}
	return tileOf(r, i, cols, rows)
}

func tileOf(r image.Rectangle, i, cols, rows int) image.Rectangle {
	c, w := i%cols, i/cols
	x0, x1 := r.Min.X+c*r.Dx()/cols, r.Min.X+(c+1)*r.Dx()/cols
	y0, y1 := r.Min.Y+w*r.Dy()/rows, r.Min.Y+(w+1)*r.Dy()/rows
	return image.Rect(x0-tileOverlap, y0-tileOverlap, x1+tileOverlap, y1+tileOverlap).Intersect(r)
}

// turnedNose: the nose's offset, in box sides, past which a face is
// turned (the turned cascade finds most faces from |yaw| 30°, whose median
// offset is 0.10).
const turnedNose = 0.09

// AsDetection is a face of the network as a cascade's detection: a square
// box where the cascades put theirs, and the view its landmarks show (the
// nose left of the eyes' middle: YawPositive). The map, fitted on the 4016
// faces of AFLW2000 and Pointing'04 both found, goes by the nose's offset
// n from between the eyes in box sides (0.02 on frontal faces, 0.17 at
// 75–90°): the cascades' centre lies min(1.05 n, 0.12) sides toward the
// nose and 0.05 + 0.2 n sides above the network's, their side is
// max(1.10 − 1.3 n, 0.95) times its.
func AsDetection(f yunet.Face) Face {
	s := math.Sqrt(f.W * f.H)
	mid := (f.Landmarks[0] + f.Landmarks[2]) / 2
	nose := (f.Landmarks[4] - mid) / s
	view := Frontal
	switch {
	case nose < -turnedNose:
		view = YawPositive
	case nose > turnedNose:
		view = YawNegative
	}
	n := min(math.Abs(nose), 0.3)
	dx := math.Copysign(min(1.05*n, 0.12), nose)
	dy := -0.05 - 0.2*n
	side := s * max(1.10-1.3*n, 0.95)
	return Face{Box: feature.SquareAt(f.X+f.W/2+dx*s, f.Y+f.H/2+dy*s, side), Score: f.Score, View: view}
}
