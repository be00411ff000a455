package publish

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/edgepose/posed/publish/mqtttest"
)

// Events started and ended while the broker is away (killed: a tunnel)
// reach it when it is back, every one, in order, with their own times and
// ids; none is counted as dropped. (Before: the broker away, every event
// was dropped, and after the reconnection a consumer got _end events of
// distractions it never saw start.)
func TestEventsSurviveAnOutage(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "posed/cam/event")
	p, err := New(testMQTT(broker.Addr()), "cam", quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, 3*time.Second)
	waitConnected(t, p, 5*time.Second)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	event := func(i int, phase string) EventMsg {
		return EventMsg{Kind: EventLongDistraction, Phase: phase, Track: uint64(i), Time: t0.Add(time.Duration(i) * time.Second), Since: t0}
	}
	p.Event(event(0, "start"))
	col.WaitFor(t, "the first event", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) == 1 })
	broker.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for _, _, ok := p.Counters(); ok && time.Now().Before(deadline); _, _, ok = p.Counters() {
		time.Sleep(20 * time.Millisecond)
	}
	for i := 1; i <= 20; i++ { // away: ten distractions start and end
		phase := "start"
		if i%2 == 0 {
			phase = "end"
		}
		p.Event(event((i+1)/2, phase))
	}
	if n := p.EventsHeld(); n != 20 {
		t.Errorf("%d events held while the broker is away, want 20", n)
	}
	broker.Start()
	col.WaitFor(t, "the 21 events", 20*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) >= 21 })
	var ids []string
	for i, m := range col.All() {
		var e EventMsg
		if err := json.Unmarshal(m.Payload, &e); err != nil {
			t.Fatal(err)
		}
		want := event((i+1)/2, map[bool]string{true: "start", false: "end"}[i%2 == 1 || i == 0])
		if e.Track != want.Track || e.Phase != want.Phase || !e.Time.Equal(want.Time) {
			t.Errorf("event %d: track %d %s at %v, want track %d %s at %v", i, e.Track, e.Phase, e.Time, want.Track, want.Phase, want.Time)
		}
		if slices.Contains(ids, e.ID) || e.ID == "" {
			t.Errorf("event %d: id %q again or empty", i, e.ID)
		}
		ids = append(ids, e.ID)
	}
	if d := p.EventsDropped(); d != 0 || p.EventsHeld() != 0 {
		t.Errorf("%d events dropped, %d still held", d, p.EventsHeld())
	}
}

// Past the bound the oldest events go, and with a _start goes its _end,
// held already or still to come: a consumer never gets an _end it cannot
// pair. What went is counted apart from poses.
func TestEventHoldBound(t *testing.T) {
	h := newEventHold()
	ev := func(track int, start bool) heldEvent {
		return heldEvent{key: fmt.Sprintf("long/%d", track), start: start, payload: []byte(fmt.Sprint(track, start))}
	}
	// Track 0 starts and ends; then maxHeldEvents-1 starts of others:
	// full. One more start pushes track 0's start out, and its end too.
	h.add(ev(0, true))
	h.add(ev(0, false))
	for i := 1; i < maxHeldEvents-2; i++ {
		h.add(ev(i, true))
	}
	if d, _ := h.add(ev(maxHeldEvents, true)); d != 0 || h.held() != maxHeldEvents {
		t.Fatalf("at the bound: dropped %d, held %d", d, h.held())
	}
	d, warn := h.add(ev(maxHeldEvents+1, true))
	if d != 2 || !warn || h.held() != maxHeldEvents-1 || h.indexOf("long/0", false) >= 0 {
		t.Fatalf("past the bound: dropped %d (want track 0's start and end), warn %v, held %d", d, warn, h.held())
	}
	// Next: track 1's start goes while its end has not come: the end is
	// dropped when it comes.
	h.add(ev(maxHeldEvents+2, true))
	h.add(ev(maxHeldEvents+3, true))
	if !h.orphans["long/1"] {
		t.Fatal("track 1's start went without a mark for its end")
	}
	before := h.held()
	if d, warn := h.add(ev(1, false)); d != 1 || warn || h.held() != before {
		t.Errorf("the end of a dropped start: dropped %d, warned again %v, held %d (was %d)", d, warn, h.held(), before)
	}
	if got := h.dropped.Load(); got != 4 {
		t.Errorf("%d events counted as dropped, want 4", got)
	}
	e, _ := h.front()
	h.taken()
	if e.key != "long/2" || h.warned {
		t.Errorf("front %q after the drops; warned %v after a send", e.key, h.warned)
	}
}
