// Package metrics counts what posed's frame loop does: frames, faces, the
// time of each stage, the camera's and the broker's health. It writes them
// in the Prometheus text format (with the Go runtime's and the process's
// own figures, read from /proc) and says whether frames flow (/healthz).
package metrics

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics are the daemon's counters, exposed in the Prometheus text format
// on /metrics, with a health check on /healthz.
type Metrics struct {
	FramesIn, FramesProcessed, FramesDropped, FramesBad, Faces atomic.Uint64
	// Refused: detections that started no face (track.start_std);
	// Unconfirmed: new faces the network's close look did not confirm
	// (detect.confirm, confirm_sure).
	Refused, Unconfirmed atomic.Uint64
	CameraOnline         atomic.Bool
	CameraErr            atomic.Value         // string: why the camera is offline
	LastFrame            atomic.Int64         // unix nanoseconds of the last frame taken: processed, or skipped while paused
	Paused               atomic.Bool          // the privacy switch is off: frames are taken and skipped
	Stages               [numStages]Histogram // by Stage
	Started              time.Time
	// The figures other parts keep, read when /metrics is.
	Sources
}

// Sources are the figures other parts keep, each read when /metrics is;
// nil: not written.
type Sources struct {
	MQTT    func() (published, dropped uint64, connected bool)
	MQTTErr func() string // why the broker is not connected ("" if it is)
	// Events are the attention events waiting for the broker and those
	// the bound dropped (publish.Publisher.EventsHeld, EventsDropped).
	Events func() (held int, dropped uint64)
	// RepliesDropped counts the replies to commands (on the error topic)
	// that could not be sent: the queue full (a flood of commands) or the
	// broker away (publish.Publisher.RepliesDropped).
	RepliesDropped func() uint64
	// AttentionSeconds and AttentionEvents are the attention stage's
	// figures: the primary face's time per target, the events started per
	// kind.
	AttentionSeconds, AttentionEvents func() []Figure
}

// Figure is a labelled value of a metric.
type Figure struct {
	Label string
	Value float64
}

// Stage is a part of a frame's processing whose time is kept.
type Stage int

const (
	StageDetect  Stage = iota // the full-frame detector
	StagePose                 // pose and refinement of the faces
	StageFrame                // the whole of process
	StageLatency              // capture to publish
	numStages
)

// stageNames are the stages' label values in /metrics.
var stageNames = [numStages]string{"detect", "pose", "frame", "latency"}

// New returns zeroed metrics, started now, that read s's figures.
func New(s Sources) *Metrics {
	m := &Metrics{Started: time.Now(), Sources: s}
	for i := range m.Stages {
		m.Stages[i] = newHistogram()
	}
	return m
}

// Histogram counts durations in fixed buckets (seconds).
type Histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64
	sum    float64
	n      uint64
	recent []float64 // last values, for the median in stats
	next   int
	filled bool
}

func newHistogram() Histogram {
	b := []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}
	return Histogram{bounds: b, counts: make([]uint64, len(b)), recent: make([]float64, 256)}
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	v := d.Seconds()
	h.mu.Lock()
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.sum += v
	h.n++
	h.recent[h.next] = v
	h.next = (h.next + 1) % len(h.recent)
	if h.next == 0 {
		h.filled = true
	}
	h.mu.Unlock()
}

// Median is the median of the last 256 values, in seconds.
func (h *Histogram) Median() float64 {
	h.mu.Lock()
	n := h.next
	if h.filled {
		n = len(h.recent)
	}
	v := append([]float64(nil), h.recent[:n]...)
	h.mu.Unlock()
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// WriteText writes every metric in the Prometheus text format (version
// 0.0.4), the runtime's and the process's included.
func (m *Metrics) WriteText(w io.Writer, version string) {
	c := func(name, help string, v uint64) { writeMetric(w, name, help, "counter", float64(v)) }
	g := func(name, help string, v float64) { writeMetric(w, name, help, "gauge", v) }
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	c("posed_frames_in_total", "Frames delivered by the source.", m.FramesIn.Load())
	c("posed_frames_processed_total", "Frames run through detection and pose.", m.FramesProcessed.Load())
	c("posed_frames_dropped_total", "Frames replaced by a newer one before processing.", m.FramesDropped.Load())
	c("posed_frames_bad_total", "Frames of the wrong size or undecodable.", m.FramesBad.Load())
	c("posed_faces_total", "Faces reported, summed over frames.", m.Faces.Load())
	c("posed_detections_refused_total", "Detections that started no face: the model's yaw uncertainty from the box was above track.start_std.", m.Refused.Load())
	c("posed_detections_unconfirmed_total", "Faces the face network's close look at the model's box did not confirm (detect.confirm): new faces refused on their first frame or ended by a second or third look (detect.confirm_sure), and tracked faces ended by a look again (detect.confirm_every).", m.Unconfirmed.Load())
	g("posed_camera_online", "1 while the frame source delivers.", b2f(m.CameraOnline.Load()))
	if m.MQTT != nil {
		p, d, conn := m.MQTT()
		c("posed_mqtt_published_total", "MQTT messages published.", p)
		c("posed_mqtt_dropped_total", "MQTT messages dropped (disconnected, queue full, rate cap).", d)
		g("posed_mqtt_connected", "1 while connected to the broker.", b2f(conn))
	}
	if m.Events != nil {
		held, dropped := m.Events()
		g("posed_mqtt_events_held", "Attention events waiting for the broker to take them (kept while it is away).", float64(held))
		c("posed_mqtt_events_dropped_total", "Attention events dropped: more than the hold keeps waited for the broker (with the end of any start dropped).", dropped)
	}
	if m.RepliesDropped != nil {
		c("posed_mqtt_replies_dropped_total", "Replies to commands (on the error topic) not sent: the queue full (a flood of commands) or the broker away.", m.RepliesDropped())
	}
	g("posed_uptime_seconds", "Seconds since start.", time.Since(m.Started).Seconds())
	if m.AttentionSeconds != nil {
		writeLabelled(w, "posed_attention_seconds_total", "Seconds the primary face looked at each target (none: at no target; unknown: its direction was not trusted).", "target", m.AttentionSeconds())
	}
	if m.AttentionEvents != nil {
		writeLabelled(w, "posed_attention_events_total", "Attention events started, by kind.", "kind", m.AttentionEvents())
	}
	fmt.Fprintf(w, "# HELP posed_stage_seconds Time per frame spent in each stage (latency: capture to publish).\n# TYPE posed_stage_seconds histogram\n")
	for st, s := range stageNames {
		h := &m.Stages[st]
		h.mu.Lock()
		for i, b := range h.bounds {
			fmt.Fprintf(w, "posed_stage_seconds_bucket{stage=%q,le=\"%g\"} %d\n", s, b, h.counts[i])
		}
		fmt.Fprintf(w, "posed_stage_seconds_bucket{stage=%q,le=\"+Inf\"} %d\n", s, h.n)
		fmt.Fprintf(w, "posed_stage_seconds_sum{stage=%q} %g\nposed_stage_seconds_count{stage=%q} %d\n", s, h.sum, s, h.n)
		h.mu.Unlock()
	}
	writeRuntime(w, version)
	writeProcess(w)
}

// writeLabelled writes a counter with one label.
func writeLabelled(w io.Writer, name, help, label string, figs []Figure) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	for _, f := range figs {
		fmt.Fprintf(w, "%s{%s=%q} %g\n", name, label, f.Label, f.Value)
	}
}

// Healthy reports whether frames flow: one was processed in the last
// maxAge.
func (m *Metrics) Healthy(maxAge time.Duration) (bool, string) {
	if why, _ := m.CameraErr.Load().(string); why != "" && !m.CameraOnline.Load() {
		return false, "camera offline: " + why
	}
	last := m.LastFrame.Load()
	if last == 0 {
		return false, "no frame processed yet"
	}
	if age := time.Since(time.Unix(0, last)); age > maxAge {
		return false, fmt.Sprintf("last frame %v ago", age.Round(time.Millisecond))
	}
	if m.Paused.Load() {
		// Paused is healthy: the camera delivers and the loop turns; no
		// frame is processed by the user's choice.
		return true, fmt.Sprintf("ok: paused (detection switched off), frames arriving, last %v ago", time.Since(time.Unix(0, last)).Round(time.Millisecond))
	}
	return true, fmt.Sprintf("ok: %d frames processed, last %v ago", m.FramesProcessed.Load(), time.Since(time.Unix(0, last)).Round(time.Millisecond))
}
