package main

import (
	"io"
	"log/slog"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/pipeline"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/attention"
	"github.com/edgepose/posed/pipeline/control"
	"github.com/edgepose/posed/pipeline/frame"
	"github.com/edgepose/posed/pipeline/neutral"
	"github.com/edgepose/posed/pipeline/web"
	"github.com/edgepose/posed/pipeline/zones"
)

// parts is posed built from a configuration, wired and not started: the
// stages of a frame after the tracker, in their order, what commands
// change, and the frame path. The start (run), -check-config and every
// reload (checkStart) build it here and nowhere else, so that a reload
// refuses what a start would fail on.
type parts struct {
	// stages run on every processed frame, in this order.
	stages    []frame.Stage
	neutral   *neutral.Pose
	attention *attention.Stage
	control   *control.Commands

	// The frame path (loadTracker): the model loads last, once the
	// publisher listens for commands.
	tracker *track.Tracker
	model   *gllim.Model // its description: outputs, calibration, training
}

// newParts builds the stages of cfg: zones, neutral pose, attention and
// the live view (view: nil for one that nobody watches), and the control
// that commands drive, with reload as set/reload's action (nil: refused).
// log hears what the stages report (a damaged state file). Nothing is
// started; stop ends a measurement under way.
func newParts(cfg config.Config, view *web.View, log *slog.Logger, reload func() error) (*parts, error) {
	att, err := assemble.Attention(cfg.Attention)
	if err != nil {
		return nil, err // it names the attention block
	}
	d := &parts{neutral: neutral.New(cfg.StateDir, assemble.NeutralOptions(cfg.Zero), log), attention: att}
	act := control.Actions{Reload: reload}
	if cfg.Attention.Profile == attention.ProfileDriver {
		act.Speed = att.SetSpeed
	}
	d.control = control.New(cfg.StateDir, view, d.neutral, act, log)
	d.stages = []frame.Stage{zones.New(assemble.ZoneOptions(cfg.Zones, cfg.Primary)), d.neutral, pipeline.Attention(d.attention)}
	if view != nil {
		d.stages = append(d.stages, view)
	}
	return d, nil
}

// loadTracker loads the model of cfg and builds the frame path
// (pipeline/assemble): detectors, network, tracker.
func (d *parts) loadTracker(cfg config.Config) error {
	est, m, err := assemble.Estimator(cfg.Model, cfg.Research)
	if err != nil {
		return err
	}
	d.tracker, err = assemble.Tracker(cfg, est, detect.CalibrationOf(m.Calibration))
	if err != nil {
		return err
	}
	d.model = m
	return nil
}

// stop ends what the stages have under way (a neutral pose measurement).
func (d *parts) stop() { d.neutral.Stop() }

// discard is a logger for parts built only to be checked.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
