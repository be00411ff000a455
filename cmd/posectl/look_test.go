package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// posectl look-train names what it lacks: the faces, the scenes, or
// faces in the folders given; and refuses a scene seen on no frame.
func TestLookTrainUsage(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"-scenes", empty},
		{"-data", empty},
		{"-data", filepath.Join(empty, "none"), "-scenes", empty},
	} {
		var out strings.Builder
		err := runLookTrain(args, &out)
		if err == nil {
			t.Errorf("%v: no error", args)
			continue
		}
		if len(args) == 2 && !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, n := range []string{"0", "-3"} {
		err := runLookTrain([]string{"-data", empty, "-scenes", empty, "-frames", n}, &strings.Builder{})
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-frames "+n) {
			t.Errorf("-frames %s: %v, want a usage error naming it", n, err)
		}
	}
}
