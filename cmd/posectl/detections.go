package main

import (
	"flag"
	"fmt"
	"image"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
)

// runDetections measures detectors: the share of faces found per |yaw|
// bin on persons a cascade never saw, and false detections per face-free
// 640×480 frame and per photograph of a person.
func runDetections(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("detections", flag.ContinueOnError)
	var cd cascadeData
	cd.register(fs)
	files := fs.String("cascades", "", "turned-face cascades (comma-separated; one entry may join several, each a view of its own yaw range, by +: a.cascade+b.cascade); with -half H the first is the one trained on half H (measured on the other half), the second on the other half (measured on half H); with -folds N, up to N cascades, the k-th trained with -leave-out k (measured on fold k; folds without a cascade, or with - in its place, are not measured); empty: facefinder alone")
	scores := fs.String("turned-scores", "2", "smallest scores of turned faces to measure (comma-separated)")
	def := detect.DefaultParams()
	shift := fs.Float64("turned-shift", def.TurnedShift, "the turned cascade's window step, a fraction of its side")
	scale := fs.Float64("turned-scale", def.TurnedScale, "the turned cascade's window growth between scales")
	modelPath := fs.String("model", "", "a pose model (with the profile expert beside it) that checks each detection on the face-free frames as posed does (track.start_std): what posed would publish is counted beside the detections")
	unseenDir := fs.String("face-free", "", "a folder of face-free pictures no cascade mined (make negatives fetches one to build/negatives-unseen): every one measured, beside the held-out third of -negatives")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := cd.checkSplit(); err != nil {
		return err
	}
	if cd.leaveOut >= 0 {
		return fmt.Errorf("%w: -leave-out is for posectl cascade; posectl detections takes -folds N and N cascades", errUsage)
	}
	minScores, err := parseFloats(*scores)
	if err != nil {
		return fmt.Errorf("%w: -turned-scores: %v", errUsage, err)
	}
	cs, err := readCascades(*files)
	if err != nil {
		return err
	}
	if cd.folds == 0 && slices.IndexFunc(cs, turnedSet.none) >= 0 {
		return fmt.Errorf("%w: -cascades: - (a fold not measured) goes with -folds", errUsage)
	}
	if cd.folds > 0 && (!slices.ContainsFunc(cs, func(c turnedSet) bool { return !c.none() }) || len(cs) > cd.folds) {
		return fmt.Errorf("%w: -folds %d wants up to %d cascades, the k-th trained without fold k; -cascades gives %d", errUsage, cd.folds, cd.folds, len(cs))
	}
	var check *startCheck
	if *modelPath != "" {
		if check, err = newStartCheck(*modelPath); err != nil {
			return err
		}
	}
	samples, err := cd.data.load()
	if err != nil {
		return err
	}
	pics, err := cascade.ReadPictures(cd.negatives, cd.maxSide)
	if err != nil {
		return err
	}
	frames := cascade.FaceFreeFrames(pics, cascade.HeldOut)
	fmt.Fprintf(stdout, "%d faces; %d face-free 640×480 frames from %d held-out pictures\n", len(samples), len(frames), cascade.CountHeldOut(pics))
	var unseen []*image.Gray
	if *unseenDir != "" {
		more, err := cascade.ReadPictures(*unseenDir, cd.maxSide)
		if err != nil {
			return err
		}
		unseen = cascade.FaceFreeFrames(more, func(string) bool { return true })
		fmt.Fprintf(stdout, "and %d from %d pictures no cascade mined (%s)\n", len(unseen), len(more), *unseenDir)
	}
	if cd.folds > 0 {
		var folds []string
		for k, c := range cs {
			if c != nil {
				folds = append(folds, fmt.Sprint(k))
			}
		}
		fmt.Fprintf(stdout, "folds %s of %d measured, each by the cascade trained without it\n", strings.Join(folds, ", "), cd.folds)
	}
	p := cd.df.p
	ff := cascade.ScanCost(frames, detect.ScanParams{MinSize: p.MinSize, MaxSize: p.MaxSize, Shift: p.Shift, Scale: p.Scale}, detect.Facefinder())
	fmt.Fprintf(stdout, "cost on the face-free frames, trees evaluated per window: facefinder %.2f", ff)
	for i, set := range cs {
		for j, c := range set {
			name := fmt.Sprint(i)
			if len(set) > 1 {
				name += fmt.Sprintf("+%d", j)
			}
			fmt.Fprintf(stdout, ", turned cascade %s (both views) %.2f", name, cascade.ScanCost(frames, detect.ScanParams{MinSize: p.MinSize, MaxSize: p.MaxSize, Shift: *shift, Scale: *scale}, c, c.Mirrored()))
		}
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout)
	setups, err := detectionSetups(cd, cs, minScores, *shift, *scale)
	if err != nil {
		return err
	}
	head := "| detector | set | 0–15 | 15–30 | 30–45 | 45–60 | 60–75 | 75–90 | false per photo | false per face-free frame |"
	if unseen != nil {
		head += " false per unseen face-free frame |"
	}
	if check != nil {
		fmt.Fprintf(stdout, "false per photo and per face-free frame: detections → faces posed publishes (%s checks them: track.start_std %g)\n\n", *modelPath, check.cfg.StartStd)
	}
	fmt.Fprintf(stdout, "%s\n|%s\n", head, strings.Repeat("---|", strings.Count(head, "|")-1))
	for _, st := range setups {
		if err := detectionRows(stdout, st, cd, cs, samples, frames, unseen, check); err != nil {
			return err
		}
	}
	return nil
}

// detectionRows prints a setup's rows of posectl detections' table: per
// data set, the faces found by |yaw|, the false boxes per photograph, and
// the phantoms per face-free frame (held-out, and unseen if any).
func detectionRows(stdout io.Writer, st detectionSetup, cd cascadeData, cs []turnedSet, samples []dataset.Sample, frames, unseen []*image.Gray, check *startCheck) error {
	// False detections on the face-free frames: each part's detector's,
	// averaged (facefinder alone is one detector for every part).
	var dets []*detect.Detector
	for k := range max(cd.folds, 1) {
		if k < max(len(cs), 1) && st.det(k) != nil && !slices.Contains(dets, st.det(k)) {
			dets = append(dets, st.det(k))
		}
	}
	falses := func(on []*image.Gray) string {
		raw, published := cascade.Phantoms(dets, on, check.published())
		if check != nil {
			return fmt.Sprintf("%.3f → %.3f", raw, published)
		}
		return fmt.Sprintf("%.3f", raw)
	}
	held := falses(frames)
	var fresh string
	if unseen != nil {
		fresh = falses(unseen)
	}
	for _, set := range []string{"pointing04", "aflw2000"} {
		r, err := cascade.Measure(st.det, set, samples, cd.part, cd.measured(cs), check.published())
		if err != nil {
			return err
		}
		if r.Photos == 0 {
			continue
		}
		row := []string{st.name, set}
		for b := range r.Found {
			// The counts beside the share: runs on different folds add up.
			row = append(row, fmt.Sprintf("%.0f %% (%d/%d)", 100*float64(r.Found[b])/float64(max(r.Total[b], 1)), r.Found[b], r.Total[b]))
		}
		falsePhoto := fmt.Sprintf("%.3f (%.3f on the face)", float64(r.Falses)/float64(r.Photos), float64(r.Near)/float64(r.Photos))
		if check != nil {
			falsePhoto += fmt.Sprintf(" → %.3f (%.3f)", float64(r.PubFalses)/float64(r.Photos), float64(r.PubNear)/float64(r.Photos))
		}
		row = append(row, falsePhoto, held)
		if unseen != nil {
			row = append(row, fresh)
		}
		fmt.Fprintf(stdout, "| %s |\n", strings.Join(row, " | "))
	}
	return nil
}

// startCheck is what posed makes of detections: its tracker, with the
// default configuration, and a pose model that checks them.
type startCheck struct {
	cfg   track.Config
	calib detect.Calibration
	wk    *pose.Worker
}

func newStartCheck(path string) (*startCheck, error) {
	def := config.Default()
	est, m, err := estimator(def.Model, def.Research, path, "")
	if err != nil {
		return nil, err
	}
	return &startCheck{cfg: assemble.TrackConfig(def), calib: detect.CalibrationOf(m.Calibration), wk: est.NewWorker()}, nil
}

// process returns the faces posed publishes on frame img as the first of
// its scene, whose detections are faces (already run, not run again).
func (c *startCheck) process(faces []detect.Face, img *image.Gray) []track.Face {
	return track.New(c.cfg, detected(faces), c.calib, c.wk).Process(img)
}

// published is process as Measure takes it: the boxes of the faces posed
// publishes (nil for no check).
func (c *startCheck) published() func([]detect.Face, *image.Gray) []feature.Box {
	if c == nil {
		return nil
	}
	return func(faces []detect.Face, g *image.Gray) []feature.Box {
		var out []feature.Box
		for _, f := range c.process(faces, g) {
			out = append(out, f.Box)
		}
		return out
	}
}

// detected is a frame's detections, handed to a tracker as its detector.
type detected []detect.Face

func (d detected) DetectInto(*detect.Buffers, *image.Gray, image.Rectangle) []detect.Face { return d }

// detectionSetup is a detector measured by posectl detections.
type detectionSetup struct {
	name string
	det  func(part int) *detect.Detector // the detector that measures the faces of a part (half or fold) of the persons
}

// part is the part of the persons a face belongs to: its fold with -folds,
// else its half.
func (cd cascadeData) part(s dataset.Sample) int {
	if cd.folds > 0 {
		return cascade.Fold(s, cd.folds)
	}
	return cascade.Half(s)
}

// measured reports whether the faces of a part are measured: with -folds,
// the folds whose cascade was given (not "-"); else all but the half a
// single cascade was trained on.
func (cd cascadeData) measured(cs []turnedSet) func(part int) bool {
	return func(part int) bool {
		if cd.folds > 0 {
			return part < len(cs) && !cs[part].none() // the folds whose cascade was given
		}
		return cd.half < 0 || len(cs) != 1 || part != cd.half
	}
}

// detectionSetups are facefinder alone, then facefinder with the turned
// cascades at each of minScores; with two cascades (one per half of the
// persons) the faces of each half are measured by the other half's, with
// -folds N those of fold k by the k-th cascade (trained without it).
func detectionSetups(cd cascadeData, cs []turnedSet, minScores []float64, shift, scale float64) ([]detectionSetup, error) {
	frontal, err := detect.New(cd.df.p)
	if err != nil {
		return nil, err
	}
	setups := []detectionSetup{{"facefinder", func(int) *detect.Detector { return frontal }}}
	for _, ms := range minScores {
		var dets []*detect.Detector
		for _, c := range cs {
			if c == nil {
				dets = append(dets, nil) // a fold not measured
				continue
			}
			p := cd.df.p
			p.TurnedScore, p.TurnedShift, p.TurnedScale = ms, shift, scale
			d, err := c.detector(p)
			if err != nil {
				return nil, err
			}
			dets = append(dets, d)
		}
		if len(dets) == 0 {
			break
		}
		setups = append(setups, detectionSetup{fmt.Sprintf("facefinder + turned (score ≥ %g)", ms), func(part int) *detect.Detector {
			switch {
			case cd.folds > 0:
				return dets[part] // trained without this fold
			case cd.half < 0 || len(dets) == 1:
				return dets[0]
			case part == cd.half:
				// The cascade trained on the other half measures this half.
				return dets[1]
			}
			return dets[0]
		}})
	}
	return setups, nil
}

// turnedSet is the turned-face cascades of one detector (a fold's, a
// half's): each is scanned as trained and mirrored, beside facefinder.
// Several (joined by + in a list) are views of different yaw ranges.
type turnedSet []*detect.Cascade

// none reports whether the set stands for "-": a fold not measured.
func (ts turnedSet) none() bool { return ts == nil }

// detector returns facefinder with the set's cascades in both views each.
func (ts turnedSet) detector(p detect.Params) (*detect.Detector, error) {
	views := []detect.ViewCascade{{View: detect.Frontal, Cascade: detect.Facefinder(), MinScore: p.MinScore}}
	for _, c := range ts {
		views = append(views, detect.TurnedViews(c, p)...)
	}
	return detect.NewViews(p, views...)
}

// readCascades reads a comma-separated list of turned sets, each a cascade
// file or several joined by +; "-" stands for none (nil: a fold not
// measured).
func readCascades(list string) ([]turnedSet, error) {
	var cs []turnedSet
	for _, entry := range splitList(list) {
		if entry == "-" {
			cs = append(cs, nil)
			continue
		}
		var set turnedSet
		for _, f := range strings.Split(entry, "+") {
			if f == "" {
				return nil, fmt.Errorf("%w: cascades %q: an empty name beside +", errUsage, entry)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			c, err := detect.ParseCascade(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			set = append(set, c)
		}
		cs = append(cs, set)
	}
	return cs, nil
}
