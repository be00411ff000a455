package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
			{"usr/lib/sysusers.d/posed.conf", 0o644},
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
