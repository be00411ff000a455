package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// posectl cascade and detections refuse a split of the persons that names
// no part of them, saying which flag is wrong, before loading any data.
func TestCascadeSplitRefused(t *testing.T) {
	turned := "../../infer/detect/cascade/turned"
	for _, c := range []struct {
		cmd  func([]string, *bytes.Buffer) error
		args []string
		want string
	}{
		{cascadeCmd, []string{"-o", "x", "-folds", "1", "-leave-out", "0"}, "-folds 1"},
		{cascadeCmd, []string{"-o", "x", "-folds", "5", "-leave-out", "5"}, "-leave-out 5 is not a fold"},
		{cascadeCmd, []string{"-o", "x", "-folds", "5"}, "without -leave-out"},
		{cascadeCmd, []string{"-o", "x", "-half", "0", "-folds", "5", "-leave-out", "1"}, "-half and -folds"},
		{cascadeCmd, []string{"-o", "x", "-half", "2"}, "-half 2"},
		{detectionsCmd, []string{"-folds", "2", "-cascades", turned + "," + turned + "," + turned}, "wants up to 2 cascades"},
		{detectionsCmd, []string{"-folds", "5"}, "wants up to 5 cascades"},
		{detectionsCmd, []string{"-folds", "5", "-leave-out", "1", "-cascades", turned}, "-leave-out is for posectl cascade"},
	} {
		err := c.cmd(c.args, &bytes.Buffer{})
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

func cascadeCmd(args []string, out *bytes.Buffer) error    { return runCascade(args, out) }
func detectionsCmd(args []string, out *bytes.Buffer) error { return runDetections(args, out) }
