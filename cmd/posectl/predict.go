package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/annotate"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/train/dataset"
)

// faceJSON is what predict prints per face.
type faceJSON struct {
	Image      string      `json:"image"`
	Face       int         `json:"face"`
	Detected   []float64   `json:"detected_box,omitempty"` // -box: the box given
	Box        [4]float64  `json:"box"`                    // refined [x1,y1,x2,y2], as posed publishes it
	Score      float64     `json:"score,omitempty"`
	View       string      `json:"view,omitempty"` // the detection's view, as posed publishes it
	Yaw        message.Num `json:"yaw,omitzero"`
	Pitch      message.Num `json:"pitch,omitzero"`
	Roll       message.Num `json:"roll,omitzero"`
	YawStd     message.Num `json:"yaw_std,omitzero"`
	PitchStd   message.Num `json:"pitch_std,omitzero"`
	RollStd    message.Num `json:"roll_std,omitzero"`
	Iterations int         `json:"iterations"`
}

func runPredict(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	var df detectFlags
	var rf refineFlags
	df.register(fs, 40)
	rf.register(fs)
	modelPath := fs.String("model", "models/default.gllim", "model file")
	expertPath := fs.String("expert", "", "the model's profile expert (default: MODEL-profile.gllim beside the model if there is one; none: without)")
	configPath := fs.String("config", "", "the daemon's configuration whose frame path finds and estimates the faces (its model keys give way to -model and -expert; -min-size, -det-score, -iterations and -eps, where given, override it); default: posed's defaults")
	boxFlag := fs.String("box", "", "x,y,w,h: estimate from this box instead of running the daemon's frame path")
	drawPath := fs.String("draw", "", "write a PNG with the faces' boxes and their pose as 3-D axes (with -box, the box given in red) (one image only)")
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	p := predictor{enc: json.NewEncoder(stdout)}
	if *boxFlag != "" {
		b, err := parseBox(*boxFlag)
		if err != nil {
			return err
		}
		p.fixed = &b
	}
	cfg := config.Default()
	if *configPath != "" {
		if cfg, err = config.Load(*configPath, assemble.Problems); err != nil {
			return fmt.Errorf("-config: %w", err)
		}
	}
	if set["iterations"] || p.fixed != nil {
		cfg.Model.Iterations = rf.s.MaxIter
	}
	if set["eps"] || p.fixed != nil {
		cfg.Research.Eps = rf.s.Eps
	}
	est, m, err := estimator(cfg.Model, cfg.Research, *modelPath, *expertPath)
	if err != nil {
		return err
	}
	p.est, p.iters = est, cfg.Model.Iterations
	if p.fixed != nil {
		p.wk = est.NewWorker()
	} else {
		if set["min-size"] {
			cfg.Detect.MinSize = df.p.MinSize
		}
		if set["det-score"] {
			cfg.Detect.MinScore = df.p.MinScore
		}
		if p.frames, err = assemble.Tracker(cfg, est, detect.CalibrationOf(m.Calibration)); err != nil {
			return err
		}
		df.p.MinSize = cfg.Detect.MinSize
	}
	var faceless []string
	for _, path := range images {
		img, starts, results, err := p.image(path)
		if err != nil {
			return err
		}
		if len(results) == 0 {
			faceless = append(faceless, path)
		}
		if *drawPath != "" {
			if err := drawResults(*drawPath, img, starts, results); err != nil {
				return err
			}
		}
	}
	if len(faceless) > 0 {
		return fmt.Errorf("%w in %s (of %d images): give the face's box with -box x,y,w,h, or try a smaller -min-size (now %d px)",
			errNoFace, strings.Join(faceless, ", "), len(images), df.p.MinSize)
	}
	return nil
}

// estimator is assemble.Estimator — the model and its profile expert as posed
// loads them — for posectl's -model and -expert (expert: "" beside the
// model, "none", or a file) with m's other settings.
func estimator(m config.Model, r config.Research, path, expert string) (*pose.Estimator, *gllim.Model, error) {
	m.Path, m.Expert = path, expert
	est, desc, err := assemble.Estimator(m, r)
	if err != nil {
		return nil, nil, fmt.Errorf("-model: %w", err)
	}
	return est, desc, nil
}

// predictor estimates the faces of images and prints them as JSON lines:
// by the daemon's frame path (frames), each image the first frame of a
// scene, or from a given box (fixed).
type predictor struct {
	est    *pose.Estimator
	frames *track.Tracker
	wk     *pose.Worker
	fixed  *feature.Box
	iters  int // the predictions per face
	enc    *json.Encoder
}

// image prints the faces of the image at path and returns the image, the
// boxes given (-box) and the faces.
func (p *predictor) image(path string) (*image.Gray, []feature.Box, []track.Face, error) {
	img, err := dataset.LoadGray(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var given []feature.Box
	var faces []track.Face
	if p.fixed != nil {
		given = []feature.Box{*p.fixed}
		r := p.wk.Estimate(img, *p.fixed)
		f := track.Face{Box: r.Box, Angles: r.Angles, Std: r.Std}
		for a := range f.Has {
			f.Has[a] = p.est.HasAngle(a)
		}
		faces = []track.Face{f}
	} else {
		p.frames.Reset()
		faces = slices.Clone(p.frames.Process(img))
	}
	for i, f := range faces {
		m := f.Message()
		m.Round()
		out := faceJSON{Image: path, Face: i, Box: m.Box, Score: m.Score, Iterations: p.iters,
			Yaw: m.Yaw, Pitch: m.Pitch, Roll: m.Roll, YawStd: m.YawStd, PitchStd: m.PitchStd, RollStd: m.RollStd}
		if p.fixed != nil {
			b := *p.fixed
			out.Detected = []float64{message.Hundredths(b.X), message.Hundredths(b.Y), message.Hundredths(b.X + b.W), message.Hundredths(b.Y + b.H)}
		} else {
			out.View = m.View
		}
		if err := p.enc.Encode(out); err != nil {
			return nil, nil, nil, err
		}
	}
	return img, given, faces, nil
}

// errNoFace: the detector found no face in an image (exit status 3, so that
// a script tells it from a broken model or image).
var errNoFace = errors.New("no face found")

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

// drawResults writes img with the boxes given (red), the faces' boxes and
// each pose as 3-D axes from the box centre (infer/annotate).
func drawResults(path string, img *image.Gray, given []feature.Box, faces []track.Face) error {
	out := annotate.Grey(nil, img)
	af := make([]annotate.Face, len(faces))
	for _, b := range given {
		annotate.Rect(out, b, color.RGBA{220, 30, 30, 255})
	}
	for i, f := range faces {
		af[i] = annotate.Face{Box: f.Box, Angles: f.Angles, Has: f.Has}
	}
	annotate.Faces(out, af)
	return writePNG(path, out)
}
