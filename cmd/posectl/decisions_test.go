package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// posectl decisions reads eval's per-face file and counts, by |yaw| bin,
// the faces whose road and camera decisions match their labels'; a face
// published without angles has none, and is left out and counted.
func TestDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faces.csv")
	csv := "case,fold,found,yaw_true,pitch_true,roll_true,yaw,pitch,roll,yaw_std,pitch_std,roll_std\n" +
		"c,1,true,2,0,0,4,1,0,2,2,1\n" + // road and camera, both right
		"c,1,true,10,0,0,30,0,0,2,2,1\n" + // truth on the road and at the camera; predicted off both: both wrong
		"c,1,true,70,0,0,65,3,0,20,20,1\n" + // turned, decided (far from every border) and right
		"c,1,true,5,0,0,21,0,0,8,2,1\n" + // 1.5° inside the road with σ 8: in doubt
		"d,1,true,5,0,,4,1,,2,2,\n" + // no roll (Pointing'04): still read
		"c,1,true,20,0,0,,,,,,\n" + // published without angles: left out, and said
		"c,1,false,40,0,0,0,0,0,0,0,0\n" // not found: not counted
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runDecisions([]string{"-per-face", path, "-case", "c"}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| 0–15 | 3 | 50.0 % | 33.3 % | ",           // road: 1 of 2 decided right, 1 of 3 in doubt
		"| 60–75 | 1 | 100.0 % | 0.0 % | 100.0 % |", // turned: right, decided
		"| all | 4 | ",
		"1 faces published without angles left out",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if err := runDecisions([]string{"-per-face", filepath.Join(t.TempDir(), "none.csv")}, &out); err == nil {
		t.Error("a missing file accepted")
	}
	os.WriteFile(path, []byte("a,b\n1,2\n"), 0o644)
	if err := runDecisions([]string{"-per-face", path}, &out); err == nil || !strings.Contains(err.Error(), "column") {
		t.Errorf("a file that is not eval's: %v", err)
	}
}
