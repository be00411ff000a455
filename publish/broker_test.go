package publish

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/broker"
	"github.com/edgepose/posed/publish/mqtttest"
)

// client connects a plain paho client as user (anonymous if ""), and
// reports whether the broker admitted it.
func client(t *testing.T, addr, user, pw string) (mqtt.Client, bool) {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("test-" + user + "-" + time.Now().Format("150405.000000000")).
		SetConnectTimeout(2 * time.Second).SetAutoReconnect(false)
	if user != "" {
		o.SetUsername(user).SetPassword(pw)
	}
	c := mqtt.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
		return c, false
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c, true
}

// The embedded broker lets only posed write its topics: anonymous clients
// and readers read them and cannot overwrite its retained messages;
// readers may use other topics freely, anonymous clients may write
// nothing (8 anonymous 50 MB retained messages took posed from 22 to
// 915 MB before); a packet over broker.MaxPacket is refused; a client
// giving posed's or a reader's name with a wrong password is refused;
// without anonymous access, a client must log in.
func TestEmbeddedBrokerAccess(t *testing.T) {
	addr := mqtttest.FreeAddr(t)
	a := broker.Auth{PosedUser: "posed", PosedPassword: "posed-pw", Readers: map[string]string{"ha": "ha-pw"}, Anonymous: true, Topics: OwnTopics(DefaultSettings(), "cam"), Commands: []string{"posed/cam/set/#"},
		Pictures: PictureTopics(DefaultSettings(), "cam")}
	b, err := broker.Start(addr, a, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := testMQTT(addr)
	cfg.Username, cfg.Password = "posed", "posed-pw"
	p, err := New(cfg, "cam", quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, time.Second)
	p.Retain(message.TopicState, map[string]string{"status": "running"})
	avail := func(who string, col *mqtttest.Collector) {
		col.WaitFor(t, who+" reads available online", 5*time.Second, func(ms []mqtttest.Msg) bool {
			return len(ms) > 0 && string(ms[len(ms)-1].Payload) == "online"
		})
	}
	avail("anonymous", mqtttest.Collect(t, addr, "posed/cam/available"))
	avail("reader", mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-pw"), "posed/cam/available"))

	for _, who := range [][2]string{{"", ""}, {"ha", "ha-pw"}} {
		c, ok := client(t, addr, who[0], who[1])
		if !ok {
			t.Fatalf("%q not admitted", who[0])
		}
		// Other topics first: the broker may drop a client that writes
		// where it must not.
		c.Publish("elsewhere/"+who[0], 1, true, "free").WaitTimeout(time.Second)
		c.Publish("posed/cam/available", 1, true, "offline").WaitTimeout(time.Second)
	}
	// A reader's collector, which may write its Sync marker: every
	// retained message has come once the marker is back.
	late := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-pw"), "#")
	late.Sync(t)
	got := map[string]string{}
	for _, m := range late.All() {
		got[m.Topic] = string(m.Payload)
	}
	if got["posed/cam/available"] != "online" {
		t.Errorf("retained available is %q: another client overwrote posed's", got["posed/cam/available"])
	}
	if got["elsewhere/ha"] != "free" {
		t.Errorf("other topics are not free to readers: %v", got)
	}
	if _, ok := got["elsewhere/"]; ok {
		t.Errorf("an anonymous client retained a message: %v", got)
	}
	// A reader's packet over the limit is refused unread, nothing retained.
	if c, ok := client(t, addr, "ha", "ha-pw"); ok {
		c.Publish("elsewhere/big", 1, true, make([]byte, broker.MaxPacket+1)).WaitTimeout(2 * time.Second)
	}
	big := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-pw"), "elsewhere/#")
	big.Sync(t) // every retained message under elsewhere/ has come
	if n := len(big.On("elsewhere/big")); n != 0 {
		t.Errorf("a packet over %d bytes was retained", broker.MaxPacket)
	}
	// Commands: readers may send them, anonymous clients may not.
	cmds := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("posed").SetPassword("posed-pw"), "posed/cam/set/#")
	for _, who := range [][2]string{{"", ""}, {"ha", "ha-pw"}} {
		if c, ok := client(t, addr, who[0], who[1]); ok {
			c.Publish("posed/cam/set/detect", 1, false, "OFF by "+who[0]).WaitTimeout(time.Second)
		}
	}
	// The anonymous client's command was sent, and answered or refused,
	// before the reader's: had the broker routed it, it would be here.
	cmds.WaitFor(t, "the reader's command", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) > 0 })
	if got := payloads(cmds.All()); len(got) != 1 || got[0] != "OFF by ha" {
		t.Errorf("commands that reached posed: %q, want only the reader's", got)
	}

	// Snapshots: the camera's pictures go to readers, not to anonymous
	// clients, which read the angles.
	anonPics := mqtttest.Collect(t, addr, "posed/cam/#")
	readerPics := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-pw"), "posed/cam/snapshot")
	p.Snapshot([]byte("\xff\xd8 a picture"))
	readerPics.WaitFor(t, "the reader's snapshot", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) > 0 })
	time.Sleep(200 * time.Millisecond)
	for _, m := range anonPics.All() {
		if m.Topic == "posed/cam/snapshot" {
			t.Errorf("an anonymous client got a snapshot")
		}
	}
	if len(anonPics.All()) == 0 {
		t.Errorf("the anonymous client read nothing of posed's topics")
	}

	for _, who := range [][2]string{{"posed", "guess"}, {"ha", "guess"}} {
		if _, ok := client(t, addr, who[0], who[1]); ok {
			t.Errorf("user %q with a wrong password admitted", who[0])
		}
	}

	addr2 := mqtttest.FreeAddr(t)
	a.Anonymous = false
	b2, err := broker.Start(addr2, a, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if _, ok := client(t, addr2, "", ""); ok {
		t.Error("anonymous client admitted with anonymous access off")
	}
	if _, ok := client(t, addr2, "ha", "ha-pw"); !ok {
		t.Error("reader refused")
	}
}

// Listening beyond loopback while admitting anonymous clients is warned of.
func TestEmbeddedBrokerWarnsWhenOpen(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	a := broker.Auth{PosedUser: "posed", PosedPassword: "pw", Anonymous: true, Topics: []string{"posed/x/#"}}
	b, err := broker.Start("0.0.0.0:0", a, log)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "beyond loopback and admits anonymous clients") {
		t.Errorf("no warning:\n%s", logs.String())
	}
	if _, err := broker.Start("127.0.0.1:0", broker.Auth{Anonymous: true}, quiet()); err == nil {
		t.Error("a broker without posed's own credentials started")
	}
	if _, err := broker.ReadUsers([]byte("ha:pw\nbroken\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ReadUsers of a bad line: %v", err)
	}
}

// ReadUsers never panics, and whatever it accepts has no empty user or
// password and no line it did not understand.
func FuzzReadUsers(f *testing.F) {
	f.Add([]byte("ha:pw\n# comment\n\nnode-red:s3cr:et\n"))
	f.Add([]byte(":\n"))
	f.Add([]byte("a:b\r\nc:d"))
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := broker.ReadUsers(data)
		if err != nil {
			return
		}
		for u, pw := range users {
			if u == "" || pw == "" || strings.Contains(u, "\n") {
				t.Fatalf("accepted user %q password %q from %q", u, pw, data)
			}
		}
	})
}

// withWill connects a paho client as user (anonymous if "") with id and a
// will (retained) on topic, and reports whether the broker admitted it.
func withWill(t *testing.T, addr, user, pw, id, topic, payload string) (mqtt.Client, bool) {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).
		SetConnectTimeout(2 * time.Second).SetAutoReconnect(false)
	if user != "" {
		o.SetUsername(user).SetPassword(pw)
	}
	if topic != "" {
		o.SetWill(topic, payload, 1, true)
	}
	c := mqtt.NewClient(o)
	tok := c.Connect()
	return c, tok.WaitTimeout(3*time.Second) && tok.Error() == nil
}

// The rules hold for wills and client ids too: an anonymous client may
// set no will (its will on set/detect turned the privacy switch back on
// when it dropped; retained wills spoofed posed's own topics), a reader
// may set one where it may write, not on posed's topics; posed's client id
// is refused from anyone else (the broker handed it over and disconnected
// posed); and anonymous clients do not read the commands others send.
func TestEmbeddedBrokerWillsAndIDs(t *testing.T) {
	addr := mqtttest.FreeAddr(t)
	a := broker.Auth{PosedUser: "posed", PosedPassword: "posed-pw", Readers: map[string]string{"ha": "ha-pw"}, Anonymous: true,
		Topics: OwnTopics(DefaultSettings(), "cam"), Commands: []string{"posed/cam/set/#"}, PosedClientID: "posed-cam-feedbeef"}
	b, err := broker.Start(addr, a, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := testMQTT(addr)
	cfg.Username, cfg.Password, cfg.ClientID = "posed", "posed-pw", "posed-cam-feedbeef"
	p, err := New(cfg, "cam", quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, time.Second)
	waitConnected(t, p, 5*time.Second)
	for _, c := range []struct {
		user, pw, id, will string
		ok                 bool
	}{
		{"", "", "anon-1", "posed/cam/set/detect", false},
		{"", "", "anon-2", "posed/cam/available", false},
		{"", "", "anon-3", "elsewhere/x", false}, // anonymous clients write nothing
		{"", "", "anon-4", "", true},
		{"ha", "ha-pw", "ha-1", "posed/cam/set/detect", true}, // readers send commands
		{"ha", "ha-pw", "ha-2", "posed/cam/available", false},
		{"ha", "ha-pw", "ha-3", "ha/status", true},
		{"", "", "posed-cam-feedbeef", "", false}, // posed's own, while it is connected
		{"ha", "ha-pw", "posed-cam-feedbeef", "", false},
		{"", "", "posed-cam-0a1b2c3d", "", true}, // another id of the same look is another client's
	} {
		cl, ok := withWill(t, addr, c.user, c.pw, c.id, c.will, "ON")
		if ok != c.ok {
			t.Errorf("user %q, id %q, will on %q: admitted %v, want %v", c.user, c.id, c.will, ok, c.ok)
		}
		if ok {
			cl.Disconnect(50)
		}
	}
	// Anonymous readers of everything do not see commands; readers do.
	anon := mqtttest.Collect(t, addr, "#")
	ha := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker("tcp://"+addr).SetUsername("ha").SetPassword("ha-pw"), "posed/cam/set/#")
	sender, ok := client(t, addr, "ha", "ha-pw")
	if !ok {
		t.Fatal("the reader cannot connect")
	}
	sender.Publish("posed/cam/set/speed", 1, false, "50").WaitTimeout(2 * time.Second)
	ha.WaitFor(t, "the reader sees the command", 5*time.Second, func(ms []mqtttest.Msg) bool { return len(ms) > 0 })
	if got := anon.On("posed/cam/set/speed"); len(got) != 0 {
		t.Errorf("an anonymous client read a command: %q", got[0].Payload)
	}
	// posed kept its id: the stranger's attempt did not disconnect it.
	if !p.connected.Load() || p.reconnects.Load() != 0 {
		t.Errorf("posed connected %v after %d reconnections", p.connected.Load(), p.reconnects.Load())
	}
}

// Where posed draws its client ids (no mqtt.client_id: each run its own,
// so that a reload's two connections overlap on a broker kept through
// it), the broker refuses every id of their look to anyone else, and
// admits them from posed.
func TestEmbeddedBrokerDrawnIDs(t *testing.T) {
	addr := mqtttest.FreeAddr(t)
	a := broker.Auth{PosedUser: "posed", PosedPassword: "posed-pw", Readers: map[string]string{"ha": "ha-pw"}, Anonymous: true,
		Topics: OwnTopics(DefaultSettings(), "cam"), Commands: []string{"posed/cam/set/#"}, PosedIDPrefix: ClientIDPrefix("cam")}
	b, err := broker.Start(addr, a, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		user, pw, id string
		ok           bool
	}{
		{"", "", NewClientID("cam"), false},
		{"ha", "ha-pw", NewClientID("cam"), false},
		{"posed", "posed-pw", NewClientID("cam"), true},
		{"posed", "posed-pw", NewClientID("cam"), true}, // a second run's, beside the first
		{"", "", NewClientID("other"), true},            // another device's look is not posed's here
		{"", "", ClientIDPrefix("cam") + "collector-1", true},
	} {
		cl, ok := withWill(t, addr, c.user, c.pw, c.id, "", "")
		if ok != c.ok {
			t.Errorf("user %q, id %q: admitted %v, want %v", c.user, c.id, ok, c.ok)
		}
		if ok {
			defer cl.Disconnect(50)
		}
	}
}
