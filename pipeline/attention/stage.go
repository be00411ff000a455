package attention

import "github.com/edgepose/posed/pipeline/frame"

// Frame decides each face's target, dwell and attention, runs the
// profile's rules, and leaves the events and the changed summary in the
// frame for the loop to publish (frame.Stage).
func (s *Stage) Frame(f *frame.Frame) {
	w, h := f.Size()
	s.Apply(f.Faces, w, h, f.Time, f.Primary)
	s.report(f)
}

// Idle ends what was in progress as frames stop (frame.Paused, Offline,
// Stopped: every event ends and every face is forgotten), or, as the loop
// starts, says the summary as it is (frame.Idler).
func (s *Stage) Idle(f *frame.Frame, why string) {
	if why != frame.Starting {
		s.Suspend(f.Time, why)
	}
	s.report(f)
}

// report puts the last Apply's or Suspend's events and the summary, if it
// changed, into f.
func (s *Stage) report(f *frame.Frame) {
	f.Events = s.Events()
	if m, changed := s.Summary(f.Neutral); changed {
		f.Attention = m
	}
}
