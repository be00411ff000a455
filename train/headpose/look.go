package headpose

import (
	"cmp"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/optimize"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train/dataset"
)

// A look head (detect.LookHead) learns what the close look sees at the
// places the daemon asks it about: the network's candidates (its scan of
// the frame shrunk twice and of each 2×2 tile at full size, every answer
// from lookCandidateScore), each read by the pose model from its
// detection's box and, where the model reads it, looked at closely at the
// model's box (docs/method.md §9). Every picture gets a camera's noise
// (lookNoise grey levels), as the daemon's frames have.
const (
	lookCandidateScore = 0.1
	lookNoise          = 3
)

// LookFrames is how many noisy frames of each face-free scene a look
// head learns from unless LookData.Frames says otherwise.
const LookFrames = 2

// LookSample is one close look: its features (detect.LookFeatures), its
// confidence, and whether it is at a face.
type LookSample struct {
	Z     []float32
	Score float64
	Face  bool
}

// LookData is what a look head trains on.
type LookData struct {
	Faces    []dataset.Sample // photographs of persons: looks at their label's face (others are left out, as unlabelled faces may be)
	Pasted   []Pasted         // faces pasted into face-free scenes: looks at a pasted face, and at anything else
	Scenes   []*image.Gray    // face-free scenes: every look is at no face
	Frames   int              // noisy frames of each scene (0: LookFrames)
	StartStd float64          // the pose model reads a candidate whose yaw σ is at most this (track.start_std)
	Seed     uint64
}

// CollectLooks gathers the looks of d, as many pictures at once as there
// are cores; net is shared (read-only), each worker has its own network
// and pose worker. The samples are in the order of d's pictures.
func CollectLooks(d LookData, net *yunet.Net, est *pose.Estimator, calib detect.Calibration) ([]LookSample, error) {
	frames := d.Frames
	if frames < 1 {
		frames = LookFrames
	}
	type job struct {
		img    func() (*image.Gray, error)
		labels []feature.Box
		frames int
		all    bool // looks off the labels are at no face (pasted, scenes)
	}
	var jobs []job
	for _, s := range d.Faces {
		jobs = append(jobs, job{img: func() (*image.Gray, error) { return dataset.LoadGray(s.Path) }, labels: []feature.Box{s.Box}, frames: 1})
	}
	for _, p := range d.Pasted {
		var ls []feature.Box
		for _, f := range p.Faces {
			ls = append(ls, f.Box)
		}
		jobs = append(jobs, job{img: func() (*image.Gray, error) { return p.Frame, nil }, labels: ls, frames: 1, all: true})
	}
	for _, s := range d.Scenes {
		jobs = append(jobs, job{img: func() (*image.Gray, error) { return s, nil }, frames: frames, all: true})
	}
	out := make([][]LookSample, len(jobs))
	var mu sync.Mutex
	var ferr error
	parallel(len(jobs), func() func(int) {
		nw, err := detect.NewNetwork(net, detect.DefaultNetworkParams())
		wk := est.NewWorker()
		var buf yunet.Buffers
		var noisy *image.Gray
		fail := func(err error) {
			mu.Lock()
			ferr = cmp.Or(ferr, err)
			mu.Unlock()
		}
		return func(i int) {
			if err != nil {
				fail(err)
				return
			}
			j := jobs[i]
			img, ierr := j.img()
			if ierr != nil {
				fail(ierr)
				return
			}
			for f := range j.frames {
				noisy = addNoise(noisy, img, lookNoise, rand.New(rand.NewPCG(d.Seed+uint64(i), uint64(f))))
				lookCandidates(noisy, net, &buf, nw, wk, calib, d.StartStd, func(box feature.Box, score float64, z []float32) {
					face := slices.ContainsFunc(j.labels, func(l feature.Box) bool { return feature.Finds(box, l) })
					if !face && !j.all {
						return
					}
					out[i] = append(out[i], LookSample{Z: slices.Clone(z), Score: score, Face: face})
				})
			}
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	return slices.Concat(out...), nil
}

// lookCandidates calls each with every close look the daemon's scan
// would ask for on img (above): the model's box, the look's confidence
// and its features.
func lookCandidates(img *image.Gray, net *yunet.Net, buf *yunet.Buffers, nw *detect.Network, wk *pose.Worker, calib detect.Calibration, startStd float64, each func(feature.Box, float64, []float32)) {
	p := detect.DefaultNetworkParams()
	faces := slices.Clone(net.DetectShrunk(buf, img, img.Rect, p.ScanShrink, lookCandidateScore))
	for i := range p.ScanTiles {
		faces = append(faces, net.Detect(buf, img, detect.Tile(img.Rect, i, p.ScanTiles), lookCandidateScore)...)
	}
	for _, f := range faces {
		r := wk.Estimate(img, calib.Apply(detect.AsDetection(f).Box))
		if !(r.Std[0] <= startStd) {
			continue
		}
		score, z := nw.LookAt(img, r.Box)
		each(r.Box, score, z)
	}
}

// LookFit is how a look head is fitted: L2-regularised logistic
// regression on the standardised features, each class weighing as much
// as the other (C, as scikit-learn's, weighs the data against the
// penalty ½‖w‖²), then the threshold that keeps Keep of the training
// faces the look alone finds (confidence at least ConfirmScore).
type LookFit struct {
	C            float64
	Keep         float64
	ConfirmScore float64
}

// LookReport says what a fitted head does on the samples it learnt from.
type LookReport struct {
	Faces, NotFaces           int // samples
	FacesFound, NotFacesFound int // … that the look alone finds
	FacesKept, NotFacesKept   int // … of those, that the head also does
	Iterations                int
}

// FitLookHead fits a look head to samples (LookFit).
func FitLookHead(samples []LookSample, o LookFit) (*detect.LookHead, LookReport, error) {
	var rep LookReport
	const n = detect.LookFeatures
	for _, s := range samples {
		if len(s.Z) != n {
			return nil, rep, fmt.Errorf("headpose: look head: a sample of %d features, want %d", len(s.Z), n)
		}
		if s.Face {
			rep.Faces++
		} else {
			rep.NotFaces++
		}
	}
	if rep.Faces == 0 || rep.NotFaces == 0 {
		return nil, rep, fmt.Errorf("headpose: look head: %d faces and %d other looks: need both", rep.Faces, rep.NotFaces)
	}
	if !(o.C > 0) || !(o.Keep > 0 && o.Keep <= 1) {
		return nil, rep, fmt.Errorf("headpose: look head: C %g, keep %g: want C > 0 and keep in (0, 1]", o.C, o.Keep)
	}
	// Standardise: z' = (z − mean)/scale (a constant feature keeps scale 1).
	mean, scale := make([]float64, n), make([]float64, n)
	for _, s := range samples {
		for k, v := range s.Z {
			mean[k] += float64(v)
		}
	}
	for k := range mean {
		mean[k] /= float64(len(samples))
	}
	for _, s := range samples {
		for k, v := range s.Z {
			d := float64(v) - mean[k]
			scale[k] += d * d
		}
	}
	for k := range scale {
		scale[k] = math.Sqrt(scale[k] / float64(len(samples)))
		if !(scale[k] > 1e-12) {
			scale[k] = 1
		}
	}
	x := make([]float64, len(samples)*n)
	y := make([]float64, len(samples))
	cw := make([]float64, len(samples))
	for i, s := range samples {
		for k, v := range s.Z {
			x[i*n+k] = (float64(v) - mean[k]) / scale[k]
		}
		y[i], cw[i] = -1, float64(len(samples))/(2*float64(rep.NotFaces))
		if s.Face {
			y[i], cw[i] = 1, float64(len(samples))/(2*float64(rep.Faces))
		}
	}
	// f(w, b) = ½‖w‖² + C Σ cw_i log(1 + exp(−y_i (w·x_i + b))), the bias
	// unpenalised; its gradient w + C Σ cw_i (σ(y_i d_i) − 1) y_i x_i.
	fg := func(grad, p []float64) float64 {
		w, b := p[:n], p[n]
		f := 0.0
		for _, v := range w {
			f += 0.5 * v * v
		}
		if grad != nil {
			copy(grad[:n], w)
			grad[n] = 0
		}
		for i := range samples {
			xi := x[i*n : (i+1)*n]
			d := b
			for k, v := range xi {
				d += w[k] * v
			}
			m := y[i] * d
			// log(1 + e^−m), stable both ways.
			if m > 0 {
				f += o.C * cw[i] * math.Log1p(math.Exp(-m))
			} else {
				f += o.C * cw[i] * (math.Log1p(math.Exp(m)) - m)
			}
			if grad != nil {
				g := -o.C * cw[i] * y[i] / (1 + math.Exp(m)) // ∂/∂d
				for k, v := range xi {
					grad[k] += g * v
				}
				grad[n] += g
			}
		}
		return f
	}
	p := optimize.Problem{
		Func: func(p []float64) float64 { return fg(nil, p) },
		Grad: func(grad, p []float64) { fg(grad, p) },
	}
	res, err := optimize.Minimize(p, make([]float64, n+1), &optimize.Settings{GradientThreshold: 1e-6, MajorIterations: 2000}, &optimize.LBFGS{})
	if err != nil && res == nil {
		return nil, rep, fmt.Errorf("headpose: look head: %w", err)
	}
	rep.Iterations = res.MajorIterations
	h := &detect.LookHead{}
	b := res.X[n]
	for k := range n {
		h.W[k] = float32(res.X[k] / scale[k])
		b -= res.X[k] * mean[k] / scale[k]
	}
	h.B = float32(b)
	// The threshold: the (1 − Keep) quantile of the decisions of the
	// faces the look alone finds.
	var found []float64
	for _, s := range samples {
		if s.Face && s.Score >= o.ConfirmScore {
			found = append(found, h.Decision(s.Z))
		}
	}
	if len(found) == 0 {
		return nil, rep, fmt.Errorf("headpose: look head: the look finds none of the %d faces at %g", rep.Faces, o.ConfirmScore)
	}
	slices.Sort(found)
	h.Threshold = float32(found[int((1-o.Keep)*float64(len(found)))])
	for _, s := range samples {
		if s.Score < o.ConfirmScore {
			continue
		}
		kept := h.Decision(s.Z) >= 0
		if s.Face {
			rep.FacesFound++
			if kept {
				rep.FacesKept++
			}
		} else {
			rep.NotFacesFound++
			if kept {
				rep.NotFacesKept++
			}
		}
	}
	return h, rep, nil
}

// NearViews returns each scene as seen k times nearer: a square of 1/k
// of its shorter side, at a seeded place, enlarged bilinearly to that
// side, so that the things in it are k times the size they are in the
// scene (the look head's large non-faces, which a room's scenes at 640 px
// hold few of). A scene too small for a pixel's square is left out.
func NearViews(scenes []*image.Gray, k float64, seed uint64) []*image.Gray {
	rng := rand.New(rand.NewPCG(seed, 0x6e656172))
	out := make([]*image.Gray, 0, len(scenes))
	for _, s := range scenes {
		w, h := s.Rect.Dx(), s.Rect.Dy()
		n := min(w, h)
		side := float64(n) / k
		if side < 1 {
			continue
		}
		// The square's corner, in s's pixels from its origin; view pixel
		// (u, v) is the scene at (x, y) + (u+½, v+½)·side/n.
		x, y := rng.Float64()*(float64(w)-side), rng.Float64()*(float64(h)-side)
		g := image.NewGray(image.Rect(0, 0, n, n))
		for v := range n {
			for u := range n {
				g.Pix[v*g.Stride+u] = dataset.Bilinear(s, x+(float64(u)+0.5)*side/float64(n), y+(float64(v)+0.5)*side/float64(n))
			}
		}
		out = append(out, g)
	}
	return out
}
