// Package assemble turns posed's configuration into its parts: the pose
// model with its profile expert, the cascades, the face network and the
// tracker that runs them on each frame, and the stages' options. It is the
// one place where a configuration key becomes a part's option (YAML →
// config → assemble → part): config is data and its own checks, and knows
// no part; the parts know their own options only. The daemon (its start,
// -check-config and every reload) and posectl's measurements assemble
// here, so that what posectl measures is what posed publishes.
package assemble

import (
	"fmt"
	"image"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/pipeline/attention"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/zones"
)

// PoseSettings are the refinement settings of the model and research
// blocks.
func PoseSettings(m config.Model, r config.Research) pose.Settings {
	return pose.Settings{MaxIter: m.Iterations, Eps: r.Eps, Gain: r.Gain, Average: m.Average, Mirror: r.Mirror, Temperature: r.Temperature}
}

// DetectParams are the cascades' parameters of the detect block and
// research.turned_stages (the rest as detect.DefaultParams).
func DetectParams(d config.Detect, r config.Research) detect.Params {
	p := detect.DefaultParams()
	p.MinSize, p.MaxSize, p.Shift, p.Scale, p.IoU, p.MinScore = d.MinSize, d.MaxSize, d.Shift, d.Scale, d.IoU, d.MinScore
	p.Nested = d.Nested
	p.Turned, p.TurnedScore, p.TurnedStages = d.Turned, d.TurnedScore, r.TurnedStages
	return p
}

// NetworkParams are the face network's settings of the detect block.
func NetworkParams(d config.Detect) detect.NetworkParams {
	p := detect.NetworkParams{VerifyScore: d.VerifyScore, ScanScore: d.ScanScore, ScanShrink: d.ScanShrink, ScanTiles: d.ScanTiles, ScanLooks: d.ScanLooks, ConfirmScore: d.Confirm, ConfirmSure: d.ConfirmSure}
	if d.ConfirmHead && d.Confirm > 0 {
		p.ConfirmHead = detect.DefaultLookHead()
	}
	return p
}

// TrackConfig is the tracker's configuration: the track keys, detect.every
// and detect.scan_every, source.fps and zones.detect (RejectFor, which no
// key sets, as track.DefaultConfig).
func TrackConfig(c config.Config) track.Config {
	t := c.Track
	tc := track.Config{MaxFaces: t.MaxFaces, Every: c.Detect.Every, LostAfter: t.LostAfter, MinIoU: t.MinIoU, Smoothing: t.Smoothing,
		MaxStd: t.MaxStd, StartStd: t.StartStd, Unread: t.Unread, UnreadScore: t.UnreadScore, RecheckStd: t.RecheckStd, RecheckTurn: t.RecheckTurn,
		TurnNoise: t.TurnNoise, White: t.White, LandmarkEvery: t.LandmarkEvery, Anchored: t.Anchored, RefineEvery: t.RefineEvery,
		ScanEvery: c.Detect.ScanEvery, RejectFor: track.DefaultConfig().RejectFor, HoldUnsure: c.Detect.ConfirmHold,
		ConfirmEvery: c.Detect.ConfirmEvery}
	if fps := c.Source.FPS; fps > 0 {
		tc.Interval = time.Duration(float64(time.Second) / fps)
	}
	if r := c.Zones.Detect; r != nil {
		tc.Region = image.Rect(int(r[0]), int(r[1]), int(math.Ceil(r[2])), int(math.Ceil(r[3])))
	}
	return tc
}

// Problems are the problems of c that its parts find, named by key, for
// config's Validate, Parse and Load (config.Check): the cascades' and the
// face network's settings (the network's only where it runs), and a
// temperature the model's mixture cannot take.
func Problems(c config.Config) []string {
	var out []string
	d := c.Detect
	for _, q := range DetectParams(d, c.Research).Problems() {
		key := "detect." + q.Field
		if q.Field == "turned_stages" {
			key = "research.turned_stages"
		}
		out = append(out, key+": "+q.Why)
	}
	if d.Verify || d.ScanEvery > 0 {
		for _, q := range NetworkParams(d).Problems() {
			out = append(out, "detect."+q.Field+": "+q.Why)
		}
	}
	if t := c.Research.Temperature; t != 0 && !(t >= 1 && t <= gllim.MaxTemperature) {
		out = append(out, fmt.Sprintf("research.temperature: %g is not 0 (the model's) or in [1, %g]", t, float64(gllim.MaxTemperature)))
	}
	return out
}

// Estimator loads the model of cfg and, where there is one, its profile
// expert; it returns the estimator and the model's description (its
// calibration, outputs and training, without its weights). Errors name
// the field.
//
// The model file's bytes and its float64 weights are handed back to the
// system as soon as the float32 forward model is built, and before the
// expert is read: on a small board the peak matters.
func Estimator(cfg config.Model, r config.Research) (*pose.Estimator, *gllim.Model, error) {
	m, err := gllim.ReadFile(cfg.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("model.path: %w", err)
	}
	debug.FreeOSMemory()
	est, err := pose.New(m, PoseSettings(cfg, r))
	if err != nil {
		return nil, nil, fmt.Errorf("model.path: %s: %w", cfg.Path, err)
	}
	m = m.Description()
	debug.FreeOSMemory()
	if p := cfg.ExpertPath(); p != "" {
		x, err := gllim.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("model.expert: %w", err)
		}
		debug.FreeOSMemory()
		xp, err := pose.ExpertOf(x)
		if err == nil {
			est, err = est.WithExpert(xp)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("model.expert: %s: %w", p, err)
		}
	}
	if p := cfg.LandmarksPath(); p != "" {
		l, err := gllim.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("model.landmarks: %w", err)
		}
		if est, err = est.WithLandmarks(l); err != nil {
			return nil, nil, fmt.Errorf("model.landmarks: %s: %w", p, err)
		}
	}
	return est, m, nil
}

// Detector is the cascades of the detect block.
func Detector(d config.Detect, r config.Research) (*detect.Detector, error) {
	det, err := detect.New(DetectParams(d, r))
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	return det, nil
}

// Net is the face network with its embedded weights, built once and
// shared (read-only) by every tracker of the process.
var Net = sync.OnceValue(func() *yunet.Net { return yunet.New(yunet.Default()) })

// Tracker is the frame path of cfg around an estimator and the
// calibration of its model's boxes (detect.CalibrationOf the model's
// description's): the cascades, the face network where detect.verify or
// detect.scan_every ask for it, the tracker's settings. Each call makes a
// tracker of its own (a tracker is not safe for concurrent use).
func Tracker(cfg config.Config, est *pose.Estimator, calib detect.Calibration) (*track.Tracker, error) {
	det, err := Detector(cfg.Detect, cfg.Research)
	if err != nil {
		return nil, err
	}
	var opts []track.Option
	wk := est.NewWorker()
	if d := cfg.Detect; d.Verify || d.ScanEvery > 0 || d.Confirm > 0 || est.HasLandmarks() {
		n, err := detect.NewNetwork(Net(), NetworkParams(d))
		if err != nil {
			return nil, fmt.Errorf("detect: %w", err)
		}
		if d.Verify {
			opts = append(opts, track.WithVerifier(n))
		}
		if d.ScanEvery > 0 {
			opts = append(opts, track.WithScanner(n))
		}
		if d.Confirm > 0 {
			opts = append(opts, track.WithConfirmer(n))
		}
		if est.HasLandmarks() {
			opts = append(opts, track.WithLandmarks(n, wk))
		}
	}
	return track.New(TrackConfig(cfg), det, calib, wk, opts...), nil
}

// AttentionOptions are the attention stage's options from the
// configuration's attention block: its
// targets, and the built-in "camera" (a cone of attention.camera degrees
// around looking into the lens) unless that radius is 0; the configured
// targets win over it where they hold the face.
func AttentionOptions(a config.Attention) attention.Options {
	d, e := a.Driver, a.Engagement
	o := attention.Options{FOV: a.FOV, Margin: a.Margin, Dwell: a.Dwell, MaxStd: a.MaxStd, Doubt: a.Doubt, Profile: a.Profile,
		Driver: attention.DriverRules{Attending: d.Attending, Long: d.Long, Shared: d.Shared, Window: d.Window, Unresponsive: d.Unresponsive,
			Unmonitored: d.Unmonitored, MinSpeed: d.MinSpeed, SpeedTimeout: d.SpeedTimeout},
		Engagement: attention.EngagementRules{Targets: e.Targets, On: e.On, Off: e.Off}}
	if a.Camera > 0 {
		o.Targets = append(o.Targets, attention.Target{Name: attention.CameraTarget, Frame: attention.Ray, Radius: a.Camera, Fallback: true})
	}
	for name, t := range a.Targets {
		tg := attention.Target{Name: name}
		switch t.Frame {
		case "camera":
			tg.Frame = attention.Camera
		case "ray":
			tg.Frame = attention.Ray
		}
		if t.Cone != nil {
			tg.Yaw[0], tg.Pitch[0], tg.Radius = t.Cone[0], t.Cone[1], t.Cone[2]
		} else {
			tg.Yaw, tg.Pitch = [2]float64{t.Yaw[0], t.Yaw[1]}, [2]float64{t.Pitch[0], t.Pitch[1]}
		}
		o.Targets = append(o.Targets, tg)
	}
	return o
}

// Attention is the attention stage of the configuration's attention block.
func Attention(a config.Attention) (*attention.Stage, error) {
	return attention.New(AttentionOptions(a))
}

// ZoneOptions are the zoning's options from the configuration's zones and
// primary blocks.
func ZoneOptions(z config.Zones, p config.Primary) zones.Options {
	o := zones.Options{Named: map[string][4]float64{}, Mode: p.Mode, Zone: p.Zone}
	for name, r := range z.Named {
		o.Named[name] = [4]float64{r[0], r[1], r[2], r[3]}
	}
	if len(p.Point) == 2 {
		o.Point = [2]float64{p.Point[0], p.Point[1]}
	}
	return o
}

// NeutralOptions are the neutral pose's options from the zero block.
func NeutralOptions(z config.Zero) neutral.Options {
	return neutral.Options{Yaw: z.Yaw, Pitch: z.Pitch, Roll: z.Roll, Seconds: z.Seconds, Learn: z.Learn, Forget: z.Forget}
}
