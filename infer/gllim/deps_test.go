package gllim_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The daemon links the forward model only: package gllim (and everything
// under infer/) must not pull in the trainer or gonum.
func TestInferDoesNotImportTrainer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/edgepose/posed/infer/...").CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and go list failed: %v: %s", err, out)
		}
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "gonum.org/") || dep == "github.com/edgepose/posed/train" {
			t.Errorf("infer/ depends on %s", dep)
		}
	}
}
