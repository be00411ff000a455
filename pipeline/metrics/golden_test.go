package metrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what posed writes now (go test -update rewrites it if the change is meant):\n%s", path, diffLines(want, got))
	}
}

// diffLines lists the lines of b not in a (+) and of a not in b (−).
func diffLines(a, b []byte) string {
	in := func(x []byte) map[string]bool {
		m := map[string]bool{}
		for _, l := range bytes.Split(x, []byte("\n")) {
			m[string(l)] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var out bytes.Buffer
	for _, l := range bytes.Split(a, []byte("\n")) {
		if !inb[string(l)] {
			out.WriteString("- " + string(l) + "\n")
		}
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !ina[string(l)] {
			out.WriteString("+ " + string(l) + "\n")
		}
	}
	return out.String()
}

var (
	sampleValue = regexp.MustCompile(`(?m)^([a-z_]+(\{[^}]*\})?) \S+$`)
	goVersion   = regexp.MustCompile(`"go[0-9][^"]*"`)
)

// The /metrics exposition as Prometheus scrapes it: every family's name,
// help, type and labels (values, which move, are replaced by V). A rename
// or a changed type breaks someone's dashboards and alerts: it must be
// meant.
func TestExpositionGolden(t *testing.T) {
	m := New(Sources{
		MQTT:             func() (uint64, uint64, bool) { return 10, 1, true },
		Events:           func() (int, uint64) { return 3, 2 },
		RepliesDropped:   func() uint64 { return 233 },
		AttentionSeconds: func() []Figure { return []Figure{{"road", 12.5}, {"none", 3}, {"unknown", 0}} },
		AttentionEvents:  func() []Figure { return []Figure{{"long_distraction", 1}, {"engagement", 0}} },
	})
	m.Stages[StageDetect].Observe(3 * time.Millisecond)
	var b bytes.Buffer
	m.WriteText(&b, "test")
	out := sampleValue.ReplaceAll(b.Bytes(), []byte("$1 V"))
	golden(t, "metrics.golden", goVersion.ReplaceAll(out, []byte(`"GOVERSION"`)))
}
