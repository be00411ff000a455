// Package wait is how posed's tests wait for what another goroutine, a
// child process or the network does: a condition polled until it holds or
// a deadline passes, instead of a fixed sleep that is too long on an idle
// machine and too short on a loaded one. Only tests import it.
package wait

import (
	"testing"
	"time"
)

// poll is the time between two looks at a condition.
const poll = 10 * time.Millisecond

// Until polls cond until it holds (true) or d has passed (false).
func Until(d time.Duration, cond func() bool) bool { return UntilEvery(d, poll, cond) }

// UntilEvery is Until looking every so often: for a condition that costs
// (one that reads every message a collector has).
func UntilEvery(d, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
}

// For polls cond until it holds, and fails tb, saying what it waited
// for, if it does not within d.
func For(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Until(d, cond) {
		tb.Fatalf("timed out after %v waiting for %s", d, what)
	}
}
