package publish

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/publish/mqtttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The Home Assistant discovery documents posed announces, as Home
// Assistant parses them: every entity's topic and configuration. A changed
// unique_id or topic makes a user's dashboards and automations lose their
// entities: it must be meant (go test -update rewrites the file).
func TestDiscoveryGolden(t *testing.T) {
	cfg := testMQTT(mqtttest.FreeAddr(t)) // no broker: the documents are made at New
	cfg.Discovery = true
	p, err := New(cfg, "cam", quiet(), nil, WithVersion("1.2.3"), WithConfigURL("http://cam.local:9464/"),
		WithCommands(func(string, []byte) (message.Reply, error) { return message.Reply{}, nil }),
		WithAttention(message.AttentionInfo{Profile: "driver", Targets: []string{"camera", "mirror", "road"},
			States: []string{"attentive", "glancing", "distracted", "unresponsive"},
			Events: []string{message.EventLongDistraction, message.EventTimeSharing, message.EventUnresponsive, message.EventUnmonitored}}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(p, 100*time.Millisecond)
	var b bytes.Buffer
	p.mu.Lock()
	for _, topic := range slices.Sorted(slices.Values(p.announced)) {
		var doc any
		if err := json.Unmarshal(p.retained[topic], &doc); err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		out, _ := json.MarshalIndent(doc, "", "  ")
		b.WriteString(topic + "\n" + string(out) + "\n\n")
	}
	p.mu.Unlock()
	path := filepath.Join("testdata", "discovery.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the discovery documents differ from %s (go test -update rewrites it if the change is meant):\n%s", path, b.String())
	}
}
