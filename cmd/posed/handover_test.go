package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/publish/mqtttest"
)

// A command sent while posed reloads — after the old run has stopped and
// before the new one listens — is carried out by the new run, and the
// device never says "offline" during the reload: the old connection stays
// subscribed and holds what it receives until the new one takes over.
// (Before: the command reached no subscriber and was lost, and the
// availability flickered offline.) With a configured client id the two
// connections take turns on one persistent session, and the embedded
// broker is kept through the reload, its clients connected (before, both
// ended the old connection before the new run connected: #55).
func TestCommandDuringReloadIsCarriedOut(t *testing.T) {
	for _, tc := range []string{"plain", "client_id", "embedded"} {
		t.Run(tc, func(t *testing.T) { commandDuringReload(t, tc) })
	}
}

// reloadBroker is the broker of a reload test, as kind says: "plain"
// (mosquitto), "client_id" (mosquitto, posed with a client id of its
// own) or "embedded" (posed's own, with a reader ha). It sets m for it
// and returns the address and the credentials other clients log in with.
func reloadBroker(t *testing.T, kind string, m *config.MQTT) (addr string, creds func(*mqtt.ClientOptions) *mqtt.ClientOptions) {
	creds = func(o *mqtt.ClientOptions) *mqtt.ClientOptions { return o }
	if kind == "embedded" {
		addr = mqtttest.FreeAddr(t)
		users := filepath.Join(t.TempDir(), "readers")
		if err := os.WriteFile(users, []byte("ha:ha-secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m.Broker, m.Listen, m.EmbeddedUsers = "embedded", addr, users
		return addr, func(o *mqtt.ClientOptions) *mqtt.ClientOptions { return o.SetUsername("ha").SetPassword("ha-secret") }
	}
	addr = mqtttest.Start(t).Addr()
	m.Broker = "tcp://" + addr
	if kind == "client_id" {
		m.ClientID = "posed-fixed"
	}
	return addr, creds
}

func commandDuringReload(t *testing.T, kind string) {
	seq, _ := yawSequence(t)
	cfg := testConfig(t, seq, "")
	addr, creds := reloadBroker(t, kind, &cfg.MQTT)
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
	first := runOnce(cfg)
	// After the start: the embedded broker starts with posed (retained
	// messages reach a later subscriber all the same).
	var drops atomic.Int32 // the collector's connection lost
	col := mqtttest.CollectFrom(t, creds(mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetClientID("collector").
		SetConnectRetry(true).SetConnectRetryInterval(100*time.Millisecond).
		SetConnectionLostHandler(func(mqtt.Client, error) { drops.Add(1) })), "posed/test/#")
	last := func(topic string) string {
		m, ok := col.Last(topic)
		if !ok {
			return ""
		}
		return string(m.Payload)
	}
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
	cl := mqtt.NewClient(creds(mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("between")))
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer cl.Disconnect(50)
	if tok := cl.Publish("posed/test/set/detect", 1, false, "OFF"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	time.Sleep(300 * time.Millisecond) // the broker delivers it to whoever subscribes
	second := runOnce(*r.next)
	col.WaitFor(t, "detect OFF after the reload", 20*time.Second, func([]mqtttest.Msg) bool {
		return last("posed/test/detect") == "OFF" && last("posed/test/state") != ""
	})
	if n := drops.Load(); n != 0 {
		t.Errorf("the collector's connection to the broker was lost %d times through the reload", n)
	}
	cancel()
	if r := <-second; r.err != nil && r.err != context.Canceled {
		t.Fatal(r.err)
	}
	if kind == "embedded" {
		return // the broker went with posed: no offline to read
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

// The embedded broker is kept through a reload only where the new
// configuration asks for the same one: the same address, users, device
// (its topics) and posed client. A reload that changes the readers' file
// starts a new broker, which admits the new reader.
func TestEmbeddedBrokerKeptOnlyWhenUnchanged(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "readers")
	if err := os.WriteFile(users, []byte("ha:ha-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := config.Default().MQTT
	m.Broker, m.Listen, m.EmbeddedUsers = "embedded", mqtttest.FreeAddr(t), users
	var c carried
	defer c.shutdownHeld()
	run := m
	b, err := c.embedded(&run, "test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if kept, ok := c.keeps(m, "test"); !ok || kept.Username != run.Username || kept.Password != run.Password || kept.ClientID != run.ClientID {
		t.Errorf("the same configuration: kept %v, with posed's credentials and id %v", ok, kept.ClientID == run.ClientID)
	}
	for _, change := range []struct {
		what   string
		m      func(config.MQTT) config.MQTT
		device string
	}{
		{"another address", func(m config.MQTT) config.MQTT { m.Listen = mqtttest.FreeAddr(t); return m }, "test"},
		{"another device", func(m config.MQTT) config.MQTT { return m }, "other"},
		{"a client id of its own", func(m config.MQTT) config.MQTT { m.ClientID = "mine"; return m }, "test"},
		{"anonymous readers refused", func(m config.MQTT) config.MQTT { m.EmbeddedAnonymous = !m.EmbeddedAnonymous; return m }, "test"},
	} {
		if _, ok := c.keeps(change.m(m), change.device); ok {
			t.Errorf("%s: the running broker kept", change.what)
		}
	}
	if err := os.WriteFile(users, []byte("ha:ha-secret\nnew:new-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.keeps(m, "test"); ok {
		t.Fatal("a changed readers' file: the running broker kept")
	}
	next := m
	b2, err := c.embedded(&next, "test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if b2 == b {
		t.Fatal("the readers' file changed and the broker was not started again")
	}
	cl := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + m.Listen).SetClientID("new").SetUsername("new").SetPassword("new-secret"))
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("the new reader cannot log in to the new broker: %v", tok.Error())
	}
	cl.Disconnect(50)
}
