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
// once in 2000 stops, when a client left as it closed: #55), and no
// longer than ownLeave: a client that leaves 200 ms into the close is
// waited for, one that never leaves is not waited for past ownLeave.
func TestEmbeddedBrokerCloseAfterPosedLeaves(t *testing.T) {
	for _, leaves := range []bool{true, false} {
		addr := mqtttest.FreeAddr(t)
		b, err := Start(addr, Auth{PosedUser: "posed", PosedPassword: "pw", PosedClientID: "posed-own"}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("posed-own").
			SetUsername("posed").SetPassword("pw").SetAutoReconnect(false))
		if tok := c.Connect(); !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
			t.Fatalf("posed's client did not connect: %v", tok.Error())
		}
		if leaves {
			go func() {
				time.Sleep(200 * time.Millisecond)
				c.Disconnect(0)
			}()
		}
		t0 := time.Now()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		switch {
		case leaves && d < 200*time.Millisecond:
			t.Errorf("the close took %v: it did not wait for posed's client to leave (200 ms)", d)
		case d > ownLeave+time.Second:
			t.Errorf("the close took %v (posed's client leaves: %v), past its bound", d, leaves)
		}
		if !leaves && d < ownLeave {
			t.Errorf("the close took %v with posed's client still there: it did not wait ownLeave", d)
		}
	}
}
