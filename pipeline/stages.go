package pipeline

import (
	"github.com/edgepose/posed/pipeline/attention"
	"github.com/edgepose/posed/pipeline/frame"
)

// Attention makes the attention stage a frame stage: it decides each
// face's target, dwell and attention, runs the profile's rules, and leaves
// the events and the changed summary in the frame for the loop to publish;
// as frames stop it ends what was in progress (frame.Idler). The stage
// itself knows faces and time only, not frames.
func Attention(s *attention.Stage) frame.Stage { return attentionStage{s} }

type attentionStage struct{ s *attention.Stage }

func (a attentionStage) Frame(f *frame.Frame) {
	w, h := f.Size()
	a.s.Apply(f.Faces, w, h, f.Time, f.Primary)
	a.report(f)
}

// Idle ends what was in progress as frames stop (frame.Paused, Offline,
// Stopped: every event ends and every face is forgotten), or, as the loop
// starts, says the summary as it is.
func (a attentionStage) Idle(f *frame.Frame, why string) {
	if why != frame.Starting {
		a.s.Suspend(f.Time, why)
	}
	a.report(f)
}

// report puts the last Apply's or Suspend's events and the summary, if it
// changed, into f.
func (a attentionStage) report(f *frame.Frame) {
	f.Events = a.s.Events()
	if m, changed := a.s.Summary(f.Neutral); changed {
		f.Attention = m
	}
}
