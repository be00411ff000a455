// Package headpose trains and evaluates head-pose models on labelled faces:
// the four variants of the paper (docs/method.md §5), box-shift, mirror, rotation
// and photometric augmentation, each data set's box convention, and the
// evaluation protocols of docs/method.md §6 (leave one person out, k-fold, hold-out;
// annotated, shifted and detected boxes).
package headpose

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

// Shift is a box move in the units the models predict: the centre moves by
// (DX, DY) box sizes and both sides are multiplied by exp(DS); the size of a
// box is √(W·H), its side when square.
type Shift struct{ DX, DY, DS float64 }

// Apply returns b moved by s (its aspect ratio is kept).
func (s Shift) Apply(b feature.Box) feature.Box { return pose.Move(b, s.DX, s.DY, s.DS) }

// Back returns the shift that brings box from onto box to: centres and
// sizes match (aspect ratios are not changed by a shift).
func Back(from, to feature.Box) Shift {
	fx, fy := from.Centre()
	tx, ty := to.Centre()
	fs, ts := math.Sqrt(from.W*from.H), math.Sqrt(to.W*to.H)
	return Shift{DX: (tx - fx) / fs, DY: (ty - fy) / fs, DS: math.Log(ts / fs)}
}

// Jitter draws a random shift: centre N(0, centre²) per axis in box sides,
// log-scale N(0, scale²).
func Jitter(rng *rand.Rand, centre, scale float64) Shift {
	return Shift{DX: centre * rng.NormFloat64(), DY: centre * rng.NormFloat64(), DS: scale * rng.NormFloat64()}
}

// BoxKind says which box around a face the models are trained and
// evaluated on.
type BoxKind string

const (
	// CanonicalBox: the box the detector would give, from each data set's
	// annotation by its Convention. The daemon sees detector boxes, so this
	// is what its models are trained on; a model on canonical boxes takes
	// detector boxes as they are (no calibration).
	CanonicalBox BoxKind = "canonical"
	// SquareBox: the square with the annotated box's centre and side √(w·h),
	// whatever the data set's convention.
	SquareBox BoxKind = "square"
	// AnnotatedBox: the annotated box as it is, stretched to the 64×64 patch
	// (the paper's protocol on annotated boxes; its aspect ratio changes
	// with the pose, which a square detector box cannot know).
	AnnotatedBox BoxKind = "annotated"
)

// ParseBoxKind checks a box kind's name.
func ParseBoxKind(s string) (BoxKind, error) {
	switch k := BoxKind(s); k {
	case CanonicalBox, SquareBox, AnnotatedBox:
		return k, nil
	}
	return "", fmt.Errorf("headpose: box %q is not canonical, square or annotated", s)
}

// MoveKind says how the moved training boxes are drawn.
type MoveKind string

const (
	// GaussMoves: centre and log-scale moves from N(0, σ²) (BankOptions'
	// CentreSigma and ScaleSigma).
	GaussMoves MoveKind = "gauss"
	// DetectorMoves: the detector's own errors, drawn from the moves of the
	// set's matched detections about their canonical boxes (Convention's
	// Errors), scaled by MoveScale; Gaussian for a set without them.
	DetectorMoves MoveKind = "detector"
)

// Bank holds the images of a data set in grey and, for each image, its
// views: the face as it is (view 0), then any augmented copies (rotated,
// blurred, …) for training. Each view has the p-HOG features at its face
// box and at Shifts randomly moved boxes.
type Bank struct {
	Samples     []dataset.Sample
	Images      []*image.Gray
	Box         BoxKind
	Shifts      int                   // moved boxes per view
	Views       []View                // views of every image, image by image
	ViewsOf     [][]int               // image i's views (indices into Views); the first is the image as it is
	Conventions map[string]Convention // CanonicalBox: each data set's convention
	Options     BankOptions           // as made (defaults filled in)

	detector *detect.Detector // the bank's detector (BankOptions.Detector)
	detected [][]detect.Face  // its detections of every image, if any
	matte    [][]float32      // mattes of the images with Backdrop views (BankOptions.Backdrops)

	// Other detectors' detections, per detector and image (nil: not yet).
	detMu sync.Mutex
	dets  map[*detect.Detector][][]detect.Face

	// The face network's landmarks of every image (landmarkFaces).
	lmOnce sync.Once
	lm     []landmarkFace
}

// View is one version of an image's face, with its labels and features.
type View struct {
	Sample int          // the image
	Aug    Augmentation // how the image was changed (Kind "" for none)
	Amount float64      // the change drawn for this view (degrees, σ, …)
	// ExpertOnly: a view of BankOptions.ExpertAugment, which only a
	// profile expert trains on.
	ExpertOnly bool
	// Labels of this view (after a rotation: composed, see dataset.RotateInPlane).
	Yaw, Pitch, Roll          float64
	HasYaw, HasPitch, HasRoll bool
	Moves                     []Shift     // the move applied to box a (Moves[0] is none); the target is its inverse
	Feat                      [][]float32 // features at box a
}

// Angle returns the view's label of angle name and whether it has one.
func (v *View) Angle(name string) (float64, bool) {
	switch name {
	case pose.Yaw:
		return v.Yaw, v.HasYaw
	case pose.Pitch:
		return v.Pitch, v.HasPitch
	case pose.Roll:
		return v.Roll, v.HasRoll
	}
	return 0, false
}

// Target returns the move that brings box a of the view back onto its face
// box, in units of the moved box (the box the features were computed on).
func (v *View) Target(a int) Shift {
	f := feature.Box{W: 1, H: 1} // the inverse of a move does not depend on the box
	return Back(v.Moves[a].Apply(f), f)
}

// BankOptions set the boxes and the augmentation of a bank.
type BankOptions struct {
	// NoFeatures plans the views and leaves their p-HOG features out:
	// for what needs the pictures, boxes and labels only (a landmark
	// expert, posectl train -landmarks-only).
	NoFeatures  bool
	Box         BoxKind  // default SquareBox
	Shifts      int      // moved boxes per view
	Moves       MoveKind // how they are drawn; default GaussMoves
	CentreSigma float64  // GaussMoves: σ of the centre move, box sides (default 0.1)
	ScaleSigma  float64  // GaussMoves: σ of the log-scale move (default 0.1)
	MoveScale   float64  // DetectorMoves: factor on the detector's errors (default 1)
	Seed        uint64
	// Detector finds the faces of every image once; CanonicalBox and
	// DetectorMoves need it, and the detected condition reuses it.
	Detector *detect.Detector
	// YawBoxes places each canonical training box where the detector puts
	// its box on faces of that yaw (Convention.PoseBox), which uses the
	// yaw label; without it the canonical box uses the annotation alone.
	YawBoxes bool
	// Cache, if set, is a folder where detections are kept between runs,
	// keyed by the images and the detector's settings.
	Cache string
	// Augment adds views of each image of the sets in AugmentSets (all
	// sets if empty) for training.
	Augment     []Augmentation
	AugmentSets []string
	// ExpertAugment adds views that only a profile expert trains on
	// (Options.Profile > 0), of the images of the sets in ExpertAugmentSets
	// (all sets if empty): more views of turned heads without changing the
	// model's training rows. They are drawn after Augment's views, so those
	// do not change.
	ExpertAugment     []Augmentation
	ExpertAugmentSets []string
	// Backdrops are the face-free pictures Backdrop views put behind a
	// face (never those that measure false detections).
	Backdrops []*image.Gray
}

func (o *BankOptions) defaults() {
	if o.CentreSigma == 0 {
		o.CentreSigma = 0.1
	}
	if o.ScaleSigma == 0 {
		o.ScaleSigma = 0.1
	}
	if o.MoveScale == 0 {
		o.MoveScale = 1
	}
	if o.Box == "" {
		o.Box = SquareBox
	}
	if o.Moves == "" {
		o.Moves = GaussMoves
	}
}

// NewBank loads every image, detects its faces (if o.Detector is set),
// learns the data sets' conventions (CanonicalBox), and computes the
// features of every view, in parallel. Each image draws its moves and
// augmentations from its own generator (seeded by Seed and its index), so
// the bank does not depend on the number of cores, and adding an
// augmentation does not change the moves of the views before it.
func NewBank(samples []dataset.Sample, o BankOptions, progress func(done, total int)) (*Bank, error) {
	o.defaults()
	if _, err := ParseBoxKind(string(o.Box)); err != nil {
		return nil, err
	}
	if o.Moves != GaussMoves && o.Moves != DetectorMoves {
		return nil, fmt.Errorf("headpose: moves %q are not %q or %q", o.Moves, GaussMoves, DetectorMoves)
	}
	if (o.Box == CanonicalBox || o.Moves == DetectorMoves) && o.Detector == nil {
		return nil, fmt.Errorf("headpose: %s boxes and %s moves need a detector", o.Box, o.Moves)
	}
	backdrops := false
	for _, a := range slices.Concat(o.Augment, o.ExpertAugment) {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		backdrops = backdrops || a.Kind == Backdrop
	}
	if backdrops && len(o.Backdrops) == 0 {
		return nil, fmt.Errorf("headpose: backdrop views without pictures to put behind the faces")
	}
	b := &Bank{Samples: samples, Images: make([]*image.Gray, len(samples)), Shifts: o.Shifts, Box: o.Box, Options: o, detector: o.Detector}
	for _, set := range slices.Concat(o.AugmentSets, o.ExpertAugmentSets) {
		if !b.holds(set) {
			return nil, fmt.Errorf("headpose: augmenting data set %q, which the bank does not hold", set)
		}
	}
	if err := b.load(progress); err != nil {
		return nil, err
	}
	if o.Detector != nil {
		var err error
		if b.detected, err = detectAll(b, o.Detector, o.Cache, progress); err != nil {
			return nil, err
		}
	}
	if o.Box == CanonicalBox || o.Moves == DetectorMoves {
		var err error
		b.Conventions, err = LearnConventions(samples, func(i int) (feature.Box, bool) {
			f, ok := b.Detection(i, o.Detector)
			return f.Box, ok
		})
		if err != nil {
			return nil, err
		}
	}
	if backdrops {
		b.mattes(o)
	}
	b.plan(o)
	var red []*image.Gray
	if slices.ContainsFunc(b.Views, func(v View) bool { return v.Aug.Kind == NIR }) {
		var err error
		if red, err = b.loadRed(); err != nil {
			return nil, err
		}
	}
	if !o.NoFeatures {
		b.extract(red, progress)
	}
	return b, nil
}

// mattes separates the person from the wall (dataset.Matte) in every image
// of the sets a Backdrop view is for, read again in colour, keeping the
// mattes that leave the face box's middle to the face (dataset.MatteHolds);
// the others, and unreadable images, get no Backdrop view.
func (b *Bank) mattes(o BankOptions) {
	extra := o.planned()
	want := func(s dataset.Sample) bool {
		return slices.ContainsFunc(extra, func(p planned) bool { return p.Kind == Backdrop && p.holds(s) })
	}
	b.matte = make([][]float32, len(b.Samples))
	parallel(len(b.Samples), func() func(int) {
		return func(i int) {
			s := b.Samples[i]
			if !want(s) {
				return
			}
			img, err := dataset.Load(s.Path)
			if err != nil {
				return
			}
			if a, err := dataset.Matte(img); err == nil && dataset.MatteHolds(a, img.Bounds().Dx(), s.Box) {
				b.matte[i] = a
			}
		}
	})
}

// loadRed decodes the red channel of every image that has a NIR view.
func (b *Bank) loadRed() ([]*image.Gray, error) {
	red := make([]*image.Gray, len(b.Samples))
	var (
		mu   sync.Mutex
		errs []error
	)
	parallel(len(b.Samples), func() func(int) {
		return func(i int) {
			need := false
			for _, k := range b.ViewsOf[i] {
				need = need || b.Views[k].Aug.Kind == NIR
			}
			if !need {
				return
			}
			img, err := dataset.LoadRed(b.Samples[i].Path)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			red[i] = img
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("headpose: %d images could not be read, first: %w", len(errs), errs[0])
	}
	return red, nil
}

// load decodes every image to grey.
func (b *Bank) load(progress func(done, total int)) error {
	var (
		mu   sync.Mutex
		errs []error
		done int
	)
	parallel(len(b.Samples), func() func(int) {
		return func(i int) {
			s := b.Samples[i]
			img, err := dataset.LoadGray(s.Path)
			if err == nil && !s.Box.Overlaps(img.Rect) {
				err = fmt.Errorf("headpose: %s: face box %v lies outside the %d×%d image", s.Path, s.Box, img.Rect.Dx(), img.Rect.Dy())
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			b.Images[i] = img
			done++
			if progress != nil {
				progress(done, len(b.Samples))
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("headpose: %d images could not be read, first: %w", len(errs), errs[0])
	}
	return nil
}

// planned is one augmentation of the images of some data sets (all if
// none), for the model or for the expert alone.
type planned struct {
	Augmentation
	sets   []string
	expert bool
}

// holds reports whether the augmentation is for sample s's data set.
func (p planned) holds(s dataset.Sample) bool {
	return len(p.sets) == 0 || slices.Contains(p.sets, s.Set)
}

// planned lists the augmented views of an image: the model's, then the
// expert's.
func (o BankOptions) planned() []planned {
	var extra []planned
	for _, a := range o.Augment {
		extra = append(extra, planned{a, o.AugmentSets, false})
	}
	for _, a := range o.ExpertAugment {
		extra = append(extra, planned{a, o.ExpertAugmentSets, true})
	}
	return extra
}

// plan draws every view's moves and augmentations.
func (b *Bank) plan(o BankOptions) {
	per := 1 + o.Shifts
	extra := o.planned()
	b.ViewsOf = make([][]int, len(b.Samples))
	for i, s := range b.Samples {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
		move := func() Shift {
			if c, ok := b.Conventions[s.Origin()]; ok && o.Moves == DetectorMoves && len(c.Errors) > 0 {
				j := rng.IntN(len(c.Errors))
				e := c.Errors[j]
				if o.YawBoxes {
					// About the yaw-placed box, the yaw's move is no error.
					e = c.PoseError(j)
				}
				return Shift{DX: o.MoveScale * e.DX, DY: o.MoveScale * e.DY, DS: o.MoveScale * e.DS}
			}
			return Jitter(rng, o.CentreSigma, o.ScaleSigma)
		}
		moves := func() []Shift {
			m := make([]Shift, per)
			for a := 1; a < per; a++ {
				m[a] = move()
			}
			return m
		}
		base := View{Sample: i, Yaw: s.Yaw, Pitch: s.Pitch, Roll: s.Roll, HasYaw: s.HasYaw, HasPitch: s.HasPitch, HasRoll: s.HasRoll}
		v := base
		v.Moves = moves()
		b.ViewsOf[i] = append(b.ViewsOf[i], len(b.Views))
		b.Views = append(b.Views, v)
		for _, p := range extra {
			if !p.holds(s) {
				continue
			}
			for range p.N {
				if p.Kind == Backdrop && b.matte[i] == nil {
					continue // no wall to replace
				}
				v := base
				va := p.Augmentation
				if va.Kind == Camera {
					va = Augmentation{Kind: cameraKinds[rng.IntN(len(cameraKinds))], N: 1}
				}
				v.Aug, v.Amount, v.ExpertOnly = va, va.draw(rng), p.expert
				if va.Kind == Rotate {
					if !(s.HasYaw && s.HasPitch) {
						continue // a rotation mixes yaw and pitch: both must be known
					}
					// A rotated head has all three angles; an unlabelled
					// roll counts as upright (Pointing'04's heads).
					v.Yaw, v.Pitch, v.Roll = dataset.RotateInPlane(s.Yaw, s.Pitch, s.Roll, v.Amount)
					v.HasRoll = true
				}
				v.Moves = moves()
				b.ViewsOf[i] = append(b.ViewsOf[i], len(b.Views))
				b.Views = append(b.Views, v)
			}
		}
	}
}

// extract computes the features of every view; red holds the red channel
// of the images with NIR views.
func (b *Bank) extract(red []*image.Gray, progress func(done, total int)) {
	per := 1 + b.Shifts
	store := make([]float32, len(b.Views)*per*feature.Dim)
	for k := range b.Views {
		v := &b.Views[k]
		v.Feat = make([][]float32, per)
		for a := range v.Feat {
			off := (k*per + a) * feature.Dim
			v.Feat[a] = store[off : off+feature.Dim : off+feature.Dim]
		}
	}
	var (
		mu   sync.Mutex
		done int
	)
	parallel(len(b.Samples), func() func(int) {
		var aug augmenter
		return func(i int) {
			face := b.FaceBox(i)
			for _, k := range b.ViewsOf[i] {
				v := &b.Views[k]
				img, kind := b.Images[i], v.Aug
				if kind.Kind == Backdrop {
					img, kind = b.backdrop(i, v.Amount), Augmentation{}
				}
				for a, m := range v.Moves {
					var r *image.Gray
					if red != nil {
						r = red[i]
					}
					aug.extract(v.Feat[a], img, r, m.Apply(face), kind, v.Amount, face)
				}
			}
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(b.Samples))
				mu.Unlock()
			}
		}
	})
}

// backdrop is image i with the picture and crop that amount u ∈ [0, 1)
// picks behind the person.
func (b *Bank) backdrop(i int, u float64) *image.Gray {
	pics := b.Options.Backdrops
	pic := pics[min(int(u*float64(len(pics))), len(pics)-1)]
	return dataset.Composite(b.Images[i], b.matte[i], pic, rand.New(rand.NewPCG(math.Float64bits(u), uint64(i))))
}

// FaceBox returns the face box of image i: the canonical, square or
// annotated box of its sample.
func (b *Bank) FaceBox(i int) feature.Box {
	s := b.Samples[i]
	switch b.Box {
	case AnnotatedBox:
		return s.Box
	case CanonicalBox:
		c := b.Conventions[s.Origin()]
		if b.Options.YawBoxes && s.HasYaw {
			return c.PoseBox(s.Box, s.Yaw)
		}
		return c.Apply(s.Box)
	}
	return s.Box.Square()
}

// holds reports whether the bank has a face of data set set.
func (b *Bank) holds(set string) bool {
	return slices.ContainsFunc(b.Samples, func(x dataset.Sample) bool { return x.Set == set })
}

// Base returns image i's view as it is (no augmentation).
func (b *Bank) Base(i int) *View { return &b.Views[b.ViewsOf[i][0]] }

// Calibration is the move from a detector box to the bank's face boxes:
// none for canonical boxes, learnt on images idx otherwise.
func (b *Bank) Calibration(idx []int, d *detect.Detector) detect.Calibration {
	if b.Box == CanonicalBox {
		return detect.Identity
	}
	c, _ := LearnCalibration(b, idx, d)
	return c
}
