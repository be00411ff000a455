package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
)

// Attention events are what a fleet counts: they are not dropped while
// the broker is away, as poses are. Each waits in the publisher's hold,
// in order, until the broker has acknowledged it (QoS 1): a distraction
// that starts in a tunnel reaches the broker when the car is out of it,
// with its own times. The hold is bounded (maxHeldEvents); past it the
// oldest event goes (the next oldest while the oldest is being sent),
// and an _end whose _start went goes too (a consumer
// never gets an _end it cannot pair). Each event has an id of its own
// (the publisher's start and a number), so that a consumer can drop one
// it got twice (QoS 1 may deliver twice). With a state directory the hold
// is kept in a log there (spool.go) at each change, and read back at
// start: the events a stop, a crash or a power cut caught waiting are sent
// by the next run, with their own ids and times, and the events it had
// started and not ended are ended ("why": "restarted") instead of staying
// open for good.

// maxHeldEvents bounds the events that wait for the broker: a driver's
// events come a few a minute, so this is hours of an outage.
const maxHeldEvents = 1000

// heldEvent is an event encoded, and what pairs its start and end; n is
// its number in the spool.
type heldEvent struct {
	Key     string          `json:"key"` // kind/track
	Start   bool            `json:"start"`
	Payload json.RawMessage `json:"event"`
	n       uint64
}

// heldState is what the whole-file hold of earlier versions kept
// (legacyEventsFile): the events waiting, oldest first, and those started
// and not ended (by kind/track, their _start). It is read once, into the
// spool.
type heldState struct {
	Held []heldEvent                `json:"held"`
	Open map[string]json.RawMessage `json:"open"`
}

// maxOpenEvents bounds the events started and not ended that a restart
// ends (a real run has a few: one per face and kind).
const maxOpenEvents = maxHeldEvents

// eventHold is the publisher's queue of events not yet acknowledged.
type eventHold struct {
	mu      sync.Mutex
	q       []heldEvent
	orphans map[string]bool // kind/track whose _start was dropped: its _end goes too
	// dropped counts the events that had to go; warned says the log has
	// told of the dropping since the broker last took an event.
	dropped atomic.Uint64
	warned  bool
	ready   chan struct{} // capacity 1: there are events to send
	boot    int64         // the ids' first part: the publisher's start, unix ms
	seq     atomic.Uint64
	open    map[string]json.RawMessage // kind/track → its _start: started, not ended
	log     *slog.Logger
	sp      *spool // the state directory's log (nil: none)
	nextN   uint64 // the next event's number in the spool
	saveErr bool   // the last write to the spool failed (and was logged)
	// sending: the oldest event is being sent (front to taken or
	// unsent): the bound spares it, and taken removes it.
	sending bool
}

// newEventHold returns a hold for device, with the events its spool in
// dir (a state directory; "" for none) left waiting, and the ends of
// those it left open.
func newEventHold(dir, device string, log *slog.Logger) *eventHold {
	h := &eventHold{orphans: map[string]bool{}, ready: make(chan struct{}, 1), boot: time.Now().UnixMilli(), log: log,
		open: map[string]json.RawMessage{}, nextN: 1}
	if dir == "" {
		return h
	}
	path := filepath.Join(dir, spoolFile)
	h.sp = &spool{path: path, device: device}
	last := h.restore(path, filepath.Join(dir, legacyEventsFile), device)
	// What the last run left open is ended, at the last moment it is
	// known to have run, under an id made from its start's: a restart
	// that cannot write the spool (a read-only directory) ends it again
	// under the same id, which a consumer drops as one it has.
	for _, k := range slices.Sorted(maps.Keys(h.open)) {
		var e message.Event
		if json.Unmarshal(h.open[k], &e) != nil || e.Phase != "start" || e.Kind == "" {
			delete(h.open, k)
			continue
		}
		end := last
		if end.Before(e.Time) {
			end = e.Time
		}
		e.Phase, e.EventType, e.Why, e.ID = "end", e.Kind+"_end", "restarted", e.ID+"-end"
		e.Time, e.DurationS = end.UTC(), math.Round(end.Sub(e.Since).Seconds()*1000)/1000
		if payload, err := json.Marshal(e); err == nil {
			h.q = append(h.q, heldEvent{Key: k, Payload: payload})
		}
		delete(h.open, k)
	}
	for i := range h.q {
		h.q[i].n = h.nextN
		h.nextN++
	}
	h.mu.Lock()
	h.compact()
	h.mu.Unlock()
	if len(h.q) > 0 {
		log.Info("mqtt: attention events the last run left are sent first (waiting, or ended: why restarted)", "events", len(h.q), "file", path)
		signal(h.ready)
	}
	return h
}

// restore reads the spool at path (or, where there is none, the legacy
// file) into the hold, and returns the last moment the run that wrote it
// is known to have run (its last mark of the time or event; the zero time
// if none).
func (h *eventHold) restore(path, legacy, device string) time.Time {
	var last time.Time
	seen := func(payload json.RawMessage) {
		var e message.Event
		if json.Unmarshal(payload, &e) == nil && e.Time.After(last) {
			last = e.Time
		}
	}
	recs, damaged, err := readSpool(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, lerr := regular.ReadFile(legacy)
		if errors.Is(lerr, fs.ErrNotExist) {
			return last
		}
		var st heldState
		if lerr == nil {
			lerr = json.Unmarshal(b, &st)
		}
		if lerr != nil {
			h.log.Warn("mqtt: cannot read the attention events the last run left: they are lost", "file", legacy, "err", lerr)
		} else {
			h.q = st.Held[max(0, len(st.Held)-maxHeldEvents):]
			for k, v := range st.Open {
				h.open[k] = v
			}
			for _, e := range h.q {
				seen(e.Payload)
			}
		}
		os.Remove(legacy) // the spool holds them from now on
		return last
	}
	if err != nil && len(recs) == 0 {
		h.log.Warn("mqtt: cannot read the attention events the last run left: they are lost", "file", path, "err", err)
		return last
	}
	if len(recs) == 0 || recs[0].Op != "device" {
		h.log.Warn("mqtt: the attention events' log the last run left is damaged from its start: its events are lost", "file", path)
		return last
	}
	if recs[0].Device != device {
		to, err := setAside(path, recs[0].Device)
		h.log.Warn("mqtt: the attention events' log in the state directory is another device's: set aside, not published under this one's topics",
			"device", recs[0].Device, "this_device", device, "moved_to", to, "err", err)
		return last
	}
	if damaged {
		h.log.Warn("mqtt: the attention events' log ends in a damaged record (a write cut short): what came before it is kept", "file", path, "records", len(recs))
	}
	byN := map[uint64]int{}
	var q []heldEvent
	for _, r := range recs[1:] {
		switch r.Op {
		case "add":
			byN[r.N] = len(q)
			q = append(q, heldEvent{Key: r.Key, Start: r.Start, Payload: r.Event, n: r.N})
			if r.Start {
				h.open[r.Key] = r.Event
			} else {
				delete(h.open, r.Key)
			}
			seen(r.Event)
		case "take", "drop":
			if i, ok := byN[r.N]; ok && q[i].Payload != nil {
				if r.Op == "drop" && q[i].Start {
					delete(h.open, q[i].Key)
				}
				q[i].Payload = nil
			}
		case "open":
			h.open[r.Key] = r.Event
			seen(r.Event)
		case "alive":
			if r.Time != nil && r.Time.After(last) {
				last = *r.Time
			}
		}
	}
	for _, e := range q {
		if e.Payload != nil {
			h.q = append(h.q, e)
		}
	}
	h.q = h.q[max(0, len(h.q)-maxHeldEvents):]
	if n := len(h.open) - maxOpenEvents; n > 0 {
		for _, k := range slices.Sorted(maps.Keys(h.open))[:n] {
			delete(h.open, k)
		}
		h.log.Warn("mqtt: the attention events' log leaves more events open than posed ends at a start: the rest are forgotten", "ended", maxOpenEvents, "forgotten", n)
	}
	return last
}

// compact writes the spool anew with what is still needed (live): an
// open record for each event started, not ended and no longer held, and
// an add record for each event held (under h.mu).
func (h *eventHold) compact() {
	if h.sp == nil {
		return
	}
	var recs []spoolRecord
	for _, k := range h.openNotHeld() {
		recs = append(recs, spoolRecord{Op: "open", Key: k, Event: h.open[k]})
	}
	for _, e := range h.q {
		recs = append(recs, spoolRecord{Op: "add", N: e.n, Key: e.Key, Start: e.Start, Event: e.Payload})
	}
	h.wrote(h.sp.rewrite(recs))
}

// openNotHeld are the events started and not ended whose start is no
// longer held (the broker has it), sorted: a restart must still end them.
func (h *eventHold) openNotHeld() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(h.open)) {
		if !slices.ContainsFunc(h.q, func(e heldEvent) bool { return e.Start && e.Key == k }) {
			out = append(out, k)
		}
	}
	return out
}

// wrote records how a write to the spool went, and warns once when it
// starts failing.
func (h *eventHold) wrote(err error) {
	if err != nil && !h.saveErr {
		h.log.Warn("mqtt: cannot keep the attention events waiting in the state directory: a restart would lose them", "file", h.sp.path, "err", err)
	}
	h.saveErr = err != nil
}

// record appends r to the spool (under h.mu).
func (h *eventHold) record(r spoolRecord) {
	if h.sp != nil {
		h.wrote(h.sp.append(r)) // one that cannot be appended to is written anew (settle)
	}
}

// settle compacts the spool when due (under h.mu).
func (h *eventHold) settle() {
	if h.sp == nil || h.sp.closed {
		return
	}
	if h.sp.f == nil || h.sp.compactDue(len(h.q)+len(h.openNotHeld())) {
		h.compact()
	}
}

// sync puts the spool's appended records on the card, and marks the time
// while events are open (at most every aliveEvery). The event goroutine
// calls it, not the frame loop.
func (h *eventHold) sync(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sp == nil {
		return
	}
	if len(h.open) > 0 && now.Sub(h.sp.lastAlive) >= aliveEvery {
		h.sp.lastAlive = now
		t := now.UTC()
		h.record(spoolRecord{Op: "alive", Time: &t})
		h.settle()
	}
	h.wrote(h.sp.sync())
}

// close syncs and closes the spool.
func (h *eventHold) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sp != nil {
		h.sp.close()
	}
}

// nextID is the next event's id.
func (h *eventHold) nextID() string { return fmt.Sprintf("%d-%d", h.boot, h.seq.Add(1)) }

// add holds an event, dropping what the bound says; it reports the
// events dropped by this call, and whether the log should say so now.
func (h *eventHold) add(e heldEvent) (dropped int, warn bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.settle()
	if e.Start {
		h.open[e.Key] = e.Payload
	} else {
		delete(h.open, e.Key)
	}
	if !e.Start && h.orphans[e.Key] {
		delete(h.orphans, e.Key)
		dropped++
	} else {
		e.n = h.nextN
		h.nextN++
		h.record(spoolRecord{Op: "add", N: e.n, Key: e.Key, Start: e.Start, Event: e.Payload})
		h.q = append(h.q, e)
	}
	for len(h.q) > maxHeldEvents {
		// The oldest goes, unless it is on its way to the broker: then
		// the next (the one in flight is delivered, and its removal
		// must not take the next one, never sent, with it).
		v := 0
		if h.sending {
			v = 1
		}
		old := h.q[v]
		h.q = append(h.q[:v], h.q[v+1:]...)
		h.dropOne(old)
		dropped++
		if !old.Start {
			continue
		}
		delete(h.open, old.Key) // never told: nothing to end at a restart
		// Its _end, held already or still to come, goes with it.
		if i := h.indexOf(old.Key, false); i >= 0 {
			h.dropOne(h.q[i])
			h.q = append(h.q[:i], h.q[i+1:]...)
			dropped++
		} else {
			h.orphans[old.Key] = true
		}
	}
	if dropped > 0 {
		h.dropped.Add(uint64(dropped))
		warn, h.warned = !h.warned, true
	}
	return dropped, warn
}

// dropOne records in the spool that e, held, was dropped (under h.mu).
func (h *eventHold) dropOne(e heldEvent) {
	if h.sp == nil {
		return
	}
	h.record(spoolRecord{Op: "drop", N: e.n})
}

// indexOf is the index of the first held event of key and phase, or -1.
func (h *eventHold) indexOf(key string, start bool) int {
	for i, e := range h.q {
		if e.Key == key && e.Start == start {
			return i
		}
	}
	return -1
}

// front is the oldest event held (ok false: none), now being sent: it
// stays first, spared by the bound, until taken or unsent.
func (h *eventHold) front() (heldEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) == 0 {
		return heldEvent{}, false
	}
	h.sending = true
	return h.q[0], true
}

// unsent says the event front gave was not delivered: it stays first.
func (h *eventHold) unsent() {
	h.mu.Lock()
	h.sending = false
	h.mu.Unlock()
}

// taken removes the event front gave (the oldest): the broker has it.
func (h *eventHold) taken() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) > 0 && h.sending {
		e := h.q[0]
		h.q[0] = heldEvent{}
		h.q = h.q[1:]
		h.record(spoolRecord{Op: "take", N: e.n})
		h.settle()
	}
	h.sending = false
	h.warned = false
}

// held is the number of events waiting.
func (h *eventHold) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.q)
}

// sendEvents publishes the held events, oldest first, each waited for,
// while the broker is connected; one that fails stays first for the next
// try (the sending goroutine's).
func (p *Publisher) sendEvents() {
	p.events.sync(time.Now()) // on the card before the first try
	for {
		if !p.client.IsConnectionOpen() {
			return
		}
		e, ok := p.events.front()
		if !ok {
			return
		}
		m := outMsg{topic: p.base + message.TopicEvent, qos: 1, payload: e.Payload}
		if p.print != nil {
			fmt.Fprintf(p.print, "%s %s\n", m.topic, m.payload)
		}
		t := p.client.Publish(m.topic, 1, false, m.payload)
		if p.waitFor(t) != acked || t.Error() != nil {
			p.events.unsent()
			return // kept: sent again when the broker is back (nothing dropped)
		}
		p.events.taken()
		p.published.Add(1)
	}
}

// EventsHeld and EventsDropped: the events waiting for the broker, and
// those the bound made posed drop (counted apart from poses).
func (p *Publisher) EventsHeld() int       { return p.events.held() }
func (p *Publisher) EventsDropped() uint64 { return p.events.dropped.Load() }
func (p *Publisher) wakeEvents()           { signal(p.events.ready) }
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
