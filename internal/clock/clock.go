// Package clock is the time a stage keeps: the wall clock in posed, and a
// clock moved by hand in tests, so that a test of a stage's timing steps
// time instead of sleeping through it (and cannot be late on a busy
// machine).
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs a function after a delay.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (Wall) or in Advance's
	// (Manual) once d has passed; stop cancels it and reports whether it
	// was still to run.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Wall is the system's clock.
type Wall struct{}

// Now is time.Now.
func (Wall) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Wall) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Or returns c, or the wall clock if c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Wall{}
	}
	return c
}

// Manual is a clock that moves only when Advance is called. The zero value
// starts at the zero time; it is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*manualTimer
}

type manualTimer struct {
	at  time.Time
	seq int // order of arming, for timers due at the same time
	f   func()
}

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc arms f to run when Advance passes d from now.
func (m *Manual) AfterFunc(d time.Duration, f func()) func() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{at: m.now.Add(d), seq: m.seq, f: f}
	m.timers = append(m.timers, t)
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, x := range m.timers {
			if x == t {
				m.timers = append(m.timers[:i], m.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Advance moves the clock by d, running each timer that falls due, in the
// order they fall due, in the caller's goroutine with the clock reading
// the timer's time.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	end := m.now.Add(d)
	for {
		sort.Slice(m.timers, func(i, j int) bool {
			a, b := m.timers[i], m.timers[j]
			return a.at.Before(b.at) || a.at.Equal(b.at) && a.seq < b.seq
		})
		if len(m.timers) == 0 || m.timers[0].at.After(end) {
			break
		}
		t := m.timers[0]
		m.timers = m.timers[1:]
		m.now = t.at
		m.mu.Unlock()
		t.f()
		m.mu.Lock()
	}
	m.now = end
	m.mu.Unlock()
}
