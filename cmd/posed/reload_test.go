package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/publish/mqtttest"
)

// buildPosed builds the posed binary for tests that run it as a process.
func buildPosed(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "posed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startPosedYAML runs the posed binary with extra YAML after the basics.
func startPosedYAML(t *testing.T, bin, device, source, extra string) *exec.Cmd {
	model, _ := filepath.Abs(filepath.Join("..", "..", "models", "default.gllim"))
	cfg := filepath.Join(t.TempDir(), device+".yaml")
	y := fmt.Sprintf("device: %s\nsource: {path: %s, fps: 10, loop: true}\nmodel: {path: %s}\ndetect: {min_size: 40}\n%s", device, source, model, extra)
	os.WriteFile(cfg, []byte(y), 0o644)
	c := exec.Command(bin, "-config", cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// SIGHUP (systemd's ExecReload) reloads the configuration in the same
// process: a valid new one takes effect (here a new device id), with
// RELOADING=1 then READY=1 told to systemd; an invalid one is logged and
// the running configuration stays. SIGTERM then stops posed cleanly.
func TestReloadOnSIGHUP(t *testing.T) {
	broker := mqtttest.Start(t)
	col := mqtttest.Collect(t, broker.Addr(), "posed/+/available")
	seq, _ := yawSequence(t)
	model, err := filepath.Abs(filepath.Join("..", "..", "models", "default.gllim"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "posed.yaml")
	write := func(device string) {
		y := fmt.Sprintf("device: %s\nsource: {path: %s, fps: 10, loop: true}\nmodel: {path: %s}\nmqtt: {broker: tcp://%s}\nmetrics: {listen: \"\"}\n", device, seq, model, broker.Addr())
		if err := os.WriteFile(cfgFile, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mu sync.Mutex
	var notes []string
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			notes = append(notes, string(buf[:n]))
			mu.Unlock()
		}
	}()
	cmd := exec.Command(buildPosed(t), "-config", cfgFile)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var logs lockedBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	online := func(device string) func([]mqtttest.Msg) bool {
		return func(ms []mqtttest.Msg) bool {
			for _, m := range ms {
				if m.Topic == "posed/"+device+"/available" && string(m.Payload) == "online" {
					return true
				}
			}
			return false
		}
	}
	col.WaitFor(t, "device one online", 20*time.Second, online("one"))

	write("two")
	cmd.Process.Signal(syscall.SIGHUP)
	col.WaitFor(t, "device two online after SIGHUP", 20*time.Second, online("two"))
	last := func(device string) string {
		ms := col.On("posed/" + device + "/available")
		if len(ms) == 0 {
			return ""
		}
		return string(ms[len(ms)-1].Payload)
	}
	// The old publisher ends once the handover's barrier is back.
	col.WaitFor(t, "the old device id offline after the reload", 10*time.Second, func([]mqtttest.Msg) bool { return last("one") == "offline" })

	os.WriteFile(cfgFile, []byte("device: three\nmqtt: {qos: 7}\n"), 0o644)
	refusals := func() int { return strings.Count(logs.String(), "reload refused") }
	before := refusals()
	cmd.Process.Signal(syscall.SIGHUP)
	wait.For(t, 10*time.Second, "the invalid configuration refused", func() bool { return refusals() > before })
	if cmd.ProcessState != nil || last("two") != "online" {
		t.Errorf("an invalid configuration on SIGHUP stopped posed (available %q)", last("two"))
	}

	// A configuration whose model is cut short is valid YAML but cannot
	// start: refused before anything stops. (Before: posed stopped.)
	good, _ := os.ReadFile(model)
	short := filepath.Join(dir, "short.gllim")
	os.WriteFile(short, good[:len(good)/3], 0o644)
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("device: three\nsource: {path: %s, fps: 10, loop: true}\nmodel: {path: %s}\nmqtt: {broker: tcp://%s}\nmetrics: {listen: \"\"}\n", seq, short, broker.Addr())), 0o644)
	before = refusals()
	cmd.Process.Signal(syscall.SIGHUP)
	wait.For(t, 10*time.Second, "the truncated model refused", func() bool { return refusals() > before })
	if cmd.ProcessState != nil || last("two") != "online" || !strings.Contains(logs.String(), "model.path") {
		t.Errorf("a reload to a truncated model: available %q\n%s", last("two"), logs.String())
	}
	os.WriteFile(cfgFile, []byte("device: three\nmqtt: {qos: 7}\n"), 0o644)

	// The reload command does the same, and says why it refuses.
	errs := mqtttest.Collect(t, broker.Addr(), "posed/two/error")
	cl := mqtttest.Connect(t, broker.Addr(), "reloader")
	cl.Publish("posed/two/set/reload", 1, false, "PRESS").WaitTimeout(2 * time.Second)
	errs.WaitFor(t, "the refused reload command's error", 10*time.Second, func(ms []mqtttest.Msg) bool {
		return len(ms) > 0 && strings.Contains(string(ms[0].Payload), "mqtt.qos")
	})
	write("four")
	cl.Publish("posed/two/set/reload", 1, false, "PRESS").WaitTimeout(2 * time.Second)
	col.WaitFor(t, "device four online after the reload command", 20*time.Second, online("four"))

	// detect OFF sent 50 ms after a reload is not lost, and the switch
	// outlives the reload though there is no state directory. (Before:
	// lost silently, detection stayed on.)
	sw := mqtttest.Collect(t, broker.Addr(), "posed/four/#")
	onlineAgain := len(online4(col))
	cl.Publish("posed/four/set/reload", 1, false, "PRESS").WaitTimeout(2 * time.Second)
	time.Sleep(50 * time.Millisecond)
	cl.Publish("posed/four/set/detect", 1, false, "OFF").WaitTimeout(2 * time.Second)
	col.WaitFor(t, "online after the reload", 20*time.Second, func([]mqtttest.Msg) bool { return len(online4(col)) > onlineAgain })
	time.Sleep(time.Second)
	sw.WaitFor(t, "detect OFF after the reload", 10*time.Second, func(ms []mqtttest.Msg) bool {
		var last string
		for _, m := range ms {
			if m.Topic == "posed/four/detect" {
				last = string(m.Payload)
			}
		}
		return last == "OFF"
	})
	cl.Publish("posed/four/set/detect", 1, false, "ON").WaitTimeout(2 * time.Second)

	// A storm of SIGHUPs is coalesced: those that arrive while a restart
	// is under way join it, not one restart per signal. (Before:
	// 100 SIGHUPs logged 100 reloads, sent RELOADING=1 100 times and
	// restarted 13 times.)
	mu.Lock()
	notesBefore := len(notes)
	mu.Unlock()
	logsBefore := strings.Count(logs.String(), "reloading the configuration")
	write("five")
	for range 40 { // as a shell loop of kill -HUP sends them
		cmd.Process.Signal(syscall.SIGHUP)
		time.Sleep(10 * time.Millisecond)
	}
	col.WaitFor(t, "device five online after the storm", 20*time.Second, online("five"))
	time.Sleep(2 * time.Second)
	mu.Lock()
	reloads := strings.Count(strings.Join(notes[notesBefore:], "|"), "RELOADING=1")
	mu.Unlock()
	if lines := strings.Count(logs.String(), "reloading the configuration") - logsBefore; reloads > 5 || lines > 5 || reloads < 1 {
		t.Errorf("40 SIGHUPs in 0.4 s: %d RELOADING=1 and %d log lines, want a few restarts", reloads, lines)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("posed exited with %v after SIGTERM\n%s", err, logs.String())
	}
	out := logs.String()
	if !strings.Contains(out, "reload refused") || !strings.Contains(out, "mqtt.qos") {
		t.Errorf("the refused reload is not logged with its reason:\n%s", out)
	}
	// posed sent STOPPING=1 before it exited, but the reader above may not
	// have taken it from the socket yet on a busy machine.
	var got string
	wait.Until(5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		got = strings.Join(notes, "|")
		return strings.Contains(got, "STOPPING=1")
	})
	if i := strings.Index(got, "RELOADING=1"); i < 0 || !strings.Contains(got[i:], "READY=1") || !strings.Contains(got, "MONOTONIC_USEC=") || !strings.Contains(got, "STOPPING=1") {
		t.Errorf("sd_notify messages: %s", got)
	}
}

// lockedBuffer is a bytes.Buffer that a process writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// online4 is device four's "online" messages.
func online4(col *mqtttest.Collector) []mqtttest.Msg {
	var out []mqtttest.Msg
	for _, m := range col.On("posed/four/available") {
		if string(m.Payload) == "online" {
			out = append(out, m)
		}
	}
	return out
}
