package broker

import (
	"io"
	"log/slog"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/publish/mqtttest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The broker's close waits until posed's own client has left the
// broker's books before closing (mochi-mqtt's close deadlocked, about
// once in 2000 stops, when a client left as it closed: #55), and is
// bounded: 100 stops right after posed's client disconnects each end at
// once, the client gone from the broker before it closes.
func TestEmbeddedBrokerCloseAfterPosedLeaves(t *testing.T) {
	for i := range 100 {
		addr := mqtttest.FreeAddr(t)
		a := Auth{PosedUser: "posed", PosedPassword: "pw", PosedClientID: "posed-own"}
		b, err := Start(addr, a, quiet())
		if err != nil {
			t.Fatal(err)
		}
		c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("posed-own").
			SetUsername("posed").SetPassword("pw").SetAutoReconnect(false))
		if tok := c.Connect(); !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
			t.Fatalf("stop %d: posed's client did not connect: %v", i, tok.Error())
		}
		c.Disconnect(0)
		t0 := time.Now()
		if err := b.Close(); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if d := time.Since(t0); d > ownLeave {
			t.Fatalf("stop %d: the close took %v", i, d)
		}
		if _, ok := b.srv.Clients.Get("posed-own"); ok {
			t.Fatalf("stop %d: posed's client still on the broker's books after the close", i)
		}
	}
}
