package publish

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/mqtttest"
)

// pubPacket is a PUBLISH as paho's own packets package writes it.
func pubPacket(t testing.TB, topic string, qos byte, id uint16, payload []byte) []byte {
	p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	p.TopicName, p.Qos, p.MessageID, p.Payload = topic, qos, id, payload
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readThrough runs stream through a limitConn (max bytes) and returns the
// packets paho's reader makes of it.
func readThrough(t testing.TB, stream []byte, max int) []packets.ControlPacket {
	a, b := net.Pipe()
	go func() { a.Write(stream); a.Close() }()
	c := newLimitConn(b, max)
	var out []packets.ControlPacket
	for {
		p, err := packets.ReadPacket(c)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %d packets: %v", len(out), err)
		}
		out = append(out, p)
	}
}

// Packets up to the limit pass unchanged; a longer PUBLISH reaches paho
// with its topic, QoS and id and the replacement payload naming its size.
func TestLimitConnRewrites(t *testing.T) {
	var stream []byte
	stream = append(stream, pubPacket(t, "posed/x/set/detect", 1, 7, []byte("OFF"))...)
	stream = append(stream, pubPacket(t, "posed/x/set/zero", 1, 8, bytes.Repeat([]byte("z"), 300000))...)
	stream = append(stream, pubPacket(t, "posed/x/set/reload", 0, 0, bytes.Repeat([]byte("r"), 300))...)
	ping := packets.NewControlPacket(packets.Pingresp)
	var pb bytes.Buffer
	ping.Write(&pb)
	stream = append(stream, pb.Bytes()...)
	got := readThrough(t, stream, 256)
	if len(got) != 4 {
		t.Fatalf("%d packets", len(got))
	}
	p0 := got[0].(*packets.PublishPacket)
	if p0.TopicName != "posed/x/set/detect" || string(p0.Payload) != "OFF" || p0.MessageID != 7 {
		t.Errorf("small packet changed: %v", p0)
	}
	p1 := got[1].(*packets.PublishPacket)
	if n, ok := oversizedSize(p1.Payload); !ok || n != 300000 || p1.TopicName != "posed/x/set/zero" || p1.MessageID != 8 || p1.Qos != 1 {
		t.Errorf("oversized packet: topic %q id %d qos %d payload %q", p1.TopicName, p1.MessageID, p1.Qos, p1.Payload)
	}
	if n, ok := oversizedSize(got[2].(*packets.PublishPacket).Payload); !ok || n != 300 {
		t.Errorf("QoS 0 oversized packet: %q", got[2].(*packets.PublishPacket).Payload)
	}
	if _, ok := got[3].(*packets.PingrespPacket); !ok {
		t.Errorf("last packet %T", got[3])
	}
}

// Whatever the broker sends, the limitConn never panics, and a stream of
// well-formed packets reads back as the same packets (payloads over the
// limit replaced).
func FuzzLimitConn(f *testing.F) {
	f.Add([]byte("OFF"), uint16(3), byte(1), 8)
	f.Add(bytes.Repeat([]byte("x"), 500), uint16(9), byte(0), 100)
	f.Fuzz(func(t *testing.T, payload []byte, id uint16, qos byte, max int) {
		qos %= 3
		if id == 0 {
			id = 1
		}
		max = max%2000 + 1
		one := pubPacket(t, "a/b", qos, id, payload)
		got := readThrough(t, append(one, one...), max)
		if len(got) != 2 {
			t.Fatalf("%d packets", len(got))
		}
		remaining := 2 + len("a/b") + len(payload)
		if qos > 0 {
			remaining += 2
		}
		for _, g := range got {
			p := g.(*packets.PublishPacket)
			n, replaced := oversizedSize(p.Payload)
			switch {
			case remaining > max && (!replaced || n != len(payload)):
				t.Fatalf("a packet of %d > %d bytes passed as %q", remaining, max, p.Payload)
			case remaining <= max && !bytes.Equal(p.Payload, payload):
				t.Fatalf("payload changed: %q", p.Payload)
			}
			if p.TopicName != "a/b" || p.Qos != qos {
				t.Fatalf("header changed: %v", p)
			}
		}
	})
}

// A 20 MB command from a real broker is refused with its size, and posed
// never holds it: its process allocates far less than the payload while
// the command goes by (paho alone would read all of it into memory).
// (Failed before: the payload was read, copied and queued.)
func TestLargeCommandNotHeld(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "posed/cam/error")
	var mu sync.Mutex
	var done []string
	p, err := New(testMQTT(broker.Addr()), "cam", quiet(), nil, WithCommands(func(name string, _ []byte) (message.Reply, error) {
		if name == "probe" {
			return message.Reply{}, errors.New("a probe")
		}
		mu.Lock()
		done = append(done, name)
		mu.Unlock()
		return message.Reply{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, 2*time.Second)
	cl := mqtttest.Connect(t, broker.Addr(), "big")
	// Posed has subscribed once an unknown command is refused.
	col.WaitFor(t, "the subscription", 20*time.Second, func(ms []mqtttest.Msg) bool {
		if len(ms) == 0 {
			cl.Publish("posed/cam/set/probe", 1, false, "x").WaitTimeout(time.Second)
		}
		return len(ms) > 0
	})
	const size = 20 << 20
	payload := bytes.Repeat([]byte("x"), size)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cl.Publish("posed/cam/set/detect", 1, false, payload).WaitTimeout(10 * time.Second)
	// Found by its text: a probe sent while the subscription was awaited
	// may be answered late.
	var refusal string
	col.WaitFor(t, "the refusal", 10*time.Second, func(ms []mqtttest.Msg) bool {
		for _, m := range ms {
			if e := string(m.Payload); !strings.Contains(e, `"command":"probe"`) {
				refusal = e
				return true
			}
		}
		return false
	})
	runtime.ReadMemStats(&after)
	// The sender's own client copies its payload into a packet: allow
	// that copy, not a second one on posed's side.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > size+size/2 {
		t.Errorf("allocated %d MB while a %d MB command went by", grown>>20, size>>20)
	}
	if !strings.Contains(refusal, "20971520 bytes refused") {
		t.Errorf("refusal: %s", refusal)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(done) != 0 {
		t.Errorf("carried out: %v", done)
	}

}
