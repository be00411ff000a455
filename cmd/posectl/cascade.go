package main

import (
	"context"
	"flag"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// cascadeData are the flags that choose a cascade's faces and backgrounds,
// shared by training and measuring.
type cascadeData struct {
	data      dataFlags
	df        detectFlags
	cache     *string
	view      string
	half      int
	folds     int // with leaveOut ≥ 0: train on every fold of folds but leaveOut
	leaveOut  int
	negatives string
	maxSide   int
}

func (c *cascadeData) register(fs *flag.FlagSet) {
	c.data.register(fs, dataRoot()+"/pointing04,"+dataRoot()+"/aflw2000")
	c.df.register(fs, 40)
	c.cache = cacheFlag(fs)
	fs.StringVar(&c.view, "view", "40,90", "the view: faces with LO ≤ |yaw| ≤ HI degrees, those with yaw < 0 mirrored")
	fs.IntVar(&c.half, "half", -1, "train on the persons of half 0 or 1 only (measured on the other); -1: all persons")
	fs.IntVar(&c.folds, "folds", 0, "split the persons into this many folds (with -leave-out; posectl detections: one cascade per fold, each measuring the fold it left out)")
	fs.IntVar(&c.leaveOut, "leave-out", -1, "train on every fold of -folds but this one (0 … folds−1), which measures it; -1: none left out")
	fs.StringVar(&c.negatives, "negatives", "build/negatives", "folder of face-free pictures (make negatives fetches Debian's wallpapers there); one in three is kept out to measure false detections")
	fs.IntVar(&c.maxSide, "max-side", 1280, "pictures are scaled down to this longer side")
}

// faceBoxes loads the samples and their canonical boxes placed by yaw (the
// boxes the default model is trained on, headpose.Bank.FaceBox), so that a
// cascade puts its boxes where the pose model expects them.
func (c *cascadeData) faceBoxes() ([]dataset.Sample, *headpose.Bank, error) {
	samples, err := c.data.load()
	if err != nil {
		return nil, nil, err
	}
	det, err := detect.New(c.df.p)
	if err != nil {
		return nil, nil, err
	}
	bar := newProgressBar()
	bank, err := headpose.NewBank(samples, headpose.BankOptions{Box: headpose.CanonicalBox, YawBoxes: true, Detector: det, Cache: *c.cache}, bar.features)
	bar.done()
	return samples, bank, err
}

// runCascade trains a detection cascade for turned faces.
func runCascade(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cascade", flag.ContinueOnError)
	var cd cascadeData
	cd.register(fs)
	def := cascade.DefaultOptions()
	o := def
	out := fs.String("o", "", "cascade file to write (pigo's format)")
	calibrate := fs.Int("calibrate", 0, "set each stage's thresholds on the faces of about 1 in N persons, which grow no tree, so that stages keep their share of faces of persons the trees never saw (0: on the faces the trees fit)")
	ckpt := fs.String("checkpoint", "", "checkpoint file, written after every stage and resumed from (default: the output + .ckpt)")
	var jitter cascade.Jitter
	fs.IntVar(&jitter.N, "jitter", 8, "windows per face: the box and jitter−1 seeded moves of it")
	fs.Float64Var(&jitter.Centre, "jitter-centre", 0.05, "σ of the moves of a face window's centre, in sides")
	fs.Float64Var(&jitter.Scale, "jitter-scale", 0.08, "σ of the moves of a face window's log-side")
	setJitter := fs.String("set-jitter", "", "windows per face of some data sets instead of -jitter: set=N,… (e.g. aflw2000=24 to weigh in-the-wild faces more)")
	tiltJitter := fs.String("tilt-jitter", "", "windows per face of some data sets for faces with |pitch| ≥ -tilt, instead of -set-jitter's or -jitter: set=N,… (e.g. aflw2000=72 to weigh turned faces that also look up or down more)")
	fs.Float64Var(&jitter.Tilt, "tilt", 30, "smallest |pitch| in degrees of the faces -tilt-jitter counts")
	fs.IntVar(&jitter.Rotations, "rotations", 0, "more copies of each face's image turned in-plane, each with its windows")
	fs.Float64Var(&jitter.Rotate, "rotate", 10, "largest in-plane turn of those copies, degrees")
	backdrops := fs.String("backdrops", "", "data sets of faces against a plain wall (e.g. pointing04) whose turned copies (-rotations) get a face-free training picture behind them instead")
	fs.IntVar(&o.Depth, "depth", def.Depth, "tree depth")
	fs.IntVar(&o.Tests, "tests", def.Tests, "random pixel comparisons tried per node")
	fs.Uint64Var(&o.Seed, "seed", def.Seed, "random seed")
	fs.Float64Var(&o.MinTPR, "stage-tpr", def.MinTPR, "share of faces each stage keeps")
	fs.Float64Var(&o.MaxFPR, "stage-fpr", def.MaxFPR, "share of negatives each stage may pass")
	fs.Float64Var(&o.EarlyTPR, "early-tpr", def.EarlyTPR, "share of faces each of the first -early-stages stages keeps (they have 1, 2, 3, … trees: lower rejects more windows early, a cheaper scan)")
	fs.IntVar(&o.EarlyStages, "early-stages", def.EarlyStages, "stages with the -early-tpr share and one tree more each")
	fs.IntVar(&o.MaxTrees, "stage-trees", def.MaxTrees, "most trees per stage")
	fs.Float64Var(&o.TargetFPR, "target-fpr", def.TargetFPR, "stop when the cascade passes this share of drawn windows")
	fs.IntVar(&o.MaxStages, "stages", def.MaxStages, "most stages")
	fs.IntVar(&o.Negatives, "negative-count", 0, "negatives per stage (0: as many as faces)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: -o is required", errUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := cd.checkSplit(); err != nil {
		return err
	}
	if cd.folds > 0 && cd.leaveOut < 0 {
		return fmt.Errorf("%w: -folds %d without -leave-out: say which fold to leave out", errUsage, cd.folds)
	}
	var err error
	if jitter.SetN, err = parseSetCounts("-set-jitter", *setJitter); err != nil {
		return err
	}
	if jitter.TiltN, err = parseSetCounts("-tilt-jitter", *tiltJitter); err != nil {
		return err
	}
	if jitter.TiltN != nil && !(jitter.Tilt >= 0 && jitter.Tilt <= 90) {
		return fmt.Errorf("%w: -tilt %g: want a |pitch| from 0 to 90 degrees", errUsage, jitter.Tilt)
	}
	if *backdrops != "" && jitter.Rotations == 0 {
		return fmt.Errorf("%w: -backdrops puts pictures behind the turned copies of -rotations, which is 0", errUsage)
	}
	if *calibrate == 1 || *calibrate < 0 {
		return fmt.Errorf("%w: -calibrate %d: want 0 (off) or N ≥ 2 (1 in N persons)", errUsage, *calibrate)
	}
	view, err := cascade.ParseView(cd.view)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	o.Checkpoint = *ckpt
	if o.Checkpoint == "" {
		o.Checkpoint = *out + ".ckpt"
	}
	trainS, imgs, boxes, err := cd.trainingFaces()
	if err != nil {
		return err
	}
	pics, err := cascade.ReadPictures(cd.negatives, cd.maxSide)
	if err != nil {
		return fmt.Errorf("%w (make negatives fetches them)", err)
	}
	if *backdrops != "" {
		var made, failed int
		if jitter.Mattes, made, failed, err = mattes(trainS, imgs, view, strings.Split(*backdrops, ",")); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backdrops: %d faces matted against their wall, %d without a wall found\n", made, failed)
		for _, p := range pics {
			if !cascade.HeldOut(p.Name) {
				jitter.Backdrops = append(jitter.Backdrops, p.Img)
			}
		}
	}
	faces := cascade.Faces(trainS, imgs, boxes, view, jitter, o.Seed)
	if *calibrate > 0 {
		var n, persons int
		o.Calibration, n, persons = faces.Calibration(trainS, *calibrate)
		fmt.Fprintf(stdout, "calibration: %d face windows of %d persons set the thresholds and grow no tree\n", n, persons)
	}
	bg, nPics := backgrounds(pics, trainS, imgs, boxes)
	fmt.Fprintf(stdout, "view %s, %s: %d face windows from %d faces (%d faces did not fit their image), %d backgrounds (%d pictures, mirrored and turned, and %d photographs of people)\n",
		view, cd.split(), len(faces.Windows), len(faces.Images), faces.Skipped, len(bg.Images), nPics, len(bg.Images)-4*nPics)
	o.Progress = func(p cascade.Progress) { printStage(stdout, p) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cascade.Train(ctx, faces.Images, faces.Windows, bg, o)
	if err != nil {
		return err
	}
	return writeCascade(stdout, *out, c, o.Checkpoint)
}

// writeCascade writes c to path and says where its stages end (read from
// its training's checkpoint).
func writeCascade(stdout io.Writer, path string, c *detect.Cascade, ckpt string) error {
	b, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d trees of depth %d, %d bytes\n", path, c.Trees(), c.Depth, len(b))
	// The stage ends are what a cut of the cascade keeps whole stages by
	// (detect.TurnedStageEnds lists the shipped cascade's).
	if ends, err := cascade.StageEnds(ckpt); err != nil {
		fmt.Fprintf(stdout, "stage ends unknown: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "stage ends (trees in all after each stage): %s\n", strings.Trim(fmt.Sprint(ends), "[]"))
	}
	return nil
}

// runCut writes a cascade's first N trees: cut at a stage's end, the
// cascade of its first stages, which finds more faces and passes more
// windows without one (the daemon's detect.turned_stages cuts its
// embedded cascade so; this measures a cut of any cascade).
func runCut(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cut", flag.ContinueOnError)
	trees := fs.Int("trees", 0, "trees to keep, from the first (a stage's end: posectl cascade prints them when it writes a cascade)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return fmt.Errorf("%w: want a cascade to read and one to write, got %d arguments", errUsage, len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	c, err := detect.ParseCascade(b)
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	cut, err := c.Cut(*trees)
	if err != nil {
		return fmt.Errorf("%w: -trees %d: %s has %d trees", errUsage, *trees, files[0], c.Trees())
	}
	out, err := cut.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(files[1], out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: the first %d of %s's %d trees, %d bytes\n", files[1], cut.Trees(), files[0], c.Trees(), len(out))
	return nil
}

// checkSplit refuses a split of the persons that names no part of them.
func (cd cascadeData) checkSplit() error {
	switch {
	case cd.half < -1 || cd.half > 1:
		return fmt.Errorf("%w: -half %d is not -1, 0 or 1", errUsage, cd.half)
	case cd.folds < 0 || cd.folds == 1:
		return fmt.Errorf("%w: -folds %d: want 2 or more (0: no folds)", errUsage, cd.folds)
	case cd.leaveOut >= 0 && cd.leaveOut >= cd.folds:
		return fmt.Errorf("%w: -leave-out %d is not a fold of -folds %d (0 … %d)", errUsage, cd.leaveOut, cd.folds, cd.folds-1)
	case cd.leaveOut < -1:
		return fmt.Errorf("%w: -leave-out %d: want a fold or -1", errUsage, cd.leaveOut)
	case cd.half >= 0 && cd.folds > 0:
		return fmt.Errorf("%w: -half and -folds split the persons two ways: give one", errUsage)
	}
	return nil
}

// split says which persons a cascade trains on.
func (cd cascadeData) split() string {
	switch {
	case cd.half >= 0:
		return fmt.Sprintf("half %d", cd.half)
	case cd.leaveOut >= 0:
		return fmt.Sprintf("all folds of %d but %d", cd.folds, cd.leaveOut)
	}
	return "all persons"
}

// trains reports whether the cascade trains on s's person.
func (cd cascadeData) trains(s dataset.Sample) bool {
	switch {
	case cd.half >= 0:
		return cascade.Half(s) == cd.half
	case cd.leaveOut >= 0:
		return cascade.Fold(s, cd.folds) != cd.leaveOut
	}
	return true
}

// trainingFaces are the samples trained on (see trains), their images and
// their face boxes.
func (cd cascadeData) trainingFaces() ([]dataset.Sample, []*image.Gray, []feature.Box, error) {
	samples, bank, err := cd.faceBoxes()
	if err != nil {
		return nil, nil, nil, err
	}
	var trainS []dataset.Sample
	var imgs []*image.Gray
	var boxes []feature.Box
	for i, s := range samples {
		if cd.trains(s) {
			trainS = append(trainS, s)
			imgs = append(imgs, bank.Images[i])
			boxes = append(boxes, bank.FaceBox(i))
		}
	}
	return trainS, imgs, boxes, nil
}

// printStage shows a cascade's training progress: each stage's mining of
// negatives and, when done, its trees and rates and the cascade's.
func printStage(w io.Writer, p cascade.Progress) {
	if p.StageTrees == 0 {
		fmt.Fprintf(w, "  stage %2d mining: %d negatives, %.3g windows drawn, cascade FPR %.3g (%s)\n",
			p.Stage+1, p.Negatives, float64(p.Drawn), p.CascadeFPR, p.Elapsed.Round(time.Second))
		return
	}
	if p.Done {
		fmt.Fprintf(w, "stage %2d: %2d trees (%3d in all), stage TPR %.4f FPR %.3f; faces %d, negatives %d; cascade TPR %.3f, FPR %.3g (%.3g windows drawn) %s\n",
			p.Stage+1, p.StageTrees, p.Trees, p.TPR, p.FPR, p.Faces, p.Negatives, p.CascadeTPR, p.CascadeFPR, float64(p.Drawn), p.Elapsed.Round(time.Second))
	}
}

// backgrounds are the face-free pictures not held out (each also
// mirrored, transposed, and both), and the photographs of the training
// persons with their face boxes (see cascade.Backgrounds: windows near a
// face that are not a detection of it are negatives). AFLW2000's
// photographs give only windows on their face: their crowds hold faces
// nobody labelled. It returns them and the number of pictures.
func backgrounds(pics []cascade.Picture, samples []dataset.Sample, imgs []*image.Gray, boxes []feature.Box) (cascade.Backgrounds, int) {
	var bg cascade.Backgrounds
	n := 0
	for _, p := range pics {
		if cascade.HeldOut(p.Name) {
			continue
		}
		t := p.Img.Transpose()
		bg.Images = append(bg.Images, p.Img, p.Img.Mirror(), t, t.Mirror())
		bg.Faces = append(bg.Faces, nil, nil, nil, nil)
		bg.NearOnly = append(bg.NearOnly, false, false, false, false)
		n++
	}
	for i, s := range samples {
		b := boxes[i]
		bg.Images = append(bg.Images, cascade.FromGray(imgs[i]))
		bg.Faces = append(bg.Faces, [][4]int{{int(b.X), int(b.Y), int(math.Ceil(b.X + b.W)), int(math.Ceil(b.Y + b.H))}})
		bg.NearOnly = append(bg.NearOnly, s.Set != "pointing04")
	}
	return bg, n
}

// mattes are the mattes (dataset.Matte) of the faces of view v from the
// data sets named, read again in colour; nil for the others and for the
// images where Matte finds no wall (counted in failed). A set that no
// sample is from is an error naming it.
func mattes(samples []dataset.Sample, imgs []*image.Gray, v cascade.View, sets []string) (out [][]float32, made, failed int, err error) {
	out = make([][]float32, len(samples))
	for _, set := range sets {
		if !slices.ContainsFunc(samples, func(s dataset.Sample) bool { return s.Set == set }) {
			return nil, 0, 0, fmt.Errorf("%w: -backdrops: no training face is from data set %q", errUsage, set)
		}
	}
	for i, s := range samples {
		if !slices.Contains(sets, s.Set) || !s.HasYaw || !v.Has(s.Yaw) {
			continue
		}
		img, err := dataset.Load(s.Path)
		if err != nil {
			return nil, 0, 0, err
		}
		if b := img.Bounds(); b.Dx() != imgs[i].Rect.Dx() || b.Dy() != imgs[i].Rect.Dy() {
			return nil, 0, 0, fmt.Errorf("-backdrops: %s is %d×%d in colour but %d×%d in grey", s.Path, b.Dx(), b.Dy(), imgs[i].Rect.Dx(), imgs[i].Rect.Dy())
		}
		if out[i], err = dataset.Matte(img); err != nil {
			failed++
			continue
		}
		made++
	}
	return out, made, failed, nil
}
