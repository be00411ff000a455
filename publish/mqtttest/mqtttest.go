// Package mqtttest runs the real parts that posed's MQTT tests need: a
// mosquitto broker on a free loopback port, an independent client that
// records what is published, and the compiled JSON Schemas of the
// messages. It is for tests only; the daemon does not import it.
package mqtttest

import (
	"bytes"
	"fmt"
	"github.com/edgepose/posed/internal/wait"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/edgepose/posed/message"
)

// Mosquitto is a real broker, without persistence, on a free loopback port.
type Mosquitto struct {
	t    testing.TB
	bin  string
	port int
	conf string
	cmd  *exec.Cmd
	out  bytes.Buffer
}

// Start starts mosquitto accepting anonymous clients. Without mosquitto
// installed the test is skipped, or fails when CI is set (CI installs it).
func Start(t testing.TB) *Mosquitto {
	t.Helper()
	return StartWith(t, "allow_anonymous true\n")
}

// StartWith starts mosquitto with extra configuration lines for its
// listener (TLS files, password file, …).
func StartWith(t testing.TB, extra string) *Mosquitto {
	t.Helper()
	bin := Lookup(t, "mosquitto")
	_, ps, _ := net.SplitHostPort(FreeAddr(t))
	port, _ := strconv.Atoi(ps)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\npersistence false\n%s", port, extra)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Mosquitto{t: t, bin: bin, port: port, conf: conf}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// FreeAddr is a local host:port free when it is asked for.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Lookup finds one of mosquitto's programs on PATH or in /usr/sbin.
func Lookup(t testing.TB, name string) string {
	t.Helper()
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	bin := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (.ci/run installs the Debian package mosquitto)", name)
	}
	t.Skipf("%s is not installed: apt-get install mosquitto", name)
	return ""
}

// Start (re)starts the broker process and waits until it listens.
func (m *Mosquitto) Start() {
	m.t.Helper()
	m.out.Reset()
	m.cmd = exec.Command(m.bin, "-c", m.conf)
	m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	listening := wait.Until(2*time.Second, func() bool {
		c, err := net.Dial("tcp", m.Addr())
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if listening {
		return
	}
	m.Stop()
	m.t.Fatalf("mosquitto did not start listening:\n%s", m.out.String())
}

// Stop kills the broker (SIGKILL: no goodbye to its clients).
func (m *Mosquitto) Stop() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
		m.cmd = nil
	}
}

// Freeze stops the broker (SIGSTOP) without closing its connections: a
// broker that hangs, whose clients wait for acknowledgements that do not
// come. Thaw (SIGCONT) lets it go on; Stop ends a frozen broker too.
func (m *Mosquitto) Freeze() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Thaw resumes a frozen broker.
func (m *Mosquitto) Thaw() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Restart kills the broker and starts it again on the same port; it has
// lost every retained message.
func (m *Mosquitto) Restart() {
	m.t.Helper()
	m.Stop()
	time.Sleep(300 * time.Millisecond)
	m.Start()
}

// Addr is the broker's host:port.
func (m *Mosquitto) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.port) }

// Connect connects a plain MQTT client with id to the broker at addr,
// ending the test if it cannot; the client disconnects when the test ends.
func Connect(t testing.TB, addr, id string) mqtt.Client {
	t.Helper()
	cl := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id))
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("client %s cannot connect to %s: %v", id, addr, tok.Error())
	}
	t.Cleanup(func() { cl.Disconnect(50) })
	return cl
}

// Msg is one received message.
type Msg struct {
	Topic    string
	Payload  []byte
	Retained bool
	At       time.Time
}

// Collector is an independent MQTT client that records every message on
// a topic filter, and subscribes again after a reconnect.
type Collector struct {
	mu     sync.Mutex
	msgs   []Msg
	c      mqtt.Client
	filter string
	synced chan string // Sync's markers as they come back
}

// syncTopic is the last level of Sync's marker topic.
const syncTopic = "posed-test-sync"

// Collect subscribes to filter on the plain-TCP broker at addr.
func Collect(t testing.TB, addr, filter string) *Collector {
	t.Helper()
	return CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr), filter)
}

// CollectFrom is Collect with the caller's broker, credentials and TLS.
// It returns once the broker has acknowledged the subscription: a message
// published after it reaches the collector.
func CollectFrom(t testing.TB, o *mqtt.ClientOptions, filter string) *Collector {
	t.Helper()
	col := &Collector{filter: filter, synced: make(chan string, 8)}
	subscribed := make(chan struct{})
	var once sync.Once
	o.SetClientID(fmt.Sprintf("posed-test-collector-%d", time.Now().UnixNano())).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).
		SetMaxReconnectInterval(200 * time.Millisecond).
		SetOnConnectHandler(func(c mqtt.Client) {
			tok := c.Subscribe(filter, 1, func(_ mqtt.Client, m mqtt.Message) {
				if strings.HasSuffix(m.Topic(), "/"+syncTopic) || m.Topic() == syncTopic {
					col.synced <- string(m.Payload())
					return
				}
				col.mu.Lock()
				col.msgs = append(col.msgs, Msg{m.Topic(), append([]byte(nil), m.Payload()...), m.Retained(), time.Now()})
				col.mu.Unlock()
			})
			if tok.WaitTimeout(5*time.Second) && tok.Error() == nil {
				once.Do(func() { close(subscribed) })
			}
		})
	col.c = mqtt.NewClient(o)
	if tok := col.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("collector cannot connect: %v", tok.Error())
	}
	t.Cleanup(func() { col.c.Disconnect(100) })
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatalf("collector's subscription to %s not acknowledged in 10 s", filter)
	}
	return col
}

// Sync returns once every message the broker had routed to the collector
// before the call has arrived (the retained ones of its subscription
// among them): it publishes a marker under its filter (which must end in
// #) and waits for it to come back, the broker keeping one subscriber's
// messages in order. The marker is not collected.
func (c *Collector) Sync(t testing.TB) {
	t.Helper()
	prefix, ok := strings.CutSuffix(c.filter, "#")
	if !ok {
		t.Fatalf("Sync needs a filter ending in #, not %q", c.filter)
	}
	mark := fmt.Sprint(time.Now().UnixNano())
	if tok := c.c.Publish(prefix+syncTopic, 1, false, mark); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("sync marker not published: %v", tok.Error())
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.synced:
			if got == mark {
				return
			}
		case <-deadline:
			t.Fatalf("sync marker on %s not back in 10 s", prefix+syncTopic)
		}
	}
}

// All returns a copy of the messages so far.
func (c *Collector) All() []Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Msg(nil), c.msgs...)
}

// On returns the messages so far on one topic.
func (c *Collector) On(topic string) []Msg {
	var out []Msg
	for _, m := range c.All() {
		if m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

// Last returns the last message so far on one topic, and whether there
// was one. (Indexing On's result by the length of another call of On
// panics when a message arrives between the two.)
func (c *Collector) Last(topic string) (Msg, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Topic == topic {
			return c.msgs[i], true
		}
	}
	return Msg{}, false
}

// WaitFor polls until cond holds on the messages so far, and fails the
// test after d.
func (c *Collector) WaitFor(t testing.TB, what string, d time.Duration, cond func([]Msg) bool) {
	t.Helper()
	if !wait.UntilEvery(d, 50*time.Millisecond, func() bool { return cond(c.All()) }) {
		t.Fatalf("timed out after %v waiting for %s; %d messages so far", d, what, len(c.All()))
	}
}

// Schemas compiles the committed JSON Schema of each message kind: "pose",
// "state", "camera" and "stats".
func Schemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, name := range []string{"pose", "state", "camera", "stats", "ha", "error", "primary", "attention", "event"} {
		b, err := message.Schemas.ReadFile("schema/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		url := "mem://" + name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if out[name], err = c.Compile(url); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Validate checks that message m follows schema s.
func Validate(t testing.TB, s *jsonschema.Schema, m Msg) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.Payload))
	if err != nil {
		t.Fatalf("%s: %v", m.Topic, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not match its schema: %v\n%s", m.Topic, err, m.Payload)
	}
}

// Gate is a TCP proxy to a broker whose connections can be cut, as a
// network that fails cuts them (no MQTT DISCONNECT reaches the broker),
// and that can stay closed, refusing new connections, as a tunnel does,
// while the broker and its other clients go on.
type Gate struct {
	ln    net.Listener
	mu    sync.Mutex
	shut  bool
	conns []net.Conn
}

// NewGate starts a gate to the broker at target (host:port).
func NewGate(t testing.TB, target string) *Gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{ln: ln}
	t.Cleanup(func() { ln.Close(); g.Cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			shut := g.shut
			g.mu.Unlock()
			if shut {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, in, out)
			g.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return g
}

// Addr is the gate's host:port, for the client to connect to.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// Cut closes the connections through the gate; new ones get through.
func (g *Gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// Close cuts the connections and refuses new ones until Open.
func (g *Gate) Close() {
	g.mu.Lock()
	g.shut = true
	g.mu.Unlock()
	g.Cut()
}

// Open lets connections through again.
func (g *Gate) Open() {
	g.mu.Lock()
	g.shut = false
	g.mu.Unlock()
}
