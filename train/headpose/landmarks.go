package headpose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train"
)

// LandmarkOptions configure a landmark expert: a hybrid GLLiM of the
// angles on the face network's five landmarks (feature.LandmarkFeatures),
// which the daemon fuses with the p-HOG model's answer
// (pose.Estimator.WithLandmarks).
type LandmarkOptions struct {
	EM train.Config // K, Lw, seed, iterations
	// Outputs are the angles its answer is fused into (nil: yaw, pitch
	// and roll).
	Outputs []string
	// Held is the share of the training persons held out of a first
	// training to calibrate the expert's σ on (0: 0.2).
	Held float64
	// Sets are the data sets it learns from (nil: every set of the
	// training images). Pointing'04's labels are the directions of the
	// rig's marks, which its persons' heads follow loosely, and it has no
	// roll: the landmarks' geometry is learnt better without it
	// (docs/measured.md, "Landmarks").
	Sets []string
	// Gate is the model's |yaw| below which the expert is fused
	// (pose.LandmarkGate; 0: at any yaw).
	Gate float64
	// Rho is the correlation of the model's and the expert's errors (each
	// in units of its σ) recorded for the fused σ (pose.LandmarkRho).
	Rho float64
	// PitchRange, in (0, 1], is the share of its training faces whose
	// |pitch| is below the model's |pitch| past which its pitch is not
	// fused (pose.LandmarkPitchGate; 0: fused at any pitch).
	PitchRange float64
	// Members > 1 fits that many mixtures from seeds EM.Seed, EM.Seed+1, …
	// and averages them (an ensemble, as Options.Members).
	Members int
}

// DefaultLandmarkOptions are the landmark expert's recipe
// (docs/measured.md, "Landmarks").
func DefaultLandmarkOptions() LandmarkOptions {
	return LandmarkOptions{EM: train.Config{K: 12, Lw: 2, Seed: 1, MaxIter: 200, Tol: 1e-5}}
}

// landmarkFace is the face network's reading of one image at its face box.
type landmarkFace struct {
	ok             bool
	feat, mirrored [feature.LandmarkDim]float32
}

// landmarkFaces returns the face network's landmark features of every image
// of the bank, at its face box as the daemon looks for them on a tracked
// face (detect.Network.Landmarks), computed once.
func (b *Bank) landmarkFaces() []landmarkFace {
	b.lmOnce.Do(func() {
		b.lm = make([]landmarkFace, len(b.Samples))
		net := yunet.New(yunet.Default())
		parallel(len(b.Samples), func() func(int) {
			n, err := detect.NewNetwork(net, detect.DefaultNetworkParams())
			if err != nil {
				panic(err) // the defaults are valid
			}
			return func(i int) {
				f, ok := n.Landmarks(b.Images[i], b.FaceBox(i))
				if !ok {
					return
				}
				lf := &b.lm[i]
				box := feature.Box{X: f.X, Y: f.Y, W: f.W, H: f.H}
				l := feature.Landmarks(f.Landmarks)
				m := feature.MirrorLandmarks(&l, box.X+box.W/2)
				feature.LandmarkFeatures(lf.feat[:], box, &l)
				feature.LandmarkFeatures(lf.mirrored[:], box, &m)
				lf.ok = true
			}
		})
	})
	return b.lm
}

// landmarkSet is the training set of a landmark expert on images idx:
// each face the network reads, as it is and mirrored (yaw and roll
// negated).
func (b *Bank) landmarkSet(idx []int) (t, y *mat.Dense) {
	lm := b.landmarkFaces()
	n := 0
	for _, i := range idx {
		if lm[i].ok {
			n += 2
		}
	}
	if n == 0 {
		return nil, nil
	}
	t = mat.NewDense(n, 3, nil)
	y = mat.NewDense(n, feature.LandmarkDim, nil)
	r := 0
	for _, i := range idx {
		if !lm[i].ok {
			continue
		}
		s := b.Samples[i]
		for k, f := range [2]*[feature.LandmarkDim]float32{&lm[i].feat, &lm[i].mirrored} {
			sign := float64(1 - 2*k)
			t.SetRow(r, []float64{sign * s.Yaw, s.Pitch, sign * s.Roll}) // roll 0 where unlabelled (zero roll)
			row := y.RawRowView(r)
			for d, v := range f {
				row[d] = float64(v)
			}
			r++
		}
	}
	return t, y
}

// fitLandmarks fits the expert's mixture on images idx.
func fitLandmarks(b *Bank, idx []int, o LandmarkOptions) (*gllim.Model, error) {
	t, y := b.landmarkSet(idx)
	if t == nil {
		return nil, fmt.Errorf("headpose: the face network read no training face's landmarks")
	}
	rs, err := train.FitEnsemble(t, y, o.EM, max(o.Members, 1))
	if err != nil {
		return nil, fmt.Errorf("headpose: landmark expert: %w", err)
	}
	m := rs[0].Model(pose.AngleNames[:], []string{"deg", "deg", "deg"})
	for _, r := range rs[1:] {
		m.Members = append(m.Members, r.Params)
	}
	m.Features = feature.LandmarkRecipe()
	return m, nil
}

// TrainLandmarks trains a landmark expert on the bank's images idx. Its σ
// is calibrated as the model's (-calibrate-std): a first expert trained
// without a share o.Held of the persons is measured on them, and each
// angle's σ is scaled by the ratio of its RMS error to its RMS σ there.
func TrainLandmarks(b *Bank, idx []int, o LandmarkOptions) (*gllim.Model, error) {
	start := time.Now()
	if o.Sets != nil {
		idx = slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return !slices.Contains(o.Sets, b.Samples[i].Set) })
	}
	if !(o.Rho > -1 && o.Rho < 1) {
		return nil, fmt.Errorf("headpose: landmark expert: ρ %g is not in (−1, 1)", o.Rho)
	}
	if !(o.PitchRange >= 0 && o.PitchRange <= 1) {
		return nil, fmt.Errorf("headpose: landmark expert: pitch range %g is not a share in [0, 1]", o.PitchRange)
	}
	if persons(b, idx) < 2 {
		return nil, fmt.Errorf("headpose: landmark expert: %d person(s) to learn from (sets %v): its σ is calibrated on persons held out, it needs two at least", persons(b, idx), o.Sets)
	}
	held := o.Held
	if held == 0 {
		held = 0.2
	}
	fitIdx, testIdx := splitPersons(b, idx, held, o.EM.Seed, 0x1a4d)
	first, err := fitLandmarks(b, fitIdx, o)
	if err != nil {
		return nil, err
	}
	scales, err := landmarkStdScales(b, first, testIdx)
	if err != nil {
		return nil, err
	}
	m, err := fitLandmarks(b, idx, o)
	if err != nil {
		return nil, err
	}
	SetStdScales(m, scales)
	sets := map[string]bool{}
	for _, i := range idx {
		sets[b.Samples[i].Set] = true
	}
	m.Training.Data = slices.Sorted(func(yield func(string) bool) {
		for s := range sets {
			if !yield(s) {
				return
			}
		}
	})
	m.Training.Tool = "posectl train -landmarks"
	m.Training.Date = time.Now().UTC().Format(time.RFC3339)
	m.Training.Name = fmt.Sprintf("landmarks-GLLiM-%d", o.EM.K)
	m.Training.Seed = o.EM.Seed
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	m.Training.Settings = map[string]string{
		"k": strconv.Itoa(o.EM.K), "lw": strconv.Itoa(o.EM.Lw), "seed": strconv.FormatUint(o.EM.Seed, 10),
		"members":  strconv.Itoa(max(o.Members, 1)),
		"max_iter": strconv.Itoa(o.EM.MaxIter), "tol": f(o.EM.Tol),
		"crop":          fmt.Sprintf("%d box sides at %d px", detect.LandmarkContext, detect.LandmarkSide),
		"calibrate_std": fmt.Sprintf("%g of persons, %d faces: yaw ×%s, pitch ×%s, roll ×%s", held, len(testIdx), f(scales[pose.Yaw]), f(scales[pose.Pitch]), f(scales[pose.Roll])),
		"trained_in":    time.Since(start).Round(time.Millisecond).String(),
	}
	if o.Outputs != nil {
		m.Training.Settings[pose.LandmarkOutputs] = strings.Join(o.Outputs, ",")
	}
	if o.Sets != nil {
		m.Training.Settings["sets"] = strings.Join(o.Sets, ",")
	}
	if o.Rho != 0 {
		m.Training.Settings[pose.LandmarkRho] = f(o.Rho)
	}
	if o.Gate != 0 {
		m.Training.Settings[pose.LandmarkGate] = f(o.Gate)
	}
	if o.PitchRange > 0 {
		g, ok := pitchRange(b, idx, o.PitchRange)
		if !ok {
			return nil, fmt.Errorf("headpose: landmark expert: no training face with a pitch to set its pitch gate on")
		}
		m.Training.Settings[pose.LandmarkPitchGate] = f(g)
	}
	return m, nil
}

// pitchRange is the |pitch| (degrees, at least 1) below which a share q of
// the pitch-labelled faces of images idx that the network reads lie: the
// pitches a landmark expert learnt from.
func pitchRange(b *Bank, idx []int, q float64) (float64, bool) {
	lm := b.landmarkFaces()
	var p []float64
	for _, i := range idx {
		if s := b.Samples[i]; lm[i].ok && s.HasPitch {
			p = append(p, math.Abs(s.Pitch))
		}
	}
	if len(p) == 0 {
		return 0, false
	}
	slices.Sort(p)
	return math.Min(math.Max(p[min(int(math.Ceil(q*float64(len(p))))-1, len(p)-1)], 1), 90), true
}

// landmarkStdScales measures, per angle, the ratio of m's RMS error to
// its RMS σ on the faces idx whose landmarks the network reads.
func landmarkStdScales(b *Bank, m *gllim.Model, idx []int) (map[string]float64, error) {
	fw, err := gllim.NewForward(m)
	if err != nil {
		return nil, err
	}
	pr, pd := fw.NewPredictor(), fw.NewPrediction()
	lm := b.landmarkFaces()
	var se, sv [3]float64
	for _, i := range idx {
		if !lm[i].ok {
			continue
		}
		pr.Predict(&pd, lm[i].feat[:])
		v := b.Base(i)
		for a, name := range pose.AngleNames {
			truth, ok := v.Angle(name)
			if !ok {
				continue
			}
			e, s := pd.Mean[a]-truth, pd.Std(a)
			se[a] += e * e
			sv[a] += s * s
		}
	}
	scales := map[string]float64{}
	for a, name := range pose.AngleNames {
		if sv[a] > 0 {
			scales[name] = math.Sqrt(se[a] / sv[a])
		}
	}
	if len(scales) == 0 {
		return nil, fmt.Errorf("headpose: landmark expert: no held-out face to calibrate its σ on")
	}
	return scales, nil
}

// splitPersons holds a share frac of the persons of images idx (of every
// data set, drawn with seed on the generator's stream) out: it returns the
// others' images and theirs. There must be two persons at least.
func splitPersons(b *Bank, idx []int, frac float64, seed, stream uint64) (kept, held []int) {
	person := func(i int) string { return b.Samples[i].Set + "/" + b.Samples[i].Subject }
	var persons []string
	seen := map[string]bool{}
	for _, i := range idx {
		if p := person(i); !seen[p] {
			seen[p] = true
			persons = append(persons, p)
		}
	}
	slices.Sort(persons)
	rng := rand.New(rand.NewPCG(seed, stream))
	rng.Shuffle(len(persons), func(i, j int) { persons[i], persons[j] = persons[j], persons[i] })
	n := min(max(int(math.Round(frac*float64(len(persons)))), 1), len(persons)-1)
	out := map[string]bool{}
	for _, p := range persons[:n] {
		out[p] = true
	}
	for _, i := range idx {
		if out[person(i)] {
			held = append(held, i)
		} else {
			kept = append(kept, i)
		}
	}
	return kept, held
}

// persons counts the persons of images idx (of every data set).
func persons(b *Bank, idx []int) int {
	seen := map[string]bool{}
	for _, i := range idx {
		seen[b.Samples[i].Set+"/"+b.Samples[i].Subject] = true
	}
	return len(seen)
}
