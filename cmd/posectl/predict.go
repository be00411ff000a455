package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/annotate"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

// faceJSON is what predict prints per face.
type faceJSON struct {
	Image      string     `json:"image"`
	Face       int        `json:"face"`
	Detected   []float64  `json:"detected_box,omitempty"` // [x1,y1,x2,y2] of the detector, before calibration
	Box        [4]float64 `json:"box"`                    // refined [x1,y1,x2,y2]
	Score      float64    `json:"score,omitempty"`
	Yaw        *float64   `json:"yaw,omitempty"`
	Pitch      *float64   `json:"pitch,omitempty"`
	Roll       *float64   `json:"roll,omitempty"`
	YawStd     *float64   `json:"yaw_std,omitempty"`
	PitchStd   *float64   `json:"pitch_std,omitempty"`
	RollStd    *float64   `json:"roll_std,omitempty"`
	Iterations int        `json:"iterations"`
}

func runPredict(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	var df detectFlags
	var rf refineFlags
	df.register(fs, 40)
	rf.register(fs)
	modelPath := fs.String("model", "models/default.gllim", "model file")
	expertPath := fs.String("expert", "", "the model's profile expert (default: MODEL-profile.gllim beside the model if there is one; none: without)")
	boxFlag := fs.String("box", "", "x,y,w,h: estimate from this box instead of detecting")
	drawPath := fs.String("draw", "", "write a PNG with detected (red) and refined (green) boxes and the pose as 3-D axes (one image only)")
	images, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(images) == 0 {
		return fmt.Errorf("%w: no image given", errUsage)
	}
	if *drawPath != "" && len(images) != 1 {
		return fmt.Errorf("%w: -draw takes one image, got %d", errUsage, len(images))
	}
	var fixed *feature.Box
	if *boxFlag != "" {
		b, err := parseBox(*boxFlag)
		if err != nil {
			return err
		}
		fixed = &b
	}
	est, m, err := loadEstimator(*modelPath, *expertPath, rf.s)
	if err != nil {
		return err
	}
	det, err := detect.New(df.p)
	if err != nil {
		return err
	}
	p := predictor{est: est, wk: est.NewWorker(), det: det, calib: detect.CalibrationOf(m.Calibration), fixed: fixed, enc: json.NewEncoder(stdout)}
	var faceless []string
	for _, path := range images {
		img, starts, results, err := p.image(path)
		if err != nil {
			return err
		}
		if len(starts) == 0 {
			faceless = append(faceless, path)
		}
		if *drawPath != "" {
			if err := drawResults(*drawPath, img, starts, results, fixed == nil); err != nil {
				return err
			}
		}
	}
	if len(faceless) > 0 {
		return fmt.Errorf("%w in %s (of %d images): give the face's box with -box x,y,w,h, or try a smaller -min-size (now %d px) or -det-score (now %g)",
			errNoFace, strings.Join(faceless, ", "), len(images), df.p.MinSize, df.p.MinScore)
	}
	return nil
}

// loadEstimator reads the model at path and builds its estimator with
// settings s and the profile expert of withExpert (expert: "" beside the
// model, "none", or a file).
func loadEstimator(path, expert string, s pose.Settings) (*pose.Estimator, *gllim.Model, error) {
	m, err := gllim.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-model: %w", err)
	}
	est, err := pose.New(m, s)
	if err != nil {
		return nil, nil, fmt.Errorf("-model: %s: %w", path, err)
	}
	if est, err = withExpert(est, path, expert); err != nil {
		return nil, nil, err
	}
	return est, m, nil
}

// withExpert adds the profile expert at path to est: "" takes the one
// beside the model if there is one, "none" none.
func withExpert(est *pose.Estimator, model, path string) (*pose.Estimator, error) {
	if path == "none" {
		return est, nil
	}
	if path == "" {
		path = strings.TrimSuffix(model, ".gllim") + "-profile.gllim"
		if _, err := os.Stat(path); err != nil || path == model {
			return est, nil
		}
	}
	x, err := gllim.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-expert: %w", err)
	}
	xp, err := pose.ExpertOf(x)
	if err != nil {
		return nil, fmt.Errorf("-expert: %s: %w", path, err)
	}
	return est.WithExpert(xp)
}

// predictor estimates the faces of images and prints them as JSON lines.
type predictor struct {
	est   *pose.Estimator
	wk    *pose.Worker
	det   *detect.Detector
	calib detect.Calibration
	fixed *feature.Box // the face's box, instead of detecting
	enc   *json.Encoder
}

// image prints the faces of the image at path and returns the image, the
// boxes the estimates started from and the estimates.
func (p *predictor) image(path string) (*image.Gray, []detect.Face, []pose.Result, error) {
	img, err := dataset.LoadGray(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var starts []detect.Face
	if p.fixed != nil {
		starts = []detect.Face{{Box: *p.fixed}}
	} else {
		starts = p.det.Detect(img)
	}
	var results []pose.Result
	for i, f := range starts {
		box := f.Box
		if p.fixed == nil {
			box = p.calib.Apply(f.Box)
		}
		r := p.wk.Estimate(img, box)
		results = append(results, r)
		out := faceJSON{Image: path, Face: i, Box: corners(r.Box), Score: f.Score, Iterations: r.Iterations}
		if p.fixed == nil {
			c := corners(f.Box)
			out.Detected = c[:]
		}
		for a, dst := range [][2]**float64{{&out.Yaw, &out.YawStd}, {&out.Pitch, &out.PitchStd}, {&out.Roll, &out.RollStd}} {
			if p.est.HasAngle(a) {
				v, s := round2(r.Angles[a]), round2(r.Std[a])
				*dst[0], *dst[1] = &v, &s
			}
		}
		if err := p.enc.Encode(out); err != nil {
			return nil, nil, nil, err
		}
	}
	return img, starts, results, nil
}

// errNoFace: the detector found no face in an image (exit status 3, so that
// a script tells it from a broken model or image).
var errNoFace = errors.New("no face found")

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func corners(b feature.Box) [4]float64 {
	return [4]float64{round2(b.X), round2(b.Y), round2(b.X + b.W), round2(b.Y + b.H)}
}

func parseBox(s string) (feature.Box, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return feature.Box{}, fmt.Errorf("%w: -box %q: want x,y,w,h", errUsage, s)
	}
	var v [4]float64
	for i := range f {
		x, err := strconv.ParseFloat(strings.TrimSpace(f[i]), 64)
		if err != nil {
			return feature.Box{}, fmt.Errorf("%w: -box %q: %q is not a number", errUsage, s, f[i])
		}
		v[i] = x
	}
	b := feature.Box{X: v[0], Y: v[1], W: v[2], H: v[3]}
	if !b.Valid() {
		return b, fmt.Errorf("%w: -box %q has no area", errUsage, s)
	}
	return b, nil
}

// drawResults writes img with the detected boxes (red), the refined boxes
// (green) and each pose as 3-D axes from the box centre (infer/annotate).
func drawResults(path string, img *image.Gray, starts []detect.Face, results []pose.Result, detected bool) error {
	out := annotate.Grey(nil, img)
	faces := make([]annotate.Face, len(results))
	for i, r := range results {
		if detected {
			annotate.Rect(out, starts[i].Box, color.RGBA{220, 30, 30, 255})
		}
		faces[i] = annotate.Face{Box: r.Box, Angles: r.Angles, Has: [3]bool{true, true, true}}
	}
	annotate.Faces(out, faces)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
