//go:build field

// Field measurements behind `make field` (not `make test`: minutes of
// wall time): broker restarts survived, and memory under a hostile replay.
// They run the built posed binary as a process, against a real mosquitto.

package main

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/publish/mqtttest"
)

// startPosed runs the posed binary on source with the broker at addr.
func startPosed(t *testing.T, bin, device, source, addr string) *exec.Cmd {
	model, _ := filepath.Abs(filepath.Join("..", "..", "models", "default.gllim"))
	cfg := filepath.Join(t.TempDir(), device+".yaml")
	y := fmt.Sprintf("device: %s\nsource: {path: %s, fps: 10, loop: true}\nmodel: {path: %s}\ndetect: {min_size: 40}\nmqtt: {broker: tcp://%s}\nmetrics: {listen: \"\"}\n",
		device, source, model, addr)
	os.WriteFile(cfg, []byte(y), 0o644)
	c := exec.Command(bin, "-config", cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// procStatus reads a kB field of /proc/<pid>/status.
func procStatus(pid int, key string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return -1
}

// Ten broker restarts, ten seconds of service apart: posed is back online
// after each, and its memory stays put.
func TestFieldBrokerRestarts(t *testing.T) {
	bin := buildPosed(t)
	broker := mqtttest.Start(t)
	seq, _ := yawSequence(t)
	p := startPosed(t, bin, "restart", seq, broker.Addr())
	online := func(col *mqtttest.Collector) bool {
		for _, m := range col.All() {
			if string(m.Payload) == "online" {
				return true
			}
		}
		return false
	}
	col := mqtttest.Collect(t, broker.Addr(), "posed/restart/available")
	col.WaitFor(t, "online", 20*time.Second, func([]mqtttest.Msg) bool { return online(col) })
	var took []string
	for i := 0; i < 10; i++ {
		time.Sleep(10 * time.Second)
		broker.Stop()
		time.Sleep(time.Second)
		t0 := time.Now()
		broker.Start()
		col := mqtttest.Collect(t, broker.Addr(), "posed/restart/available")
		col.WaitFor(t, fmt.Sprintf("online after restart %d", i+1), 60*time.Second, func([]mqtttest.Msg) bool { return online(col) })
		took = append(took, fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	}
	t.Logf("10/10 restarts: back online %s s after each; posed RSS %d kB", strings.Join(took, " "), procStatus(p.Process.Pid, "VmRSS"))
}

// A replay with a 9 KB JPEG whose header claims 60000×60000 and a real
// 10000×10000 JPEG among its frames costs no more than 2× the memory of
// the same replay without them.
func TestFieldHostileReplayRSS(t *testing.T) {
	bin := buildPosed(t)
	broker := mqtttest.Start(t)
	seq, _ := yawSequence(t)
	hostile := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(seq, "*.jpg"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(hostile, filepath.Base(f)), b, 0o644)
	}
	os.WriteFile(filepath.Join(hostile, "0005a-huge-header.jpg"), hugeHeaderJPEG(t), 0o644)
	big := image.NewGray(image.Rect(0, 0, 10000, 10000))
	for i := range big.Pix {
		big.Pix[i] = uint8(i * 7)
	}
	var b bytes.Buffer
	jpeg.Encode(&b, big, &jpeg.Options{Quality: 50})
	os.WriteFile(filepath.Join(hostile, "0010a-10000x10000.jpg"), b.Bytes(), 0o644)
	rss := func(name, src string) int {
		p := startPosed(t, bin, name, src, broker.Addr())
		time.Sleep(30 * time.Second)
		r := procStatus(p.Process.Pid, "VmRSS")
		t.Logf("%s: VmRSS %d kB, VmHWM %d kB after 30 s", name, r, procStatus(p.Process.Pid, "VmHWM"))
		p.Process.Kill()
		return r
	}
	normal, bad := rss("normal", seq), rss("hostile", hostile)
	if bad > 2*normal {
		t.Errorf("RSS %d kB with hostile frames, %d kB without: over 2×", bad, normal)
	}
}

// hugeHeaderJPEG is a 9 KB JPEG whose frame header says 60000×60000.
func hugeHeaderJPEG(t *testing.T) []byte {
	var small bytes.Buffer
	jpeg.Encode(&small, image.NewGray(image.Rect(0, 0, 16, 16)), nil)
	b := small.Bytes()
	for i := 0; i+8 < len(b); i++ { // SOF0: FF C0, length, precision, height, width
		if b[i] == 0xFF && b[i+1] == 0xC0 {
			b[i+5], b[i+6], b[i+7], b[i+8] = 0xEA, 0x60, 0xEA, 0x60
			break
		}
	}
	return append(b, make([]byte, 9000-len(b))...)
}
