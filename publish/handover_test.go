package publish

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgepose/posed/publish/message"
	"github.com/edgepose/posed/publish/mqtttest"
)

// A reload's Hold waits for the command being carried out: a set/detect
// OFF that the run began before the hold is in the state the run hands
// over, never carried out after it (the privacy switch failed open after
// a reload under load, #55). The command's handler is held open by the
// test, so the race is reproduced without a loaded machine; a command
// that arrives after the hold is kept for the next run (Release).
func TestHoldWaitsForTheCommandInProgress(t *testing.T) {
	broker := mqtttest.Start(t)
	started, release := make(chan struct{}), make(chan struct{})
	var done, calls atomic.Int32
	p, err := New(testMQTT(broker.Addr()), "cam", quiet(), nil, WithCommands(func(name string, _ []byte) (message.Reply, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		done.Add(1)
		return message.Reply{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, time.Second)
	select {
	case <-p.Subscribed():
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher did not subscribe to its commands")
	}
	c := mqtttest.Connect(t, broker.Addr(), "sender")
	c.Publish("posed/cam/set/detect", 1, false, "OFF").WaitTimeout(5 * time.Second)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the command was not carried out")
	}
	held := make(chan struct{})
	go func() {
		p.Hold(context.Background())
		close(held)
	}()
	select {
	case <-held:
		t.Fatal("Hold returned while the command was still being carried out")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not return once the command was done")
	}
	if done.Load() != 1 {
		t.Errorf("%d commands done when Hold returned, want 1", done.Load())
	}
	// After the hold, a command is kept, not carried out.
	sent := time.Now()
	c.Publish("posed/cam/set/detect", 1, false, "ON").WaitTimeout(5 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	var kept []Command
	for time.Now().Before(deadline) {
		p.handover.mu.Lock()
		kept = append(kept[:0], p.handover.cmds...)
		p.handover.mu.Unlock()
		if len(kept) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(kept) != 1 || string(kept[0].Payload) != "ON" || kept[0].At.Before(sent.Add(-time.Second)) || calls.Load() != 1 {
		t.Errorf("after the hold: kept %v, %d calls of the handler", kept, calls.Load())
	}
}
