package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/config/regular"
	"github.com/edgepose/posed/publish/message"
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
// is kept in a file there (eventsFile) at each change, and read back at
// start: the events a stop, a crash or a power cut caught waiting are sent
// by the next run, with their own ids and times, and the events it had
// started and not ended are ended ("why": "restarted") instead of staying
// open for good.

// maxHeldEvents bounds the events that wait for the broker: a driver's
// events come a few a minute, so this is hours of an outage.
const maxHeldEvents = 1000

// heldEvent is an event encoded, and what pairs its start and end.
type heldEvent struct {
	Key     string          `json:"key"` // kind/track
	Start   bool            `json:"start"`
	Payload json.RawMessage `json:"event"`
}

// eventsFile is the hold's file in the state directory (heldState).
const eventsFile = "events.json"

// heldState is what the file keeps: the events waiting, oldest first, and
// those started and not ended (by kind/track, their _start).
type heldState struct {
	Held []heldEvent                `json:"held"`
	Open map[string]json.RawMessage `json:"open"`
}

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
	path    string                     // the hold's file ("": none)
	open    map[string]json.RawMessage // kind/track → its _start: started, not ended
	log     *slog.Logger
	saveErr bool // the last save failed (and was logged)
	// sending: the oldest event is being sent (front to taken or
	// unsent): the bound spares it, and taken removes it.
	sending bool
}

// newEventHold returns a hold, with the events of the file at path (in a
// state directory; "" for none) waiting, and the ends of those it left
// open.
func newEventHold(path string, log *slog.Logger) *eventHold {
	h := &eventHold{orphans: map[string]bool{}, ready: make(chan struct{}, 1), boot: time.Now().UnixMilli(), path: path, log: log,
		open: map[string]json.RawMessage{}}
	if path == "" {
		return h
	}
	b, err := regular.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h
	}
	var st heldState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		log.Warn("mqtt: cannot read the attention events the last run left: they are lost", "file", path, "err", err)
		return h
	}
	h.q = st.Held[max(0, len(st.Held)-maxHeldEvents):]
	now := time.Now().UTC()
	for _, k := range slices.Sorted(maps.Keys(st.Open)) {
		var e message.Event
		if json.Unmarshal(st.Open[k], &e) != nil || e.Phase != "start" || e.Kind == "" {
			continue
		}
		e.Phase, e.EventType, e.Why, e.ID = "end", e.Kind+"_end", "restarted", h.nextID()
		e.Time, e.DurationS = now, math.Round(now.Sub(e.Since).Seconds()*1000)/1000
		if payload, err := json.Marshal(e); err == nil {
			h.add(heldEvent{Key: k, Start: false, Payload: payload})
		}
	}
	if len(h.q) > 0 {
		log.Info("mqtt: attention events the last run left are sent first (waiting, or ended: why restarted)", "events", len(h.q), "file", path)
		signal(h.ready)
	}
	return h
}

// save writes the hold to its file (under h.mu).
func (h *eventHold) save() {
	if h.path == "" {
		return
	}
	b, err := json.Marshal(heldState{Held: h.q, Open: h.open})
	if err == nil {
		err = regular.WriteFile(h.path, b)
	}
	if err != nil && !h.saveErr {
		h.log.Warn("mqtt: cannot keep the attention events waiting in the state directory: a restart would lose them", "file", h.path, "err", err)
	}
	h.saveErr = err != nil
}

// nextID is the next event's id.
func (h *eventHold) nextID() string { return fmt.Sprintf("%d-%d", h.boot, h.seq.Add(1)) }

// add holds an event, dropping what the bound says; it reports the
// events dropped by this call, and whether the log should say so now.
func (h *eventHold) add(e heldEvent) (dropped int, warn bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.save()
	if e.Start {
		h.open[e.Key] = e.Payload
	} else {
		delete(h.open, e.Key)
	}
	if !e.Start && h.orphans[e.Key] {
		delete(h.orphans, e.Key)
		dropped++
	} else {
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
		dropped++
		if !old.Start {
			continue
		}
		delete(h.open, old.Key) // never told: nothing to end at a restart
		// Its _end, held already or still to come, goes with it.
		if i := h.indexOf(old.Key, false); i >= 0 {
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
		h.q[0] = heldEvent{}
		h.q = h.q[1:]
		h.save()
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
