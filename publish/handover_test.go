package publish

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/broker"
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
	waitSubscribed(t, p)
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
	var kept []Command
	wait.Until(10*time.Second, func() bool {
		p.handover.mu.Lock()
		defer p.handover.mu.Unlock()
		kept = append(kept[:0], p.handover.cmds...)
		return len(kept) > 0
	})
	if len(kept) != 1 || string(kept[0].Payload) != "ON" || kept[0].At.Before(sent.Add(-time.Second)) || calls.Load() != 1 {
		t.Errorf("after the hold: kept %v, %d calls of the handler", kept, calls.Load())
	}
}

// withArrived has the publisher call f as each command arrives, before it
// is queued: in order, on the connection's delivery, as a loaded machine
// delays it.
func withArrived(f func()) Option { return func(p *Publisher) { p.handover.arrived = f } }

// A reload's handover hands over exactly the commands the old connection
// alone received, however late it delivers them: here the old
// connection's delivery is held up until after the new one has
// subscribed (a loaded machine: #55 lost commands sent 1–2 ms before the
// new subscription, which the old connection delivered after it). Each
// command is carried out once, in the order sent: the three routed to the
// old connection alone, the two routed to both, the one sent after.
func TestTakeOverHandsOverLateCommandsOnce(t *testing.T) {
	broker := mqtttest.Start(t)
	var log commandLog
	record := log.handler
	gate := make(chan struct{})
	var late atomic.Int32
	old, err := New(testMQTT(broker.Addr()), "cam", quiet(), nil, WithCommands(record("old")), withArrived(func() {
		late.Add(1)
		<-gate
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(old, time.Second)
	waitSubscribed(t, old)
	old.Hold(context.Background())
	c := mqtttest.Connect(t, broker.Addr(), "sender")
	send := func(payloads ...string) { t.Helper(); sendPings(t, c, payloads...) }
	send("1", "2", "3") // the old connection's alone; its delivery waits at the gate
	next, err := New(testMQTT(broker.Addr()), "cam", quiet(), nil, WithCommands(record("new")), WithHeld(true))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(next, time.Second)
	waitSubscribed(t, next)
	send("4", "5") // both connections'
	go func() {
		time.Sleep(300 * time.Millisecond) // after the new connection subscribed: the cut by the clock was here
		close(gate)
	}()
	if n := next.TakeOver(context.Background(), old); n != 3 {
		t.Errorf("TakeOver carried out %d of the old connection's commands, want 3", n)
	}
	send("6")
	want := []string{"new:1", "new:2", "new:3", "new:4", "new:5", "new:6"}
	if got := log.wait(len(want)); !slices.Equal(got, want) {
		t.Errorf("commands carried out %v, want %v", got, want)
	}
	if late.Load() < 3 {
		t.Errorf("the old connection delivered %d commands, want the 5 sent before the barrier", late.Load())
	}
}

// waitSubscribed waits until p has subscribed to its commands.
func waitSubscribed(t *testing.T, p *Publisher) {
	t.Helper()
	select {
	case <-p.subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher did not subscribe to its commands")
	}
}

// sessionBrokers start a broker for the tests of a configured client id's
// session, mosquitto and the embedded one, with posed's settings for it
// and a client that may send posed commands.
var sessionBrokers = []struct {
	name  string
	start func(t *testing.T) (cfg Settings, sender mqtt.Client)
}{
	{"mosquitto", func(t *testing.T) (Settings, mqtt.Client) {
		m := mqtttest.Start(t)
		return testMQTT(m.Addr()), mqtttest.Connect(t, m.Addr(), "sender")
	}},
	{"embedded", func(t *testing.T) (Settings, mqtt.Client) {
		addr := mqtttest.FreeAddr(t)
		a := broker.Auth{PosedUser: "posed", PosedPassword: "posed-pw", Readers: map[string]string{"ha": "ha-pw"},
			Topics: OwnTopics(DefaultSettings(), "cam"), Commands: []string{"posed/cam/set/#"}, PosedClientID: "posed-cam-fixed"}
		b, err := broker.Start(addr, a, quiet())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		cfg := testMQTT(addr)
		cfg.Username, cfg.Password = "posed", "posed-pw"
		c, ok := client(t, addr, "ha", "ha-pw")
		if !ok {
			t.Fatal("the sender cannot log in to the embedded broker")
		}
		return cfg, c
	}},
}

// With a configured client id the two connections of a reload cannot
// overlap (one id, one connection), so the session is persistent: a
// command sent after the old connection has left and before the new one
// has connected waits at the broker and is carried out by the new run,
// after the old run's held ones, each once and in order (before, the old
// connection ended before the new run connected, and a command sent in
// that quarter of a second was lost: #55). Against mosquitto and against
// the embedded broker.
func TestSessionHandoverKeepsCommandsBetweenConnections(t *testing.T) {
	for _, b := range sessionBrokers {
		t.Run(b.name, func(t *testing.T) {
			cfg, c := b.start(t)
			cfg.ClientID = "posed-cam-fixed"
			var log commandLog
			record := log.handler
			old, err := New(cfg, "cam", quiet(), nil, WithCommands(record("old")))
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(old, time.Second)
			waitSubscribed(t, old)
			send := func(payloads ...string) { t.Helper(); sendPings(t, c, payloads...) }
			send("1") // carried out by the old run
			wait.Until(10*time.Second, func() bool { return len(log.carried()) == 1 })
			old.Hold(context.Background())
			send("2", "3") // held by the old connection
			wait.Until(10*time.Second, func() bool {
				old.handover.mu.Lock()
				defer old.handover.mu.Unlock()
				return len(old.handover.cmds) == 2
			})
			next, err := New(cfg, "cam", quiet(), nil, WithCommands(record("new")), WithHeld(true), func(p *Publisher) {
				// Neither connection up: what the broker keeps for the session.
				p.handover.beforeConnect = func() { send("4", "5") }
			})
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(next, time.Second)
			select {
			case <-next.tried:
				t.Fatal("the new publisher connected while the old one had the id")
			case <-time.After(200 * time.Millisecond):
			}
			if n := next.TakeOver(context.Background(), old); n != 2 {
				t.Errorf("TakeOver carried out %d of the old connection's commands, want 2", n)
			}
			send("6")
			want := []string{"old:1", "new:2", "new:3", "new:4", "new:5", "new:6"}
			got := log.wait(len(want))
			if b.name == "embedded" && len(got) == len(want) {
				// mochi-mqtt resends a resumed session's messages sorted by
				// the second they came in, unstably: two sent within one
				// second of the gap may swap (docs/internals.md).
				slices.Sort(got[3:5])
			}
			if !slices.Equal(got, want) {
				t.Errorf("commands carried out %v, want %v", got, want)
			}
		})
	}
}

// A configured client id's session outlives posed at the broker, but a
// start carries out no command sent while posed was not running, as
// without a client id: commands are actions for a running posed. Against
// mosquitto and the embedded broker; there the start's clean connection
// is taken over by the persistent one, never left before it (leaving
// first raced mochi-mqtt into deleting the new connection's client).
func TestStartClearsTheSessionLeftBehind(t *testing.T) {
	for _, b := range sessionBrokers {
		t.Run(b.name, func(t *testing.T) {
			cfg, c := b.start(t)
			cfg.ClientID = "posed-cam-fixed"
			var calls atomic.Int32
			count := func(string, []byte) (message.Reply, error) { calls.Add(1); return message.Reply{}, nil }
			first, err := New(cfg, "cam", quiet(), nil, WithCommands(count))
			if err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, first)
			if err := shutdown(first, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			sendPings(t, c, "stale")
			second, err := New(cfg, "cam", quiet(), nil, WithCommands(count))
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(second, time.Second)
			waitSubscribed(t, second)
			sendPings(t, c, "fresh")
			wait.Until(10*time.Second, func() bool { return calls.Load() >= 1 })
			time.Sleep(200 * time.Millisecond) // the stale one would have come first
			if n := calls.Load(); n != 1 {
				t.Errorf("%d commands carried out after the start, want 1 (the one sent to the running posed)", n)
			}
		})
	}
}

// commandLog records the commands carried out ("who:payload"), in order.
type commandLog struct {
	mu  sync.Mutex
	ran []string
}

// handler is a command handler that records its commands as who's.
func (l *commandLog) handler(who string) CommandHandler {
	return func(_ string, payload []byte) (message.Reply, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ran = append(l.ran, who+":"+string(payload))
		return message.Reply{}, nil
	}
}

// carried is what was carried out so far.
func (l *commandLog) carried() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ran)
}

// wait returns what was carried out once there are n, or after 10 s, and
// a moment more: a command carried out twice would come then.
func (l *commandLog) wait(n int) []string {
	wait.Until(10*time.Second, func() bool { return len(l.carried()) >= n })
	time.Sleep(100 * time.Millisecond)
	return l.carried()
}

// sendPings sends a set/ping command of each payload to device cam, in
// order, each acknowledged by the broker.
func sendPings(t *testing.T, c mqtt.Client, payloads ...string) {
	t.Helper()
	for _, pl := range payloads {
		if tok := c.Publish("posed/cam/set/ping", 1, false, pl); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("send %s: %v", pl, tok.Error())
		}
	}
}
