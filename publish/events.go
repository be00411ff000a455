package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/config"
)

// Attention events are what a fleet counts: they are not dropped while
// the broker is away, as poses are. Each waits in the publisher's hold,
// in order, until the broker has acknowledged it (QoS 1): a distraction
// that starts in a tunnel reaches the broker when the car is out of it,
// with its own times. The hold is bounded (maxHeldEvents); past it the
// oldest event goes, and an _end whose _start went goes too (a consumer
// never gets an _end it cannot pair). Each event has an id of its own
// (the publisher's start and a number), so that a consumer can drop one
// it got twice (QoS 1 may deliver twice). With a state directory the hold
// is kept in a file there (eventsFile) at each change, and read back at
// start: the events a stop, a crash or a power cut caught waiting are sent
// by the next run, with their own ids and times.

// maxHeldEvents bounds the events that wait for the broker: a driver's
// events come a few a minute, so this is hours of an outage.
const maxHeldEvents = 1000

// heldEvent is an event encoded, and what pairs its start and end.
type heldEvent struct {
	Key     string          `json:"key"` // kind/track
	Start   bool            `json:"start"`
	Payload json.RawMessage `json:"event"`
}

// eventsFile is the hold's file in the state directory: a JSON line per
// event waiting, oldest first. openFile holds the events started and not
// ended (by kind/track, their _start): a run that stops without ending
// them (a crash) leaves them there, and the next ends them when it starts
// ("why": "restarted") instead of leaving them open for good.
const (
	eventsFile = "events.jsonl"
	openFile   = "events-open.json"
)

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
}

// newEventHold returns a hold, with the events of the file at path (in a
// state directory; "" for none) waiting.
func newEventHold(path string, log *slog.Logger) *eventHold {
	h := &eventHold{orphans: map[string]bool{}, ready: make(chan struct{}, 1), boot: time.Now().UnixMilli(), path: path, log: log,
		open: map[string]json.RawMessage{}}
	if path == "" {
		return h
	}
	defer h.endOpen(filepath.Join(filepath.Dir(path), openFile))
	b, err := config.ReadFileLimited(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("mqtt: cannot read the attention events left waiting: they are lost", "file", path, "err", err)
		}
		return h
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e heldEvent
		if err := json.Unmarshal(line, &e); err != nil || e.Key == "" || !json.Valid(e.Payload) {
			log.Warn("mqtt: a damaged line among the attention events left waiting: skipped", "file", path, "line", i+1)
			continue
		}
		h.q = append(h.q, e)
	}
	if len(h.q) > maxHeldEvents {
		h.q = h.q[len(h.q)-maxHeldEvents:]
	}
	if len(h.q) > 0 {
		log.Info("mqtt: attention events left waiting by the last run will be sent", "events", len(h.q), "file", path)
		signal(h.ready)
	}
	return h
}

// endOpen ends the events the last run started and did not end (the file
// at path): each gets its _end, "why": "restarted", dated now.
func (h *eventHold) endOpen(path string) {
	b, err := config.ReadFileLimited(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("mqtt: cannot read the events the last run left open", "file", path, "err", err)
		}
		return
	}
	var open map[string]EventMsg
	if err := json.Unmarshal(b, &open); err != nil {
		h.log.Warn("mqtt: the events the last run left open are damaged: not ended", "file", path, "err", err)
		return
	}
	keys := slices.Sorted(maps.Keys(open))
	now := time.Now().UTC()
	for _, k := range keys {
		e := open[k]
		if e.Phase != "start" || e.Kind == "" {
			continue
		}
		e.Phase, e.EventType, e.Why, e.ID = "end", e.Kind+"_end", "restarted", h.nextID()
		e.DurationS = math.Round(now.Sub(e.Since).Seconds()*1000) / 1000
		e.Time = now
		payload, err := json.Marshal(e)
		if err != nil {
			continue
		}
		h.add(heldEvent{Key: k, Start: false, Payload: payload})
	}
	if len(keys) > 0 {
		h.log.Info("mqtt: events the last run left open are ended (why: restarted)", "events", len(keys))
		signal(h.ready)
	}
}

// save writes the hold to its file (under h.mu).
func (h *eventHold) save() {
	if h.path == "" {
		return
	}
	var b bytes.Buffer
	for _, e := range h.q {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	err := config.WriteStateFile(h.path, b.Bytes())
	if err == nil {
		open, _ := json.Marshal(h.open)
		err = config.WriteStateFile(filepath.Join(filepath.Dir(h.path), openFile), open)
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
		old := h.q[0]
		h.q = h.q[1:]
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

// front is the oldest event held (ok false: none).
func (h *eventHold) front() (heldEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) == 0 {
		return heldEvent{}, false
	}
	return h.q[0], true
}

// taken removes the oldest event: the broker has it.
func (h *eventHold) taken() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) > 0 {
		h.q[0] = heldEvent{}
		h.q = h.q[1:]
		h.save()
	}
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
		e, ok := p.events.front()
		if !ok || !p.client.IsConnectionOpen() {
			return
		}
		m := outMsg{topic: p.base + TopicEvent, qos: 1, payload: e.Payload}
		if p.print != nil {
			fmt.Fprintf(p.print, "%s %s\n", m.topic, m.payload)
		}
		t := p.client.Publish(m.topic, 1, false, m.payload)
		if p.waitFor(t) != acked || t.Error() != nil {
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
