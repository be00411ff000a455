// Package headpose trains and evaluates head-pose models on labelled faces:
// the four variants of the paper (METHOD §5), box-shift and mirror
// augmentation, the detector calibration, and the evaluation protocol of
// METHOD §6 (leave one person out; annotated, shifted and detected boxes).
package headpose

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
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
// evaluated on. Pointing'04's annotated boxes and AFLW2000's landmark boxes
// both run from the eyebrows to the chin.
type BoxKind string

const (
	// SquareBox: the square with the annotated box's centre and side √(w·h).
	// Detectors give square boxes, so this is what the daemon's models use.
	SquareBox BoxKind = "square"
	// AnnotatedBox: the annotated box as it is, stretched to the 64×64 patch
	// (the paper's protocol on annotated boxes; its aspect ratio changes
	// with the pose, which a square detector box cannot know).
	AnnotatedBox BoxKind = "annotated"
)

// FaceBox returns the face box of kind k for sample s.
func FaceBox(s dataset.Sample, k BoxKind) feature.Box {
	if k == AnnotatedBox {
		return s.Box
	}
	return s.Box.Square()
}

// FaceBox returns the face box of image i.
func (b *Bank) FaceBox(i int) feature.Box { return FaceBox(b.Samples[i], b.Box) }

// Bank holds the images of a data set in grey and the p-HOG features of each
// face at its face box and at Shifts randomly moved boxes.
type Bank struct {
	Samples []dataset.Sample
	Images  []*image.Gray
	Box     BoxKind     // the face box
	Shifts  int         // moved boxes per image
	Feat    [][]float32 // image i, box a (0: the face box) at i*(1+Shifts)+a
	Moves   []Shift     // the move applied to box a; the target is its inverse

	detOnce sync.Once
	detMu   sync.Mutex
	detBy   *detect.Detector
	dets    [][]detect.Face
	detDone []bool
}

// BankOptions set the augmentation of a bank.
type BankOptions struct {
	Box         BoxKind // default SquareBox
	Shifts      int     // moved boxes per image
	CentreSigma float64 // σ of the centre move, box sides (default 0.1)
	ScaleSigma  float64 // σ of the log-scale move (default 0.1)
	Seed        uint64
}

func (o *BankOptions) defaults() {
	if o.CentreSigma == 0 {
		o.CentreSigma = 0.1
	}
	if o.ScaleSigma == 0 {
		o.ScaleSigma = 0.1
	}
	if o.Box == "" {
		o.Box = SquareBox
	}
}

// NewBank loads every image and computes the features, in parallel. Each
// image draws its moves from its own generator (seeded by Seed and its
// index), so the bank does not depend on the number of cores.
func NewBank(samples []dataset.Sample, o BankOptions, progress func(done, total int)) (*Bank, error) {
	o.defaults()
	per := 1 + o.Shifts
	b := &Bank{
		Samples: samples, Images: make([]*image.Gray, len(samples)), Shifts: o.Shifts, Box: o.Box,
		Feat: make([][]float32, len(samples)*per), Moves: make([]Shift, len(samples)*per),
	}
	store := make([]float32, len(samples)*per*feature.Dim)
	var (
		mu   sync.Mutex
		errs []error
		done int
	)
	parallel(len(samples), func() func(int) {
		var ex feature.Extractor
		return func(i int) {
			s := samples[i]
			img, err := dataset.LoadGray(s.Path)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			b.Images[i] = img
			rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
			face := FaceBox(s, o.Box)
			for a := 0; a < per; a++ {
				var m Shift
				if a > 0 {
					m = Jitter(rng, o.CentreSigma, o.ScaleSigma)
				}
				k := i*per + a
				b.Moves[k] = m
				b.Feat[k] = store[k*feature.Dim : (k+1)*feature.Dim]
				ex.Extract(b.Feat[k], img, m.Apply(face))
			}
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(samples))
				mu.Unlock()
			}
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("headpose: %d images could not be read, first: %w", len(errs), errs[0])
	}
	return b, nil
}

// Target returns the move that brings box a of image i back onto the face
// box, in units of the moved box (the box the features were computed on).
func (b *Bank) Target(i, a int) Shift {
	face := b.FaceBox(i)
	return Back(b.Moves[i*(1+b.Shifts)+a].Apply(face), face)
}
