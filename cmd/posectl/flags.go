package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// dataRoot is where the data sets are by default (dataset.Root).
func dataRoot() string { return dataset.Root() }

// dataFlags select labelled images.
type dataFlags struct {
	dirs, p04 string
	inRange   bool
}

func (d *dataFlags) register(fs *flag.FlagSet, def string) {
	fs.StringVar(&d.dirs, "data", def, "comma-separated data set folders (labels.csv, or the original Pointing'04 / AFLW2000 layouts)")
	fs.BoolVar(&d.inRange, "in-range", true, "keep only faces whose angles are all within ±99° (AFLW2000's usual subset)")
	fs.StringVar(&d.p04, "pointing04", "labels", "how Pointing'04's pan and tilt are read: labels (pan is yaw, tilt is pitch, roll unlabelled), faced (the direction the person faced, R = Ry(pan)·Rx(tilt), converted to yaw, pitch and roll) or faced-yaw (the faced head's yaw, tilt as pitch, roll unlabelled)")
}

func (d *dataFlags) load() ([]dataset.Sample, error) {
	reading, ok := dataset.Readings[d.p04]
	if !ok {
		return nil, fmt.Errorf("%w: -pointing04 %q: want labels, faced or faced-yaw", errUsage, d.p04)
	}
	var out []dataset.Sample
	for _, dir := range strings.Split(d.dirs, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		s, err := dataset.Read(dir)
		if err != nil {
			return nil, err
		}
		dataset.PointingReading(s, reading)
		for _, x := range s {
			if x.InRange || !d.inRange {
				out = append(out, x)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no images in -data %q", errUsage, d.dirs)
	}
	return out, nil
}

// modelFlags choose a variant, its EM settings, and the boxes and
// augmentation of its training images.
type modelFlags struct {
	variant, angles, cov      string
	box, flip, sets           string
	repeat, maxPitch          string
	moves, augment, augSet    string
	backdrops                 string
	yawBoxes                  bool
	k, lw, shifts             int
	shared, scale             bool
	useShifted, zeroRoll      bool
	centreSigma, scaleSig     float64
	moveScale                 float64
	starts, maxIter, pcs, pca int
	members                   int
	seed                      uint64
	tol, gammaFloor, floor    float64
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.variant, "variant", "pose", "pose (angles) or pose-bb (angles and box shift)")
	fs.IntVar(&m.lw, "lw", 0, "latent dimensions (0: GLLiM, d > 0: hybrid GLLiM-d)")
	fs.IntVar(&m.k, "k", 50, "mixture components")
	fs.StringVar(&m.angles, "angles", "yaw,pitch", "angles to predict: a subset of yaw,pitch,roll that the data labels")
	fs.StringVar(&m.cov, "cov", "diagonal", "Σ_k: diagonal or isotropic")
	fs.BoolVar(&m.shared, "shared", false, "one Σ for all components")
	fs.StringVar(&m.box, "box", "canonical", "face box: canonical (the detector's, from each data set's annotation by its convention), square (the annotated box's square) or annotated (stretched to the patch, the paper's protocol)")
	fs.BoolVar(&m.yawBoxes, "yaw-boxes", false, "canonical boxes: place each face's box where the detector puts it on faces of that yaw (uses the yaw label)")
	fs.StringVar(&m.sets, "model-sets", "", "the data sets the model learns from and calibrates its σ on, comma-separated (default: every set of -data; the others are tested on only)")
	fs.StringVar(&m.maxPitch, "model-max-pitch", "", "keep the model to some data sets' faces within a |pitch| label: set=degrees,… (e.g. pointing04=30)")
	fs.StringVar(&m.repeat, "model-repeat", "", "weigh some data sets' faces more in the model: set=N,… repeats each of their rows N times (the expert's: -profile-repeat)")
	fs.StringVar(&m.flip, "flip", "", "add the mirrored faces of these data sets (comma-separated names, or all): yaw, roll and the x shift change sign")
	fs.IntVar(&m.shifts, "shifts", -1, "moved boxes per image for augmentation (default 0 for pose, 4 for pose-bb)")
	fs.StringVar(&m.moves, "moves", "gauss", "how moved boxes are drawn: gauss (-centre-sigma, -scale-sigma) or detector (the detector's own errors, × -move-scale)")
	fs.Float64Var(&m.moveScale, "move-scale", 1, "detector moves: factor on the detector's errors")
	fs.StringVar(&m.augment, "augment", "", "augmented views per image: kind[:n[:max]],… with kinds rotate (±max°, labels composed), blur (σ ≤ max patch px), noise (σ ≤ max grey levels), lowres (side ≥ max px), gamma (|log γ| ≤ max), nir (red-channel weight ≥ max), camera (one of blur, lowres, nir per view), backdrop (a -backdrops picture behind a face photographed against a plain wall; name the studio sets in -augment-sets)")
	fs.StringVar(&m.augSet, "augment-sets", "", "data sets to augment (comma-separated; default all)")
	fs.StringVar(&m.backdrops, "backdrops", "", "folder of face-free pictures that backdrop views (-augment or -profile-augment backdrop:N) put behind faces photographed against a plain wall; the third that measures false detections is left out (make negatives fetches them to build/negatives)")
	fs.BoolVar(&m.useShifted, "use-shifted", false, "pose: train on the moved boxes too")
	fs.BoolVar(&m.zeroRoll, "zero-roll", false, "label faces without a roll (Pointing'04) with roll 0")
	fs.BoolVar(&m.scale, "scale", true, "pose-bb: also predict the box's scale correction")
	fs.Float64Var(&m.centreSigma, "centre-sigma", 0.1, "σ of training box moves, in box sides")
	fs.Float64Var(&m.scaleSig, "scale-sigma", 0.1, "σ of training box log-scale changes")
	fs.IntVar(&m.starts, "starts", 1, "EM starts (the best likelihood is kept)")
	fs.IntVar(&m.members, "members", 1, "models fitted from seeds seed, seed+1, … and averaged as one ensemble")
	fs.IntVar(&m.maxIter, "max-iter", 200, "EM iterations per start")
	fs.Float64Var(&m.tol, "tol", 1e-4, "stop EM when the relative log-likelihood gain is below this")
	fs.IntVar(&m.pcs, "init-pcs", 0, "principal components of the features added to t for the k-means initialisation")
	fs.IntVar(&m.pca, "pca", 0, "fit the mixture (and the profile expert's) to the p-HOG values projected on this many of their principal directions, which the model file keeps and the daemon applies to every face (0: the values as they are)")
	fs.Float64Var(&m.gammaFloor, "gamma-floor", 1e-3, "floor on Γ^t_k's eigenvalues (standardised units)")
	fs.Float64Var(&m.floor, "var-floor", 1e-3, "floor on σ_kd as a fraction of each feature's variance")
	fs.Uint64Var(&m.seed, "seed", 1, "random seed (initialisation, box moves)")
}

func (m *modelFlags) options(progress func(train.Progress)) (headpose.Options, error) {
	v := headpose.Variant(m.variant)
	if v != headpose.VariantPose && v != headpose.VariantPoseBB {
		return headpose.Options{}, fmt.Errorf("%w: -variant %q is not pose or pose-bb", errUsage, m.variant)
	}
	cov := gllim.Covariance(m.cov)
	if cov != gllim.Diagonal && cov != gllim.Isotropic {
		return headpose.Options{}, fmt.Errorf("%w: -cov %q is not diagonal or isotropic", errUsage, m.cov)
	}
	if _, err := headpose.ParseBoxKind(m.box); err != nil {
		return headpose.Options{}, fmt.Errorf("%w: -box %q is not canonical, square or annotated", errUsage, m.box)
	}
	if m.members < 1 {
		return headpose.Options{}, fmt.Errorf("%w: -members %d: want at least 1", errUsage, m.members)
	}
	if m.k < 1 || m.lw < 0 {
		return headpose.Options{}, fmt.Errorf("%w: -k %d -lw %d: want k ≥ 1, lw ≥ 0", errUsage, m.k, m.lw)
	}
	if m.pca < 0 || m.pca > feature.Dim {
		return headpose.Options{}, fmt.Errorf("%w: -pca %d: want 0 (none) to %d, the p-HOG values", errUsage, m.pca, feature.Dim)
	}
	rep, err := parseSetCounts("-model-repeat", m.repeat)
	if err != nil {
		return headpose.Options{}, err
	}
	maxPitch, err := parseSetValues("-model-max-pitch", m.maxPitch, "set=degrees (0 to below 90)", func(v string) (float64, bool) {
		d, err := strconv.ParseFloat(v, 64)
		return d, err == nil && d >= 0 && d < 90
	})
	if err != nil {
		return headpose.Options{}, err
	}
	return headpose.Options{
		Variant: v, Angles: strings.Split(m.angles, ","), Flip: splitList(m.flip), Scale: m.scale, UseShifted: m.useShifted, ZeroRoll: m.zeroRoll,
		Members: m.members, Sets: splitList(m.sets), Repeat: rep, MaxPitch: maxPitch, PCA: m.pca,
		EM: train.Config{
			K: m.k, Lw: m.lw, Cov: cov, Shared: m.shared, Starts: m.starts, MaxIter: m.maxIter, Tol: m.tol,
			Seed: m.seed, InitPCs: m.pcs, GammaFloor: m.gammaFloor, VarFloor: m.floor, Progress: progress,
		},
	}, nil
}

// bankOptions returns the bank's boxes and augmentation; det finds the
// faces (canonical boxes, detector moves and the detected condition need
// it), cache keeps its detections between runs.
func (m *modelFlags) bankOptions(det *detect.Detector, cache string) (headpose.BankOptions, error) {
	n := m.shifts
	if n < 0 {
		n = 0
		if m.variant == string(headpose.VariantPoseBB) {
			n = 4
		}
	}
	aug, err := headpose.ParseAugmentations(m.augment)
	if err != nil {
		return headpose.BankOptions{}, fmt.Errorf("%w: -augment: %v", errUsage, err)
	}
	mv := headpose.MoveKind(m.moves)
	if mv != headpose.GaussMoves && mv != headpose.DetectorMoves {
		return headpose.BankOptions{}, fmt.Errorf("%w: -moves %q is not gauss or detector", errUsage, m.moves)
	}
	return headpose.BankOptions{
		Box: headpose.BoxKind(m.box), Shifts: n, Moves: mv, CentreSigma: m.centreSigma, ScaleSigma: m.scaleSig, MoveScale: m.moveScale,
		Seed: m.seed, Detector: det, Cache: cache, YawBoxes: m.yawBoxes, Augment: aug, AugmentSets: splitList(m.augSet),
	}, nil
}

// backdropPictures reads the pictures of -backdrops into bo once every
// augmentation is in it: backdrop views need them, and they are for
// nothing else.
func (m *modelFlags) backdropPictures(bo headpose.BankOptions) (headpose.BankOptions, error) {
	views := slices.ContainsFunc(slices.Concat(bo.Augment, bo.ExpertAugment), func(a headpose.Augmentation) bool { return a.Kind == headpose.Backdrop })
	switch {
	case m.backdrops == "" && views:
		return bo, fmt.Errorf("%w: backdrop views need -backdrops: a folder of face-free pictures", errUsage)
	case m.backdrops != "" && !views:
		return bo, fmt.Errorf("%w: -backdrops %s without a backdrop view in -augment or -profile-augment", errUsage, m.backdrops)
	case !views:
		return bo, nil
	}
	pics, err := cascade.ReadPictures(m.backdrops, 1280)
	if err != nil {
		return bo, fmt.Errorf("-backdrops: %w", err)
	}
	for _, p := range pics {
		if !cascade.HeldOut(p.Name) {
			bo.Backdrops = append(bo.Backdrops, p.Img.Gray())
		}
	}
	return bo, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// cacheFlag registers -cache: where detections are kept between runs.
func cacheFlag(fs *flag.FlagSet) *string {
	def := ""
	if d, err := os.UserCacheDir(); err == nil {
		def = filepath.Join(d, "posed")
	}
	return fs.String("cache", def, "folder where the detections of the data sets are kept between runs (empty: none)")
}

// detectFlags configure the face detector.
type detectFlags struct{ p detect.Params }

func (d *detectFlags) register(fs *flag.FlagSet, minSize int) {
	def := detect.DefaultParams()
	d.p = def // what no flag sets (the turned views' scan) keeps its default
	fs.IntVar(&d.p.MinSize, "min-size", minSize, "detector: smallest face side in pixels")
	fs.IntVar(&d.p.MaxSize, "max-size", def.MaxSize, "detector: largest face side in pixels")
	fs.Float64Var(&d.p.Shift, "det-shift", def.Shift, "detector: window step as a fraction of its size")
	fs.Float64Var(&d.p.Scale, "det-scale", def.Scale, "detector: window growth between scales")
	fs.Float64Var(&d.p.IoU, "det-iou", def.IoU, "detector: IoU above which detections merge")
	fs.Float64Var(&d.p.MinScore, "det-score", def.MinScore, "detector: smallest score kept")
	fs.Float64Var(&d.p.Nested, "det-nested", def.Nested, "detector: drop a face with this share of its box inside a heavier face's (0: keep)")
}

// refineFlags configure Algorithm 1.
type refineFlags struct{ s pose.Settings }

func (r *refineFlags) register(fs *flag.FlagSet) {
	def := pose.DefaultSettings()
	r.s = def
	fs.IntVar(&r.s.MaxIter, "iterations", def.MaxIter, "predictions per face (box refinement steps)")
	fs.Float64Var(&r.s.Eps, "eps", def.Eps, "stop refining when the predicted move is below this (box sides)")
}

// refineListFlags configure Algorithm 1 for evaluations, which may compare
// several numbers of iterations on the same models.
type refineListFlags struct {
	iters, temps, gains string
	eps                 float64
	average             bool
	mirror              bool
}

func (r *refineListFlags) register(fs *flag.FlagSet) {
	def := pose.DefaultSettings()
	fs.StringVar(&r.iters, "iterations", strconv.Itoa(def.MaxIter), "predictions per face (box refinement steps); a comma-separated list measures each")
	fs.Float64Var(&r.eps, "eps", def.Eps, "stop refining when the predicted move is below this (box sides)")
	fs.BoolVar(&r.mirror, "mirror", false, "also predict from the mirrored face and average (test-time augmentation, 2× the cost)")
	fs.BoolVar(&r.average, "average", def.Average, "report the mean of every iteration's angles, not the last (-average=false: the last)")
	fs.StringVar(&r.gains, "gain", "", "factor on each predicted box move (default 1); a comma-separated list measures each")
	fs.StringVar(&r.temps, "temperature", "", "temperature of the mixture weights at prediction (≥ 1; default the model's); a comma-separated list measures each")
}

func (r *refineListFlags) settings() ([]pose.Settings, error) {
	its, err := parseInts(r.iters)
	if err != nil {
		return nil, err
	}
	temps := []float64{0}
	if r.temps != "" {
		temps = nil
		for _, f := range splitList(r.temps) {
			t, err := strconv.ParseFloat(f, 64)
			if err != nil || !(t >= 1) {
				return nil, fmt.Errorf("%w: -temperature %q: want numbers ≥ 1", errUsage, f)
			}
			temps = append(temps, t)
		}
	}
	gains := []float64{0}
	if r.gains != "" {
		if gains, err = parseFloats(r.gains); err != nil {
			return nil, err
		}
		for _, g := range gains {
			if !(g > 0 && g <= 1) {
				return nil, fmt.Errorf("%w: -gain %g not in (0, 1]", errUsage, g)
			}
		}
	}
	for _, n := range its {
		if n < 1 {
			return nil, fmt.Errorf("%w: -iterations %d: want at least 1", errUsage, n)
		}
	}
	var out []pose.Settings
	for _, t := range temps {
		for _, g := range gains {
			for _, n := range its {
				out = append(out, pose.Settings{MaxIter: n, Eps: r.eps, Temperature: t, Average: r.average, Gain: g, Mirror: r.mirror})
			}
		}
	}
	return out, nil
}

// progressBar prints a one-line progress report on stderr, at most ten
// times a second, when stderr is a terminal or -progress is set.
type progressBar struct {
	on   bool
	last time.Time
}

func newProgressBar() *progressBar {
	fi, err := os.Stderr.Stat()
	return &progressBar{on: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p *progressBar) printf(force bool, format string, args ...any) {
	if !p.on || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(os.Stderr, "\r\033[K"+format, args...)
}

func (p *progressBar) done() {
	if p.on {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

func (p *progressBar) em(pr train.Progress) {
	p.printf(false, "EM start %d/%d iteration %d  logL %.6g  %s", pr.Start+1, pr.Starts, pr.Iter, pr.LogL, pr.Elapsed.Round(time.Second))
}

func (p *progressBar) features(done, total int) {
	p.printf(done == total, "features %d/%d images", done, total)
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a list of numbers", errUsage, s)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a list of integers", errUsage, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseSetCounts reads the flag named name: set=N,… with N ≥ 1 (nil if empty).
func parseSetCounts(name, s string) (map[string]int, error) {
	return parseSetValues(name, s, "set=N with N ≥ 1", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1
	})
}

// parseSetValues parses "set=value,…" with parse, which says whether a
// value is one; a malformed pair is a usage error naming the flag and
// what it wants. nil for "".
func parseSetValues[V any](name, s, want string, parse func(string) (V, bool)) (map[string]V, error) {
	var out map[string]V
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		x, good := parse(v)
		if !ok || !good {
			return nil, fmt.Errorf("%w: %s %q: want %s", errUsage, name, kv, want)
		}
		if out == nil {
			out = map[string]V{}
		}
		out[k] = x
	}
	return out, nil
}

// parseInterspersed parses args with fs, flags before, between or after
// the positional arguments (`predict a.jpg -model m.gllim` as well as
// `predict -model m.gllim a.jpg`), and returns the positional ones. After
// "--" every argument is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first positional argument, and consumes a
		// "--" just before it: keep everything after a "--" as it is.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
