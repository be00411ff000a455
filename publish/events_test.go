package publish

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/message"
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
	event := func(i int, phase string) message.Event {
		return message.Event{Kind: message.EventLongDistraction, Phase: phase, Track: uint64(i), Time: t0.Add(time.Duration(i) * time.Second), Since: t0}
	}
	p.Event(event(0, "start"))
	col.WaitFor(t, "the first event", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) == 1 })
	broker.Stop()
	wait.Until(5*time.Second, func() bool { _, _, ok := p.Counters(); return !ok })
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
		var e message.Event
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
	h := newEventHold("", "cam", quiet())
	ev := func(track int, start bool) heldEvent {
		return heldEvent{Key: fmt.Sprintf("long/%d", track), Start: start, Payload: []byte(fmt.Sprintf(`{"track":%d}`, track))}
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
	if e.Key != "long/2" || h.warned {
		t.Errorf("front %q after the drops; warned %v after a send", e.Key, h.warned)
	}
}

// At the bound, the event on its way to the broker is spared: the next
// oldest goes instead, the acknowledgement removes the event that was
// sent (not the next, never sent), and the next one sent is the oldest
// still waiting. Before, the bound dropped the event in flight, counted
// it as dropped though the broker got it, and its acknowledgement
// removed an event never sent (#55, "the hold loses the wrong event").
// A send that fails leaves the event first, and the bound may then take
// it again.
func TestEventHoldSparesTheEventInFlight(t *testing.T) {
	h := newEventHold("", "cam", quiet())
	ev := func(i int) heldEvent {
		return heldEvent{Key: fmt.Sprintf("long/%d", i), Start: false, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	for i := range maxHeldEvents {
		h.add(ev(i))
	}
	sent, _ := h.front()
	if d, _ := h.add(ev(maxHeldEvents)); d != 1 {
		t.Fatalf("past the bound: %d dropped, want 1", d)
	}
	if e, _ := h.front(); string(e.Payload) != string(sent.Payload) {
		t.Fatalf("the event in flight %s is no longer first: %s", sent.Payload, e.Payload)
	}
	h.taken()
	next, _ := h.front()
	if string(next.Payload) != `{"n":2}` || h.held() != maxHeldEvents-1 {
		t.Errorf("after the acknowledgement: next %s (want event 2: 0 was sent, 1 dropped), %d held", next.Payload, h.held())
	}
	// Not delivered: it stays first and is no longer spared.
	h.unsent()
	for h.held() < maxHeldEvents {
		h.add(ev(h.held() + 10000))
	}
	h.add(ev(20000))
	if e, _ := h.front(); string(e.Payload) == `{"n":2}` {
		t.Errorf("an event not in flight was spared by the bound")
	}
}

// Events caught waiting by a stop (or a crash: the file is written at each
// change) are sent by the next run that has the same state directory,
// with their own ids and times, before its own; one the last run started
// and never ended is ended ("restarted") before anything new; a damaged
// file is a warning, not a failure to start.
func TestEventsSurviveARestart(t *testing.T) {
	broker := mqtttest.Start(t)
	dir := t.TempDir()
	broker.Stop() // the broker is away for the whole first run
	cfg := testMQTT(broker.Addr())
	p, err := New(cfg, "cam", quiet(), nil, WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i, phase := range []string{"start", "end", "start"} {
		p.Event(message.Event{Kind: message.EventUnresponsive, Phase: phase, Track: 7, Time: t0.Add(time.Duration(i) * time.Second), Since: t0})
	}
	shutdown(p, 200*time.Millisecond)
	firstEnded := time.Now()
	if live, open := spoolLive(t, dir); live != 3 || open != 1 {
		t.Fatalf("the events' log after the first run: %d events held, %d open; want 3 and 1", live, open)
	}

	broker.Start()
	col := mqtttest.Collect(t, broker.Addr(), "posed/cam/event")
	q, err := New(cfg, "cam", quiet(), nil, WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(q, 3*time.Second)
	waitConnected(t, q, 5*time.Second)
	q.Event(message.Event{Kind: message.EventUnresponsive, Phase: "start", Track: 8, Time: t0.Add(10 * time.Second), Since: t0})
	col.WaitFor(t, "the five events", 10*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) >= 5 })
	var got []string
	boots := map[string]bool{}
	for _, m := range col.All() {
		var e message.Event
		if err := json.Unmarshal(m.Payload, &e); err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprint(int(e.Time.Sub(t0).Seconds()))
		if e.Why == "restarted" && e.Track == 7 && e.Time.After(t0.Add(time.Hour)) && !e.Time.After(firstEnded) {
			// Ended when the first run was last known to run, not when
			// the second started.
			when = "restart"
			if !strings.HasSuffix(e.ID, "-end") {
				t.Errorf("the restart's end has id %q, want its start's id and -end", e.ID)
			}
		}
		got = append(got, fmt.Sprintf("%s@%s", e.Phase, when))
		boot, _, _ := strings.Cut(e.ID, "-")
		boots[boot] = true
	}
	if want := "start@0 end@1 start@2 end@restart start@10"; strings.Join(got, " ") != want {
		t.Errorf("events after the restart %q, want %q", strings.Join(got, " "), want)
	}
	if len(boots) != 2 {
		t.Errorf("ids from %d runs, want the first run's and the second's", len(boots))
	}
	wait.Until(5*time.Second, func() bool { return q.EventsHeld() == 0 })
	q.events.sync(time.Now())
	if live, _ := spoolLive(t, dir); live != 0 {
		t.Errorf("the events' log after they were sent holds %d", live)
	}

	// A damaged file: the run starts without the events, and says so.
	os.WriteFile(filepath.Join(dir, spoolFile), []byte("{not json"), 0o640)
	// The log is written by paho's goroutines too (a connection's), which
	// may outlive the shutdown: it is read under the writer's lock.
	var logs strings.Builder
	var mu sync.Mutex
	r, err := New(cfg, "cam", slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)), nil, WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(r, time.Second)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if r.EventsHeld() != 0 || !strings.Contains(out, "damaged from its start") {
		t.Errorf("a damaged events file: %d held, log %q", r.EventsHeld(), out)
	}
}

// spoolLive replays the events' log in dir: the events still held, and
// those started and not ended.
func spoolLive(t *testing.T, dir string) (held, open int) {
	t.Helper()
	recs, damaged, err := readSpool(filepath.Join(dir, spoolFile))
	if err != nil || damaged || len(recs) == 0 || recs[0].Op != "device" {
		t.Fatalf("the events' log: %d records, damaged %v, %v", len(recs), damaged, err)
	}
	live := map[uint64]bool{}
	opened := map[string]bool{}
	for _, r := range recs[1:] {
		switch r.Op {
		case "add":
			live[r.N] = true
			if r.Start {
				opened[r.Key] = true
			} else {
				delete(opened, r.Key)
			}
		case "open":
			opened[r.Key] = true
		case "take", "drop":
			delete(live, r.N)
		}
	}
	return len(live), len(opened)
}

// A spool writes about each event's own size: 1000 events held through an
// outage and drained write (as the kernel counts this process's writes)
// within 3 times their bytes, compactions and
// the records of their acknowledgements included (before: the whole hold
// rewritten at each change, 134 MB for 1000 events, about 130 KB an
// event). The log after the drain is short again.
func TestSpoolWritesLittle(t *testing.T) {
	dir := t.TempDir()
	h := newEventHold(dir, "cam", quiet())
	defer h.close()
	payload := func(i int) []byte {
		e := message.Event{Schema: 1, Device: "cam", Kind: message.EventLongDistraction, Phase: "start", Track: uint64(i),
			Target: message.Label{Name: strings.Repeat("t", 64), Known: true}, Time: time.Date(2026, 11, 28, 10, 0, i%60, 0, time.UTC), ID: fmt.Sprintf("1764-%d", i)}
		b, _ := json.Marshal(e)
		return b
	}
	var own int64
	before := wchar(t)
	for i := range maxHeldEvents {
		p := payload(i)
		own += int64(len(p))
		h.add(heldEvent{Key: fmt.Sprintf("long/%d", i), Start: i%2 == 1, Payload: p})
		if i%2 == 1 {
			h.add(heldEvent{Key: fmt.Sprintf("long/%d", i), Payload: p}) // its end: one event more
			own += int64(len(p))
		}
		if h.held() >= maxHeldEvents {
			break
		}
	}
	h.sync(time.Now())
	for {
		if _, ok := h.front(); !ok {
			break
		}
		h.taken()
	}
	h.sync(time.Now())
	written := wchar(t) - before
	st, err := os.Stat(filepath.Join(dir, spoolFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events of %d bytes held and drained: %d bytes written (%.2f×); the log %d bytes after", maxHeldEvents, own/int64(maxHeldEvents), written, float64(written)/float64(own), st.Size())
	if written > 3*own {
		t.Errorf("%d bytes written for %d bytes of events, want at most 3×", written, own)
	}
	if st.Size() > spoolCompactAt+4096 {
		t.Errorf("the log is %d bytes once drained, want it compacted", st.Size())
	}
	if live, open := spoolLive(t, dir); live != 0 || open != 0 {
		t.Errorf("after the drain the log holds %d events and %d open", live, open)
	}
}

// A log cut short (a power cut mid-write) keeps every record before the
// damage; another device's log is set aside, named for it, and nothing of
// it is published here; the whole-file hold of earlier versions is read
// once into the log.
func TestSpoolDamageOtherDeviceLegacy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, spoolFile)
	h := newEventHold(dir, "cam", quiet())
	for i := range 10 {
		h.add(heldEvent{Key: fmt.Sprintf("long/%d", i), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	h.close()
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-5], 0o640) // the last record cut short
	var logs strings.Builder
	g := newEventHold(dir, "cam", slog.New(slog.NewTextHandler(&logs, nil)))
	if g.held() != 9 || !strings.Contains(logs.String(), "damaged record") {
		t.Errorf("a log cut short: %d events held (want the 9 before the damage), log %q", g.held(), logs.String())
	}
	g.close()

	logs.Reset()
	other := newEventHold(dir, "garage", slog.New(slog.NewTextHandler(&logs, nil)))
	other.close()
	if other.held() != 0 || !strings.Contains(logs.String(), "another device's") {
		t.Errorf("another device's log: %d events held here, log %q", other.held(), logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "events-cam.log")); err != nil {
		t.Errorf("the other device's log was not set aside: %v", err)
	}

	os.Remove(path)
	legacy := `{"held":[{"key":"long/1","start":true,"event":{"n":1}}],"open":{}}`
	os.WriteFile(filepath.Join(dir, legacyEventsFile), []byte(legacy), 0o640)
	l := newEventHold(dir, "cam", quiet())
	l.close()
	if _, err := os.Stat(filepath.Join(dir, legacyEventsFile)); l.held() != 1 || err == nil {
		t.Errorf("the legacy file: %d events held (want 1), still there: %v", l.held(), err == nil)
	}
	if live, _ := spoolLive(t, dir); live != 1 {
		t.Errorf("the legacy file's event is not in the log (%d)", live)
	}
}

// An event left open by a run that died is ended at the last moment that
// run is known to have run (its mark of the time), not when the next run
// starts (which counted a night's power cut as a distraction), under an
// id made from its start's: a restart that could not write its log ends
// it again under the same id.
func TestSpoolEndsOpenEventsWhenTheRunDied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, spoolFile)
	h := newEventHold(dir, "cam", quiet())
	since := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	start, _ := json.Marshal(message.Event{Kind: message.EventUnresponsive, Phase: "start", Track: 3, Time: since, Since: since, ID: "100-1"})
	h.add(heldEvent{Key: "unresponsive/3", Start: true, Payload: start})
	h.front()
	h.taken() // the broker has the start
	died := since.Add(90 * time.Second)
	h.sync(died) // a mark of the time: the run's last
	h.close()
	saved, _ := os.ReadFile(path)
	ends := func() message.Event {
		t.Helper()
		g := newEventHold(dir, "cam", quiet())
		defer g.close()
		e, ok := g.front()
		var m message.Event
		if !ok || json.Unmarshal(e.Payload, &m) != nil {
			t.Fatalf("no end held after the restart (%d held)", g.held())
		}
		return m
	}
	a := ends()
	if a.Phase != "end" || a.Why != "restarted" || !a.Time.Equal(died) || a.DurationS != 90 || a.ID != "100-1-end" {
		t.Errorf("the end after the restart: %+v; want ended at %v after 90 s, id 100-1-end", a, died)
	}
	os.WriteFile(path, saved, 0o640) // as if the restart had not written its log
	if b := ends(); b.ID != a.ID {
		t.Errorf("the same end under ids %q and %q", a.ID, b.ID)
	}
}

// Whatever the events' log holds (damaged, hostile, another version's),
// posed starts: the hold reads what it can, holds at most its bound (and
// the ends of what was left open), and takes a new event after. 300 logs
// made from a good one: cut anywhere, bytes flipped, lines repeated.
func TestSpoolHostile(t *testing.T) {
	dir := t.TempDir()
	h := newEventHold(dir, "cam", quiet())
	for i := range 5 {
		h.add(heldEvent{Key: fmt.Sprintf("long/%d", i), Start: true, Payload: []byte(fmt.Sprintf(`{"kind":"long_distraction","phase":"start","id":"1-%d"}`, i))})
	}
	h.add(heldEvent{Key: "long/1", Payload: []byte(`{"n":2}`)})
	h.front()
	h.taken()
	h.sync(time.Now())
	h.close()
	good, _ := os.ReadFile(filepath.Join(dir, spoolFile))
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 300 {
		data := slices.Clone(good)
		switch k % 3 {
		case 0:
			data = data[:rng.IntN(len(data)+1)]
		case 1:
			for range 1 + rng.IntN(8) {
				data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
			}
		case 2:
			lines := bytes.SplitAfter(data, []byte("\n"))
			for range rng.IntN(4000) {
				data = append(data, lines[1+rng.IntN(len(lines)-2)]...)
			}
		}
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, spoolFile), data, 0o640); err != nil {
			t.Fatal(err)
		}
		g := newEventHold(d, "cam", quiet())
		n := g.held()
		if n > maxHeldEvents+maxOpenEvents {
			t.Fatalf("log %d: %d events held", k, n)
		}
		g.add(heldEvent{Key: "long/9", Start: true, Payload: []byte(`{"n":9}`)})
		// The bound may drop a start with its end to make room.
		if m := g.held(); m > maxHeldEvents || m < min(n+1, maxHeldEvents-1) {
			t.Fatalf("log %d: an event added to %d held: %d", k, n, m)
		}
		g.close()
	}
}

// wchar is the bytes this process has written (/proc/self/io: every
// write, to any file).
func wchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io here: %v", err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "wchar:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no wchar in /proc/self/io: %q", b)
	return 0
}
