package attention

import (
	"time"

	"github.com/edgepose/posed/message"
)

// DriverRules are the driver profile's thresholds (config.DriverRules;
// docs/internals.md, "Attention": Euro NCAP's driver engagement assessment
// protocol, the EU's driver distraction warning regulation (ADDW,
// Delegated Regulation (EU) 2023/2590), openpilot).
type DriverRules struct {
	Attending    []string      // targets that count as attending to driving
	Long         time.Duration // away this long: a long distraction
	Shared       time.Duration // glances away summing to this…
	Window       time.Duration // …within this window: time sharing
	Unresponsive time.Duration // away this long without a break
	Unmonitored  time.Duration // attention unknown this long
	MinSpeed     float64       // km/h; below it no event starts (0: never)
	SpeedTimeout time.Duration // a speed older than this is forgotten
}

// Driver states (message.Attention.State, message.Face.Attention).
const (
	StateAttentive    = "attentive"    // on a target of Attending
	StateGlancing     = "glancing"     // away for less than Long
	StateDistracted   = "distracted"   // away for Long or more
	StateUnresponsive = "unresponsive" // away for Unresponsive or more
)

// The driver's events, indices into driver.active.
const (
	evLong = iota
	evSharing
	evUnresponsive
	evUnmonitored
	numDriverEvents
)

var driverKinds = [numDriverEvents]string{message.EventLongDistraction, message.EventTimeSharing, message.EventUnresponsive, message.EventUnmonitored}

// maxGlances bounds the glances kept for time sharing; beyond it the two
// oldest are joined (the gap between them then counts as away: the error
// is on the side of a warning).
const maxGlances = 256

// glance is a closed interval of the gaze away from the driving targets.
type glance struct{ from, to time.Time }

// driver is the driver profile's state: one person, the primary face,
// whatever its track. While the face is lost or uncertain, the last
// known direction holds: a driver who looked away and whose face then
// went (turned beyond the detector, or out of the frame) is still away,
// and one who was on the road is not counted away.
type driver struct {
	r        DriverRules
	track    uint64
	observed bool // a face was seen since the last reset

	away      bool
	awaySince time.Time

	unknown      bool
	unknownSince time.Time

	active [numDriverEvents]struct {
		on    bool
		at    time.Time // when it started
		since time.Time // when its condition began
	}
	glances    [maxGlances]glance // closed glances, oldest first from head
	head, n    int
	lastTarget message.Label
}

// reset forgets everything (the driver may be someone else after a pause
// or without a camera).
func (d *driver) reset() {
	r := d.r
	*d = driver{r: r}
}

// observe takes the primary face's attention at now: known (on the
// driving task or not, since when) or unknown. It appends the events
// that start or end to evs and returns them.
func (d *driver) observe(evs []message.Event, now time.Time, known, onTask bool, since time.Time, track uint64, target message.Label, gated bool) []message.Event {
	if known {
		d.track, d.observed, d.lastTarget = track, true, target
		if d.unknown {
			d.unknown = false
			evs = d.end(evs, evUnmonitored, now, "monitored")
		}
		switch {
		case onTask && d.away:
			// The gaze came back when the target was first seen.
			d.away = false
			d.addGlance(d.awaySince, since)
			evs = d.end(evs, evUnresponsive, since, "returned")
			evs = d.end(evs, evLong, since, "returned")
		case !onTask && !d.away:
			d.away, d.awaySince = true, since
		}
	} else if !d.unknown {
		d.unknown, d.unknownSince = true, now
	}
	shared, first := d.shared(now)
	if gated {
		for e := range d.active {
			evs = d.end(evs, e, now, "speed")
		}
		return evs
	}
	if d.away {
		away := now.Sub(d.awaySince)
		if away >= d.r.Long {
			evs = d.start(evs, evLong, now, d.awaySince, away)
		}
		if away >= d.r.Unresponsive {
			evs = d.start(evs, evUnresponsive, now, d.awaySince, away)
		}
	}
	switch {
	case shared >= d.r.Shared:
		evs = d.start(evs, evSharing, now, first, shared)
	case d.active[evSharing].on:
		evs = d.end(evs, evSharing, now, "window")
	}
	if d.unknown && now.Sub(d.unknownSince) >= d.r.Unmonitored {
		evs = d.start(evs, evUnmonitored, now, d.unknownSince, now.Sub(d.unknownSince))
	}
	return evs
}

// state is the driver's state at now (known only).
func (d *driver) state(now time.Time) string {
	switch {
	case !d.away:
		return StateAttentive
	case now.Sub(d.awaySince) >= d.r.Unresponsive:
		return StateUnresponsive
	case now.Sub(d.awaySince) >= d.r.Long:
		return StateDistracted
	}
	return StateGlancing
}

// start appends the start of event e, unless it is on.
func (d *driver) start(evs []message.Event, e int, now, since time.Time, dur time.Duration) []message.Event {
	a := &d.active[e]
	if a.on {
		return evs
	}
	a.on, a.at, a.since = true, now, since
	return append(evs, message.Event{Kind: driverKinds[e], Phase: "start", Track: d.track, Time: now, Since: since,
		DurationS: seconds(dur), Target: d.lastTarget})
}

// end appends the end of event e at t (why: what ended it), if it is on.
func (d *driver) end(evs []message.Event, e int, t time.Time, why string) []message.Event {
	a := &d.active[e]
	if !a.on {
		return evs
	}
	a.on = false
	if t.Before(a.at) {
		t = a.at // an end backdated by the dwell never precedes its start
	}
	dur := t.Sub(a.since)
	if e == evSharing {
		dur = t.Sub(a.at)
	}
	return append(evs, message.Event{Kind: driverKinds[e], Phase: "end", Track: d.track, Time: t, Since: a.since,
		DurationS: seconds(dur), Target: d.lastTarget, Why: why})
}

// endAll ends every event in progress at t.
func (d *driver) endAll(evs []message.Event, t time.Time, why string) []message.Event {
	for e := range d.active {
		evs = d.end(evs, e, t, why)
	}
	return evs
}

// activeKinds appends the kinds of the events in progress.
func (d *driver) activeKinds(dst []string) []string {
	for e, a := range d.active {
		if a.on {
			dst = append(dst, driverKinds[e])
		}
	}
	return dst
}

// addGlance records a glance away from from to to.
func (d *driver) addGlance(from, to time.Time) {
	if !to.After(from) {
		return
	}
	if d.n == maxGlances {
		// Join the two oldest.
		next := (d.head + 1) % maxGlances
		d.glances[next].from = d.glances[d.head].from
		d.head, d.n = next, d.n-1
	}
	d.glances[(d.head+d.n)%maxGlances] = glance{from, to}
	d.n++
}

// shared is the time away within the window ending at now (the glances,
// and the current one if away), and when the first of them began; it
// forgets the glances that ended before the window.
func (d *driver) shared(now time.Time) (time.Duration, time.Time) {
	from := now.Add(-d.r.Window)
	for d.n > 0 && !d.glances[d.head].to.After(from) {
		d.head, d.n = (d.head+1)%maxGlances, d.n-1
	}
	var sum time.Duration
	var first time.Time
	add := func(a, b time.Time) {
		if a.Before(from) {
			a = from
		}
		if b.After(a) {
			sum += b.Sub(a)
			if first.IsZero() {
				first = a
			}
		}
	}
	for i := range d.n {
		g := d.glances[(d.head+i)%maxGlances]
		add(g.from, g.to)
	}
	if d.away {
		add(d.awaySince, now)
	}
	return sum, first
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
