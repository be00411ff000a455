package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/pipeline/assemble"
)

// make install leaves the configuration (which may hold an MQTT password)
// readable by its owner and group only, and the daemon executable,
// whatever the installer's umask.
func TestInstallPermissions(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, umask := range []string{"000", "077"} {
		dest := t.TempDir()
		cmd := exec.Command("sh", "-c", "umask "+umask+" && make -s -C ../.. install DESTDIR="+dest+" PREFIX=/usr")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("umask %s: make install: %v\n%s", umask, err, out)
		}
		for _, c := range []struct {
			path string
			mode os.FileMode
		}{
			{"etc/posed", 0o750 | os.ModeDir},
			{"etc/posed/posed.yaml", 0o640},
			{"usr/bin/posed", 0o755},
			{"usr/share/posed/default.gllim", 0o644},
			{"usr/share/posed/default-profile.gllim", 0o644},
			{"usr/lib/sysusers.d/posed.conf", 0o644},
			{"usr/lib/tmpfiles.d/posed.conf", 0o644},
			{"lib/systemd/system/posed.service", 0o644},
			{"lib/systemd/system/posed@.service", 0o644},
		} {
			st, err := os.Stat(filepath.Join(dest, c.path))
			if err != nil {
				t.Errorf("umask %s: %v", umask, err)
				continue
			}
			if st.Mode() != c.mode {
				t.Errorf("umask %s: %s is %v, want %v", umask, c.path, st.Mode(), c.mode)
			}
		}
	}
}

// The template unit posed@.service is posed.service but for its instance:
// its config file, state directory, description and comment. The two
// cannot drift apart in their hardening or watchdog.
func TestTemplateUnitMatches(t *testing.T) {
	one, err := os.ReadFile("../../systemd/posed.service")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("../../systemd/posed@.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := func(b []byte) map[string]string {
		out := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				out[k] += v + "\n"
			}
		}
		return out
	}
	a, b := settings(one), settings(tmpl)
	want := map[string]string{
		"ExecStart":      "/usr/local/bin/posed -config /etc/posed/%i.yaml\n",
		"StateDirectory": "posed/%i\n",
	}
	for k, v := range a {
		w, special := want[k]
		switch {
		case k == "Description":
			if !strings.Contains(b[k], "%i") {
				t.Errorf("posed@.service: Description %q does not name the instance", b[k])
			}
		case special:
			if b[k] != w {
				t.Errorf("posed@.service: %s=%q, want %q", k, b[k], w)
			}
		case b[k] != v:
			t.Errorf("posed@.service: %s=%q, posed.service has %q", k, b[k], v)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("posed@.service sets %s, posed.service does not", k)
		}
	}
	if !strings.Contains(string(one), "ExecReload=/bin/kill -HUP $MAINPID") {
		t.Error("posed.service has no ExecReload sending SIGHUP")
	}
}

// What posed ships of learnt data — the model, its profile expert, the
// cascades and the face network's weights — fits in 6 MiB together (the budget of a small board's
// image), and the model and expert load as a pair.
func TestShippedDataWithinBudget(t *testing.T) {
	total := int64(0)
	for _, f := range []string{"models/default.gllim", "models/default-profile.gllim", "infer/detect/cascade/facefinder", "infer/detect/cascade/turned", "infer/yunet/weights/yunet.bin"} {
		st, err := os.Stat(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if total > 6<<20 {
		t.Errorf("model, expert, cascades and network weigh %d bytes, more than 6 MiB", total)
	}
	cfg := config.Default().Model
	cfg.Path = filepath.Join("..", "..", "models", "default.gllim")
	if cfg.ExpertPath() == "" {
		t.Fatal("the default model's expert is not found beside it")
	}
	if _, _, err := assemble.Estimator(cfg, config.Default().Research); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of %d", total, 6<<20)
}
