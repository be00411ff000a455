package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/publish/mqtttest"
)

// A command sent while posed reloads — after the old run has stopped and
// before the new one listens — is carried out by the new run, and the
// device never says "offline" during the reload: the old connection stays
// subscribed and holds what it receives until the new one takes over.
// (Before: the command reached no subscriber and was lost, and the
// availability flickered offline.)
func TestCommandDuringReloadIsCarriedOut(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "posed/test/#")
	seq, _ := yawSequence(t)
	cfg := testConfig(t, seq, "tcp://"+broker.Addr())
	cfg.Source.Loop = true
	load := func() (config.Config, error) { return cfg, nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	var carry carried
	type result struct {
		next *config.Config
		err  error
	}
	runOnce := func(c config.Config) chan result {
		out := make(chan result, 1)
		go func() {
			next, err := runUntilReload(ctx, c, quietLog(), io.Discard, hup, load, &carry)
			out <- result{next, err}
		}()
		return out
	}
	last := func(topic string) string {
		m, ok := col.Last(topic)
		if !ok {
			return ""
		}
		return string(m.Payload)
	}
	first := runOnce(cfg)
	col.WaitFor(t, "poses", 20*time.Second, func([]mqtttest.Msg) bool { return len(col.On("posed/test/pose")) > 3 })
	if last("posed/test/detect") != "ON" {
		t.Fatalf("detect %q before the reload, want ON", last("posed/test/detect"))
	}
	hup <- syscall.SIGHUP
	r := <-first
	if r.err != nil || r.next == nil {
		t.Fatalf("the reload: next %v, err %v", r.next, r.err)
	}
	if carry.prev == nil {
		t.Fatal("the stopped run's publisher was not held for the next run")
	}
	// Between the runs: the command goes out now.
	cl := mqtttest.Connect(t, broker.Addr(), "between")
	if tok := cl.Publish("posed/test/set/detect", 1, false, "OFF"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	time.Sleep(300 * time.Millisecond) // the broker delivers it to whoever subscribes
	second := runOnce(*r.next)
	col.WaitFor(t, "detect OFF after the reload", 20*time.Second, func([]mqtttest.Msg) bool {
		return last("posed/test/detect") == "OFF" && last("posed/test/state") != ""
	})
	cancel()
	if r := <-second; r.err != nil && r.err != context.Canceled {
		t.Fatal(r.err)
	}
	col.WaitFor(t, "offline at the end", 10*time.Second, func([]mqtttest.Msg) bool { return last("posed/test/available") == "offline" })
	var avail []string
	for _, m := range col.On("posed/test/available") {
		avail = append(avail, string(m.Payload))
	}
	for i, a := range avail[:len(avail)-1] {
		if a != "online" {
			t.Errorf("available %v: %q at %d before the end, want online throughout the reload", avail, a, i)
			break
		}
	}
	if len(avail) == 0 || avail[len(avail)-1] != "offline" {
		t.Errorf("available %v: want offline at the end", avail)
	}
}
