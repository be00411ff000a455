package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

// A condition that comes true on another goroutine is seen; one that
// never does is given up on after its deadline, not before.
func TestUntil(t *testing.T) {
	var done atomic.Bool
	go func() { time.AfterFunc(30*time.Millisecond, func() { done.Store(true) }) }()
	if !Until(5*time.Second, done.Load) {
		t.Fatal("a condition that came true was not seen")
	}
	start := time.Now()
	if Until(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("a false condition held")
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("gave up before the deadline")
	}
}
