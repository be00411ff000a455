package cascade

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/edgepose/posed/infer/detect"
)

// Options configure a cascade's training.
type Options struct {
	Depth int // tree depth (pico: 6)
	Tests int // random comparisons tried per node (pico: 128)
	Seed  uint64
	// Each stage adds trees until it keeps at least MinTPR of the faces
	// that reach it while passing at most MaxFPR of the windows without
	// one, or until it has MaxTrees(stage) trees.
	MinTPR, MaxFPR float64
	// EarlyTPR is the stricter share kept by the first EarlyStages stages,
	// which have one tree each more than the stage before (1, 2, 3, …):
	// they reject the bulk of a frame's windows cheaply and cost few faces.
	EarlyTPR    float64
	EarlyStages int
	MaxTrees    int // the other stages' limit
	// Training stops when the cascade passes at most TargetFPR of the
	// windows drawn while mining, or after MaxStages stages.
	TargetFPR float64
	MaxStages int
	// Negatives per stage (0: as many as faces).
	Negatives int
	// MinNegative is the smallest side of a negative window in pixels.
	MinNegative int
	// MaxDraws bounds the windows drawn to mine one stage's negatives;
	// training stops (keeping what it has) when that many do not yield
	// enough negatives.
	MaxDraws int64
	Workers  int
	// Calibration, if set, marks the face windows (one flag per window)
	// that grow no tree: each stage's thresholds are set on them instead,
	// so that a stage keeps MinTPR of the faces of persons its trees did
	// not see, as a detector meets them, rather than of the faces it fit
	// (mark whole persons: the windows of one face are alike).
	Calibration []bool
	// Checkpoint, if set, is a file written after every stage; a training
	// started with the same options, faces and backgrounds resumes from it.
	Checkpoint string
	Progress   func(Progress)
}

// DefaultOptions are pico's settings where the paper gives them, with a
// stricter share of faces kept by the first stages.
func DefaultOptions() Options {
	return Options{Depth: 6, Tests: 128, Seed: 1, MinTPR: 0.99, MaxFPR: 0.5, EarlyTPR: 0.997, EarlyStages: 4,
		MaxTrees: 24, TargetFPR: 1e-6, MaxStages: 30, MinNegative: 24, MaxDraws: 2e10}
}

func (o *Options) validate() error {
	switch {
	case o.Depth < 1 || o.Depth > 8:
		return fmt.Errorf("cascade: depth %d not in 1…8", o.Depth)
	case o.Tests < 1:
		return fmt.Errorf("cascade: %d tests per node", o.Tests)
	case !(o.MinTPR > 0 && o.MinTPR <= 1) || !(o.EarlyTPR > 0 && o.EarlyTPR <= 1):
		return fmt.Errorf("cascade: stage TPR %g / %g not in (0, 1]", o.MinTPR, o.EarlyTPR)
	case !(o.MaxFPR > 0 && o.MaxFPR < 1):
		return fmt.Errorf("cascade: stage FPR %g not in (0, 1)", o.MaxFPR)
	case o.MaxTrees < 1 || o.MaxStages < 1:
		return fmt.Errorf("cascade: %d trees per stage, %d stages", o.MaxTrees, o.MaxStages)
	case o.EarlyStages < 0:
		return fmt.Errorf("cascade: %d early stages", o.EarlyStages)
	case !(o.TargetFPR > 0 && o.TargetFPR < 1):
		return fmt.Errorf("cascade: target FPR %g not in (0, 1)", o.TargetFPR)
	case o.MinNegative < 8:
		return fmt.Errorf("cascade: smallest negative %d px: want at least 8", o.MinNegative)
	}
	return nil
}

// checkCalibration refuses calibration marks that are not one per face
// window, or that leave no window to grow trees or none to set thresholds.
func (o *Options) checkCalibration(faces int) error {
	if o.Calibration == nil {
		return nil
	}
	n := 0
	for _, c := range o.Calibration {
		n += b01(c)
	}
	switch {
	case len(o.Calibration) != faces:
		return fmt.Errorf("cascade: %d calibration marks for %d face windows", len(o.Calibration), faces)
	case n == 0 || n == faces:
		return fmt.Errorf("cascade: %d of %d face windows marked for calibration: want some to grow the trees and some to set their thresholds", n, faces)
	}
	return nil
}

// maxTrees is stage k's (0-based) limit on trees.
func (o *Options) maxTrees(k int) int {
	if k < o.EarlyStages {
		return k + 1
	}
	return o.MaxTrees
}

func (o *Options) minTPR(k int) float64 {
	if k < o.EarlyStages {
		return o.EarlyTPR
	}
	return o.MinTPR
}

// Progress is reported after every tree and stage.
type Progress struct {
	Stage, StageTrees, Trees int     // stage (0-based), its trees so far, all trees
	TPR, FPR                 float64 // the stage's, on the samples that reach it
	Faces, Negatives         int     // training samples of the stage
	CascadeTPR               float64 // faces still passed of all the faces given
	CascadeFPR               float64 // windows passed of those drawn while mining the stage's negatives
	Drawn                    int64   // windows drawn for the stage
	Done                     bool    // the stage is complete
	Elapsed                  time.Duration
}

// Backgrounds are the images negatives are drawn from: face-free pictures,
// and photographs of people, whose windows near a face that are not a
// detection of it teach the cascade where a face's box is.
type Backgrounds struct {
	Images []Image
	// Faces lists, per image (or none), the face boxes in it as
	// (x0, y0, x1, y1). A window is a negative only if it is no detection
	// of any of them (notDetection).
	Faces [][][4]int
	// NearOnly marks images (or none) of which only windows overlapping a
	// listed face may be negatives: photographs of crowds whose other
	// faces nobody labelled.
	NearOnly []bool
}

// notDetection reports whether a window (centre r, c, side s) is far
// enough from a face box to be a negative: its centre more than 0.6 of the
// face's side from the face's centre, or its side outside 0.4–3 times the
// face's. (A detection counts when its centre is within 0.5 of a side and
// its side within 0.5–2.5 times, see posectl detections: the margins keep
// near-misses of the rule out of the negatives.)
func notDetection(r, c, s int, f [4]int) bool {
	side := float64(f[2]-f[0]+f[3]-f[1]) / 2
	cx, cy := float64(f[0]+f[2])/2, float64(f[1]+f[3])/2
	ratio := float64(s) / side
	return math.Abs(float64(c)-cx) > 0.6*side || math.Abs(float64(r)-cy) > 0.6*side || ratio < 0.4 || ratio > 3
}

// ErrStopped is returned (wrapped) when the context ends a training; the
// checkpoint holds the stages completed.
var ErrStopped = errors.New("cascade: training stopped")

// Train learns a cascade that passes the faces (windows of faceImgs) and
// rejects windows of the backgrounds.
func Train(ctx context.Context, faceImgs []Image, faces []Window, bg Backgrounds, o Options) (*detect.Cascade, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Workers < 1 {
		o.Workers = defaultWorkers()
	}
	if len(faces) == 0 || len(bg.Images) == 0 {
		return nil, fmt.Errorf("cascade: %d faces and %d background images: need both", len(faces), len(bg.Images))
	}
	if err := o.checkCalibration(len(faces)); err != nil {
		return nil, err
	}
	for i, w := range faces {
		if int(w.Img) >= len(faceImgs) || !w.fits(&faceImgs[w.Img]) {
			return nil, fmt.Errorf("cascade: face window %d (%+v) is not inside its image", i, w)
		}
	}
	if len(bg.Faces) != 0 && len(bg.Faces) != len(bg.Images) || len(bg.NearOnly) != 0 && len(bg.NearOnly) != len(bg.Images) {
		return nil, fmt.Errorf("cascade: %d face lists and %d near-only marks for %d background images", len(bg.Faces), len(bg.NearOnly), len(bg.Images))
	}
	l := &learner{o: o, faceImgs: faceImgs, faces: faces, bg: bg, start: time.Now(),
		imgs: append(slices.Clip(faceImgs), bg.Images...),
		c:    &detect.Cascade{Depth: o.Depth, Box: [4]int8{-127, 127, -127, 127}}}
	l.key = l.fingerprint()
	stage := 0
	var negs []Window
	if o.Checkpoint != "" {
		ck, err := readCheckpoint(o.Checkpoint)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		case ck.Key != l.key:
			return nil, fmt.Errorf("cascade: checkpoint %s is of another training (options or data differ); remove it to start again", o.Checkpoint)
		default:
			if l.c, err = detect.ParseCascade(ck.Cascade); err != nil {
				return nil, fmt.Errorf("cascade: checkpoint %s: %w", o.Checkpoint, err)
			}
			// (A checkpoint from before the ends were kept has fewer ends
			// than stages, and StageEnds says so.)
			stage, negs, l.fpr, l.ends = ck.Stages, ck.Negatives, ck.FPR, ck.Ends
		}
	}
	for ; stage < o.MaxStages; stage++ {
		if l.fpr > 0 && l.fpr <= o.TargetFPR {
			break
		}
		var err error
		negs, err = l.stage(ctx, stage, negs)
		if errors.Is(err, errNoNegatives) {
			break
		}
		if err != nil {
			return nil, err
		}
		l.ends = append(l.ends, l.c.Trees())
		if err := l.checkpoint(stage+1, negs, false); err != nil {
			return nil, err
		}
	}
	if l.c.Trees() == 0 {
		return nil, errors.New("cascade: no stage could be trained")
	}
	if err := l.checkpoint(stage, negs, true); err != nil {
		return nil, err
	}
	return l.c, nil
}

type learner struct {
	o        Options
	faceImgs []Image
	faces    []Window
	bg       Backgrounds
	imgs     []Image // faceImgs then bg.Images: the samples' Img indexes it
	c        *detect.Cascade
	fpr      float64 // the cascade's false-positive rate measured while mining the last stage
	key      string
	start    time.Time
	ends     []int // the trees in all after each stage (StageEnds)
}

var errNoNegatives = errors.New("cascade: no negatives left to mine")

// stage trains stage k: the faces the cascade still passes, negatives it
// still passes (kept from the last stage, topped up by mining), then trees
// until the stage's goals. It returns the negatives the stage passes.
func (l *learner) stage(ctx context.Context, k int, negs []Window) ([]Window, error) {
	var ss []sample
	for i, w := range l.faces {
		if out, ok := l.c.ClassifyUpTo(l.faceImgs[w.Img].Pix, l.faceImgs[w.Img].W, int(w.R), int(w.C), int(w.S), l.c.Trees()); ok {
			ss = append(ss, sample{w: w, y: 1, out: out, calib: l.o.Calibration != nil && l.o.Calibration[i]})
		}
	}
	nPos := len(ss)
	want := l.o.Negatives
	if want == 0 {
		want = nPos
	}
	var drawn int64
	var err error
	negs, drawn, err = l.mine(ctx, k, negs, want)
	if err != nil {
		return nil, err
	}
	if len(negs) < want/10 {
		return nil, errNoNegatives
	}
	for _, w := range negs {
		out, _ := l.c.ClassifyUpTo(l.imgs[w.Img].Pix, l.imgs[w.Img].W, int(w.R), int(w.C), int(w.S), l.c.Trees())
		ss = append(ss, sample{w: w, y: -1, out: out})
	}
	imgs := l.imgs
	// The windows that grow the trees: all but the calibration faces.
	var fit []int32
	if l.o.Calibration != nil {
		for i := range ss {
			if !ss[i].calib {
				fit = append(fit, int32(i))
			}
		}
	}
	rng := rand.New(rand.NewPCG(l.o.Seed, uint64(k)<<32|0x7ee))
	minTPR, maxTrees := l.o.minTPR(k), l.o.maxTrees(k)
	var thr float32
	var tpr, fpr float64
	first := l.c.Trees()
	var partial [][]float32 // faces' running sums after each tree of the stage
	for t := 0; ; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStopped, err)
		}
		// GentleBoost weights w_i ∝ exp(−y_i·F(x_i)), each class summing
		// to one half so that the classes weigh alike.
		// (Calibration faces grow no tree: their weights are not used.)
		var sum [2]float64
		for i := range ss {
			ss[i].weight = math.Exp(-float64(ss[i].y) * float64(ss[i].out))
			if !ss[i].calib {
				sum[b01(ss[i].y > 0)] += ss[i].weight
			}
		}
		for i := range ss {
			ss[i].weight /= 2 * sum[b01(ss[i].y > 0)]
		}
		tr := growTree(imgs, ss, fit, l.o.Depth, l.o.Tests, rng, l.o.Workers)
		parallelFor(len(ss), l.o.Workers, func(i int) {
			ss[i].out += tr.eval(&imgs[ss[i].w.Img], ss[i].w)
		})
		tr.appendTo(l.c, noThreshold)
		sums := make([]float32, nPos)
		for i := range sums {
			sums[i] = ss[i].out
		}
		partial = append(partial, sums)
		thr, tpr, fpr = stageThreshold(ss, nPos, minTPR, l.o.Calibration != nil)
		done := fpr <= l.o.MaxFPR || t+1 >= maxTrees
		l.report(Progress{Stage: k, StageTrees: t + 1, Trees: l.c.Trees(), TPR: tpr, FPR: fpr, Faces: nPos,
			Negatives: len(ss) - nPos, CascadeTPR: l.cascadeTPR(ss[:nPos], tpr),
			CascadeFPR: l.fpr, Drawn: drawn, Done: done})
		if done {
			break
		}
	}
	l.c.Thresholds[l.c.Trees()-1] = thr
	tighten(l.c.Thresholds[first:l.c.Trees()-1], partial, ss[:nPos], thr)
	// The negatives the stage still passes (the trees' own thresholds
	// included) carry over to the next.
	kept := negs[:0]
	for _, s := range ss[nPos:] {
		im := &l.imgs[s.w.Img]
		if _, ok := l.c.ClassifyUpTo(im.Pix, im.W, int(s.w.R), int(s.w.C), int(s.w.S), l.c.Trees()); ok {
			kept = append(kept, s.w)
		}
	}
	return kept, nil
}

// tighten gives the trees inside a stage thresholds of their own (a soft
// cascade): tree t's is just below the smallest running sum, after t, of
// the faces that pass the stage's threshold thr. No face the stage keeps
// is lost, and a window without one is rejected as soon as its sum falls
// below every kept face's, instead of at the stage's last tree.
func tighten(thresholds []float32, partial [][]float32, faces []sample, thr float32) {
	for t := range thresholds {
		low := float32(math.Inf(1))
		for i, f := range faces {
			if f.out > thr {
				low = min(low, partial[t][i])
			}
		}
		if !math.IsInf(float64(low), 1) {
			thresholds[t] = math.Nextafter32(low, float32(math.Inf(-1)))
		}
	}
}

// stageThreshold returns the largest threshold that keeps at least minTPR
// of the faces (the first nPos samples; with calib, the calibration faces
// among them only; a window passes when its score is above the
// threshold), with the shares of those faces and of the negatives it
// passes.
func stageThreshold(ss []sample, nPos int, minTPR float64, calib bool) (float32, float64, float64) {
	var pos []float32
	for i := range nPos {
		if !calib || ss[i].calib {
			pos = append(pos, ss[i].out)
		}
	}
	if len(pos) == 0 { // no calibration face reached the stage
		for i := range nPos {
			pos = append(pos, ss[i].out)
		}
	}
	slices.Sort(pos)
	need := int(math.Ceil(minTPR * float64(len(pos))))
	need = max(1, min(need, len(pos)))
	// The need-th largest score must pass: the threshold is the next float32
	// below it.
	thr := math.Nextafter32(pos[len(pos)-need], float32(math.Inf(-1)))
	tp := 0
	for _, o := range pos {
		if o > thr {
			tp++
		}
	}
	fp := 0
	for _, s := range ss[nPos:] {
		if s.out > thr {
			fp++
		}
	}
	neg := len(ss) - nPos
	return thr, float64(tp) / float64(len(pos)), float64(fp) / float64(max(neg, 1))
}

// cascadeTPR is the share of the faces given (of the calibration faces,
// if marked) that the cascade passes once the stage keeps tpr of those
// that reach it (faces).
func (l *learner) cascadeTPR(faces []sample, tpr float64) float64 {
	if l.o.Calibration == nil {
		return float64(len(faces)) * tpr / float64(len(l.faces))
	}
	reach, all := 0, 0
	for _, s := range faces {
		reach += b01(s.calib)
	}
	for _, c := range l.o.Calibration {
		all += b01(c)
	}
	return float64(reach) * tpr / float64(all)
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (l *learner) report(p Progress) {
	if l.o.Progress != nil {
		p.Elapsed = time.Since(l.start)
		l.o.Progress(p)
	}
}

// mineBatch is the number of windows one mining task draws.
const mineBatch = 1 << 14

// mine tops negs up to want windows that the cascade passes, drawn at
// random from the backgrounds: batch b draws from its own generator
// (seed, stage, b) and the batches' finds are taken in batch order, so the
// negatives do not depend on the number of workers. It also measures the
// cascade's false-positive rate: the share of drawn windows it passes.
func (l *learner) mine(ctx context.Context, k int, negs []Window, want int) ([]Window, int64, error) {
	need := want - len(negs)
	if need <= 0 {
		return negs[:want], 0, nil
	}
	// Negatives index l.imgs, where the backgrounds follow the faces.
	shift := int32(len(l.faceImgs))
	// Random windows while the cascade passes many (they spread over every
	// picture); whole pictures scanned once it passes few (a scan looks at
	// windows 50 times faster: neighbouring windows share cache lines).
	scan := l.c.Trees() > 0 && l.fpr > 0 && l.fpr < scanBelow
	var drawn, passed int64
	for b := 0; need > 0; {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrStopped, err)
		}
		if drawn >= l.o.MaxDraws {
			l.fpr = float64(passed) / float64(drawn)
			return negs, drawn, nil
		}
		round := make([][]Window, l.o.Workers*4)
		tried := make([]int64, len(round))
		parallelFor(len(round), l.o.Workers, func(i int) {
			if scan {
				round[i], tried[i] = l.scanBatch(k, b+i, max(1, want/200))
			} else {
				round[i], tried[i] = l.mineBatch(k, b+i)
			}
		})
		for j, found := range round {
			drawn += tried[j]
			for _, w := range found {
				passed++
				if need > 0 {
					w.Img += shift
					negs = append(negs, w)
					need--
				}
			}
			if need == 0 {
				break
			}
		}
		b += len(round)
		if l.o.Progress != nil && need > 0 && b%(64*l.o.Workers) == 0 {
			l.report(Progress{Stage: k, Trees: l.c.Trees(), Negatives: want - need, Drawn: drawn,
				CascadeFPR: float64(passed) / float64(drawn)})
		}
	}
	l.fpr = float64(passed) / float64(drawn)
	return negs, drawn, nil
}

// mineBatch draws mineBatch windows of batch b and returns those the
// cascade passes (with Img indexing bg.Images) and how many of the draws
// were windows that may be negatives.
func (l *learner) mineBatch(k, b int) ([]Window, int64) {
	rng := rand.New(rand.NewPCG(l.o.Seed^0x6e6567, uint64(k)<<40|uint64(b)))
	var out []Window
	var tried int64
	for range mineBatch {
		i := rng.IntN(len(l.bg.Images))
		im := &l.bg.Images[i]
		hi := min(im.W, im.H) - 2
		if hi < l.o.MinNegative {
			continue
		}
		// Sides log-uniform between the smallest and the image's.
		s := int(float64(l.o.MinNegative) * math.Exp(rng.Float64()*math.Log(float64(hi)/float64(l.o.MinNegative))))
		h := s/2 + 1
		r := h + rng.IntN(im.H-2*h+1)
		c := h + rng.IntN(im.W-2*h+1)
		if !l.negative(i, r, c, s) {
			continue
		}
		tried++
		if _, ok := l.c.ClassifyUpTo(im.Pix, im.W, r, c, s, l.c.Trees()); ok {
			out = append(out, Window{Img: int32(i), R: int32(r), C: int32(c), S: int32(s)})
		}
	}
	return out, tried
}

// scanBelow is the false-positive rate below which negatives are mined by
// scanning pictures.
const scanBelow = 1e-3

var scanners = sync.Pool{New: func() any { return new(detect.Scanner) }}

// scanBatch scans one background picture, drawn with batch b's generator,
// with drawn window sizes, steps and a pixel offset, and returns at most
// per of the windows the cascade passes (drawn at random among them,
// none overlapping a face) and how many windows it looked at.
func (l *learner) scanBatch(k, b, per int) ([]Window, int64) {
	rng := rand.New(rand.NewPCG(l.o.Seed^0x7363616e, uint64(k)<<40|uint64(b)))
	i := rng.IntN(len(l.bg.Images))
	im := &l.bg.Images[i]
	dy, dx := rng.IntN(4), rng.IntN(4)
	p := detect.ScanParams{MinSize: l.o.MinNegative + rng.IntN(l.o.MinNegative/2+1), MaxSize: min(im.W-dx, im.H-dy) - 2,
		Shift: 0.05 + 0.1*rng.Float64(), Scale: 1.1 + 0.15*rng.Float64()}
	if p.MaxSize < p.MinSize {
		return nil, 0
	}
	sc := scanners.Get().(*detect.Scanner)
	defer scanners.Put(sc)
	before := sc.Windows()
	found := sc.Scan(nil, l.c, im.Pix[dy*im.W+dx:], im.W, im.H-dy, im.W-dx, p)
	out := make([]Window, 0, len(found))
	for _, w := range found {
		r, c := w.Row+dy, w.Col+dx
		if l.negative(i, r, c, w.Scale) {
			out = append(out, Window{Img: int32(i), R: int32(r), C: int32(c), S: int32(w.Scale)})
		}
	}
	// A partial shuffle picks per of them.
	for j := 0; j < min(per, len(out)); j++ {
		x := j + rng.IntN(len(out)-j)
		out[j], out[x] = out[x], out[j]
	}
	return out[:min(per, len(out))], sc.Windows() - before
}

// negative reports whether the window of background i centred on (r, c)
// with side s may be a negative (Backgrounds).
func (l *learner) negative(i, r, c, s int) bool {
	if len(l.bg.Faces) == 0 {
		return true
	}
	near := false
	x0, y0, x1, y1 := c-s/2, r-s/2, c+s/2, r+s/2
	for _, f := range l.bg.Faces[i] {
		if !notDetection(r, c, s, f) {
			return false
		}
		near = near || x0 < f[2] && f[0] < x1 && y0 < f[3] && f[1] < y1
	}
	return near || len(l.bg.NearOnly) == 0 || !l.bg.NearOnly[i]
}

// fingerprint identifies a training: its options and every face window and
// image, so that a checkpoint is resumed only by the same training.
func (l *learner) fingerprint() string {
	h := sha256.New()
	o := l.o
	// What only says when to stop is not part of the training: a finished
	// training may be carried on with a lower target or more stages.
	o.Checkpoint, o.Progress, o.Workers, o.TargetFPR, o.MaxStages, o.MaxDraws = "", nil, 0, 0, 0, 0
	calib := o.Calibration
	o.Calibration = nil      // hashed below, if set: a training without it keeps its old key
	fmt.Fprintf(h, "%+v", o) // Progress is nil: prints <nil>
	if calib != nil {
		fmt.Fprint(h, "calibration", calib)
	}
	var buf [16]byte
	for _, w := range l.faces {
		binary.LittleEndian.PutUint32(buf[0:], uint32(w.Img))
		binary.LittleEndian.PutUint32(buf[4:], uint32(w.R))
		binary.LittleEndian.PutUint32(buf[8:], uint32(w.C))
		binary.LittleEndian.PutUint32(buf[12:], uint32(w.S))
		h.Write(buf[:])
	}
	for _, set := range [][]Image{l.faceImgs, l.bg.Images} {
		for _, im := range set {
			binary.LittleEndian.PutUint32(buf[0:], uint32(im.W))
			binary.LittleEndian.PutUint32(buf[4:], uint32(im.H))
			h.Write(buf[:8])
			h.Write(im.Pix)
		}
	}
	fmt.Fprint(h, l.bg.Faces, l.bg.NearOnly)
	return hex.EncodeToString(h.Sum(nil))
}

// checkpointFile is what a checkpoint holds: the cascade so far, the
// stages done, and the negatives the last stage passed.
type checkpointFile struct {
	Key       string
	Stages    int
	Cascade   []byte
	Negatives []Window
	FPR       float64
	Finished  bool
	// Ends are the trees in all after each stage (absent from checkpoints
	// written before they were kept).
	Ends []int `json:",omitempty"`
}

func (l *learner) checkpoint(stages int, negs []Window, finished bool) error {
	if l.o.Checkpoint == "" {
		return nil
	}
	c, err := l.c.MarshalBinary()
	if err != nil {
		return err
	}
	b, err := json.Marshal(checkpointFile{Key: l.key, Stages: stages, Cascade: c, Negatives: negs, FPR: l.fpr, Finished: finished, Ends: l.ends})
	if err != nil {
		return err
	}
	tmp := l.o.Checkpoint + ".tmp"
	if err := os.MkdirAll(filepath.Dir(l.o.Checkpoint), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("cascade: checkpoint: %w", err)
	}
	return os.Rename(tmp, l.o.Checkpoint)
}

// StageEnds returns, from a training's checkpoint, the number of trees in
// all after each of its stages: cutting the cascade after one of them
// (detect.Cascade.Cut) keeps whole stages, each with the share of faces
// it was trained to keep (a cut inside a stage would end on a tree
// threshold that no stage target chose).
func StageEnds(checkpoint string) ([]int, error) {
	ck, err := readCheckpoint(checkpoint)
	if err != nil {
		return nil, err
	}
	if len(ck.Ends) != ck.Stages {
		return nil, fmt.Errorf("cascade: checkpoint %s: %d stages but %d stage ends (written before the ends were kept, or resumed from such a checkpoint)", checkpoint, ck.Stages, len(ck.Ends))
	}
	return ck.Ends, nil
}

func readCheckpoint(path string) (*checkpointFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ck checkpointFile
	if err := json.Unmarshal(b, &ck); err != nil {
		return nil, fmt.Errorf("cascade: checkpoint %s: %w", path, err)
	}
	return &ck, nil
}
