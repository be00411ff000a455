package publish

import (
	"runtime"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/mqtttest"
)

// A frame's messages cost what paho's Publish costs and nothing more:
// posed encodes into recycled buffers, keeps no pointer to the message and
// waits on a reused timer. The floor is a bare paho client publishing the
// same two payloads at the same QoS and waiting for them, measured in the
// same run against the same broker.
func TestPoseAllocatesOnlyPahos(t *testing.T) {
	broker := mqtttest.Start(t)
	for _, qos := range []byte{0, 1} {
		cfg := testMQTT(broker.Addr())
		cfg.QoS = int(qos)
		cfg.HAInterval = time.Hour // one HA summary, at the first frame
		p, err := New(cfg, "cam", quiet(), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitConnected(t, p, 5*time.Second)
		m := onePose(1, 12.5)
		m.Faces = append(m.Faces, m.Faces[0])
		m.Faces[1].Track, m.Faces[1].Zones = 2, []string{"desk"}
		sent := func(n uint64) {
			for p.posePublished.Load() < n {
				runtime.Gosched()
			}
		}
		p.Pose(m, 0) // the first: its HA summary, the buffers' growth
		n := uint64(1)
		sent(n)
		posed := testing.AllocsPerRun(200, func() {
			m.Seq++
			p.Pose(m, 0)
			n++
			sent(n)
		})
		pose, prim := message.AppendPose(nil, m), message.AppendPrimary(nil, &message.Primary{Schema: 1, Device: "cam", Seq: m.Seq, Captured: m.Captured, Face: &m.Faces[0]})
		c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker("tcp://" + broker.Addr()).SetClientID("floor").SetOrderMatters(false))
		if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("floor client: %v", tok.Error())
		}
		floor := testing.AllocsPerRun(200, func() {
			c.Publish("posed/cam/pose", qos, false, pose).Wait()
			c.Publish("posed/cam/primary", qos, false, prim).Wait()
		})
		c.Disconnect(50)
		shutdown(p, time.Second)
		t.Logf("QoS %d: posed %.0f allocations per frame, paho alone %.0f", qos, posed, floor)
		if posed > floor {
			t.Errorf("QoS %d: a frame's messages cost %.0f allocations, paho's Publish alone %.0f", qos, posed, floor)
		}
	}
}
