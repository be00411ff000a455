package clock

import (
	"testing"
	"time"
)

// Timers run in the order they fall due, at their time, and a stopped one
// never runs.
func TestManual(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m := NewManual(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+m.Now().Sub(start).String()) }
	}
	m.AfterFunc(3*time.Second, at("c"))
	m.AfterFunc(time.Second, at("a"))
	stop := m.AfterFunc(2*time.Second, at("b"))
	m.AfterFunc(time.Second, func() { m.AfterFunc(500*time.Millisecond, at("a2")) }) // armed by a timer, due within the advance
	m.Advance(500 * time.Millisecond)
	if len(got) != 0 {
		t.Fatalf("ran before their time: %v", got)
	}
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	m.Advance(3 * time.Second)
	want := []string{"a@1s", "a2@1.5s", "c@3s"}
	if len(got) != len(want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	if d := m.Now().Sub(start); d != 3500*time.Millisecond {
		t.Errorf("clock at %v after advancing 3.5 s", d)
	}
	if (Or(nil) != Wall{}) || Or(m) != m {
		t.Error("Or: want the wall clock for nil, else the clock given")
	}
}
