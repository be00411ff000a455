package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/publish/mqtttest"
)

// get fetches url with a real HTTP client.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// /metrics, scraped from a running posed, parses as Prometheus text,
// passes the lint that `promtool check metrics` runs, and carries posed's
// counters and histograms, the Go runtime's and the process's metrics
// under their usual names, and the build info; / is a page naming the
// device.
func TestMetricsEndpoint(t *testing.T) {
	broker := mqtttest.Start(t)
	seq, _ := yawSequence(t)
	cfg := testConfig(t, seq, "tcp://"+broker.Addr())
	cfg.Source.Loop = true
	cfg.Metrics.Listen = mqtttest.FreeAddr(t)
	defer background(cfg)()
	base := "http://" + cfg.Metrics.Listen
	var text string
	code := 0
	if !wait.Until(20*time.Second, func() bool {
		code, text = 0, ""
		if resp, err := http.Get(base + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, text = resp.StatusCode, string(b)
		}
		return code == 200 && strings.Contains(text, "posed_frames_processed_total") && !strings.Contains(text, "posed_frames_processed_total 0\n")
	}) {
		t.Fatalf("no frame processed in 20 s: %d\n%s", code, text)
	}
	// The text format's types are lowercase words (promtool and expfmt
	// accept any case; other scrapers do not).
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			switch f := strings.Fields(rest); f[len(f)-1] {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				t.Errorf("%q: not a type of the text format", line)
			}
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not Prometheus text: %v", err)
	}
	value := func(name string) float64 {
		f, ok := fams[name]
		if !ok || len(f.Metric) == 0 {
			t.Errorf("no %s", name)
			return 0
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
		return 0
	}
	if v := value("posed_frames_processed_total"); v < 1 {
		t.Errorf("posed_frames_processed_total %g", v)
	}
	// Every counter of the frame path is there from the start, 0 or not
	// (value reports a missing one).
	for _, name := range []string{"posed_faces_total", "posed_detections_refused_total", "posed_detections_unconfirmed_total"} {
		value(name)
	}
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if v := value(name); v <= 0 {
			t.Errorf("%s = %g", name, v)
		}
	}
	// The process's resident memory agrees with the kernel's VmRSS (the
	// test and posed are one process), within the churn between reads.
	if rss, vm := value("process_resident_memory_bytes"), vmRSS(t); rss < 0.5*vm || rss > 2*vm {
		t.Errorf("process_resident_memory_bytes %g, VmRSS %g", rss, vm)
	}
	if start := value("process_start_time_seconds"); time.Since(time.Unix(int64(start), 0)) > time.Hour {
		t.Errorf("process_start_time_seconds %g is over an hour ago", start)
	}
	if f := fams["posed_build_info"]; f == nil || labelOf(f.Metric[0], "version") != version {
		t.Errorf("posed_build_info: %v", f)
	}
	if f := fams["posed_stage_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) != 4 {
		t.Errorf("posed_stage_seconds: %v", f)
	} else {
		for _, m := range f.Metric {
			prev := uint64(0)
			for _, b := range m.Histogram.Bucket {
				if b.GetCumulativeCount() < prev {
					t.Errorf("%s: buckets not cumulative", labelOf(m, "stage"))
				}
				prev = b.GetCumulativeCount()
			}
		}
	}
	code, page := get(t, base+"/")
	if code != 200 || !strings.Contains(page, "posed test") || !strings.Contains(page, "/metrics") {
		t.Errorf("/: %d\n%s", code, page)
	}
	if code, _ := get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d", code)
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// vmRSS reads this process's resident set from /proc/self/status.
func vmRSS(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
				return kb * 1024
			}
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
