package attention

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/metrics"
)

// counters are the stage's figures for /metrics, written by the frame
// loop and read by the HTTP server: the primary face's time per target
// and the events started, by kind.
type counters struct {
	names  []string        // target names, then "none" and "unknown"
	micros []atomic.Uint64 // time per names[i], µs
	events [len(eventKinds)]atomic.Uint64
}

// eventKinds are every event kind, in /metrics's order.
var eventKinds = [...]string{message.EventLongDistraction, message.EventTimeSharing, message.EventUnresponsive,
	message.EventUnmonitored, message.EventEngagement}

// maxFrameGap bounds the time one frame counts for: a longer gap between
// two frames (a pause, a camera that stalled) is not time spent looking.
const maxFrameGap = time.Second

func (c *counters) init(targets []string) {
	c.names = append(append([]string(nil), targets...), "none", StateUnknown)
	c.micros = make([]atomic.Uint64, len(c.names))
}

// frame counts a frame at now (the one before at last; zero: none) whose
// primary face's attention is m (nil: none counted), and its events.
func (c *counters) frame(m *message.Attention, evs []message.Event, last, now time.Time) {
	for i := range evs {
		if evs[i].Phase != "start" {
			continue
		}
		for k, kind := range eventKinds {
			if kind == evs[i].Kind {
				c.events[k].Add(1)
			}
		}
	}
	dt := now.Sub(last)
	if m == nil || last.IsZero() || dt <= 0 || dt > maxFrameGap || !m.Track.Set {
		return
	}
	i := len(c.names) - 1 // unknown
	switch {
	case m.State == StateUnknown:
	case !m.Target.Known:
		i = len(c.names) - 2
	default:
		for j, n := range c.names[:len(c.names)-2] {
			if n == m.Target.Name {
				i = j
			}
		}
	}
	c.micros[i].Add(uint64(dt.Microseconds()))
}

// TargetSeconds is the primary face's time per target (and "none",
// "unknown"), in seconds; EventCounts the events started per kind. Safe
// for use beside the frame loop.
func (s *Stage) TargetSeconds() []metrics.Figure {
	if s == nil {
		return nil
	}
	out := make([]metrics.Figure, len(s.counters.names))
	for i, n := range s.counters.names {
		out[i] = metrics.Figure{Label: n, Value: float64(s.counters.micros[i].Load()) / 1e6}
	}
	return out
}

// EventCounts: see TargetSeconds.
func (s *Stage) EventCounts() []metrics.Figure {
	if s == nil {
		return nil
	}
	out := make([]metrics.Figure, len(eventKinds))
	for i, k := range eventKinds {
		out[i] = metrics.Figure{Label: k, Value: float64(s.counters.events[i].Load())}
	}
	return out
}

// speedGate is the vehicle's speed from set/speed, written by the command
// goroutine and read by the frame loop.
type speedGate struct {
	bits atomic.Uint64 // math.Float64bits(km/h)
	at   atomic.Int64  // unix ns of the wall clock when it came; 0: never
	// The frame loop's: the warnings are off since the speed fell below
	// MinSpeed − SpeedMargin, and stay off until it reaches MinSpeed (the
	// hysteresis: a speed hovering at MinSpeed makes one event, not one
	// per crossing); known: there is a state to keep.
	off, known bool
}

// SpeedMargin is the hysteresis of the speed gate (km/h): the warnings
// come on at min_speed and go off again only below min_speed less this.
const SpeedMargin = 5

// SetSpeed takes the vehicle's speed in km/h (set/speed).
func (s *Stage) SetSpeed(kmh float64) error {
	if s == nil {
		return nil
	}
	if !(kmh >= 0 && kmh <= 500) {
		return errSpeed
	}
	s.speed.bits.Store(math.Float64bits(kmh))
	s.speed.at.Store(s.o.Clock.Now().UnixNano())
	return nil
}

// gated reports whether the driver's warnings are off at wall time now:
// a fresh speed below MinSpeed, or below it since it fell under MinSpeed −
// SpeedMargin (the frame loop calls it).
func (g *speedGate) gated(r DriverRules, now time.Time) bool {
	at := g.at.Load()
	if r.MinSpeed <= 0 || at == 0 || now.Sub(time.Unix(0, at)) > r.SpeedTimeout {
		g.known = false // no speed: the warnings are on
		return false
	}
	v := math.Float64frombits(g.bits.Load())
	switch {
	case !g.known:
		g.off, g.known = v < r.MinSpeed, true
	case v >= r.MinSpeed:
		g.off = false
	case v < r.MinSpeed-SpeedMargin:
		g.off = true
	}
	return g.off
}

// errSpeed: set/speed got something that is not a speed.
var errSpeed = errors.New("a speed is a number of km/h from 0 to 500")
