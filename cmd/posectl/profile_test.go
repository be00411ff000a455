package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// posectl profile writes turned views that read back as a data set with
// the plan's poses, each from a trained-on person, and a contact sheet.
func TestProfileWritesADataSet(t *testing.T) {
	datatest.File(t, "aflw2000", "labels.csv")
	datatest.File(t, "sfm", "sfm_reference.obj")
	out := filepath.Join(t.TempDir(), "aflw2000-turned")
	sheet := filepath.Join(t.TempDir(), "sheet.png")
	var buf bytes.Buffer
	if err := runProfile([]string{"-o", out, "-n", "6", "-sheet", sheet, "-sheet-rows", "4"}, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "wrote 6 views") || !strings.Contains(buf.String(), "non-commercial") {
		t.Errorf("output %q does not say what it wrote and on which terms", buf.String())
	}
	views, err := dataset.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	src, err := dataset.Read(filepath.Join(dataset.Root(), "aflw2000"))
	if err != nil {
		t.Fatal(err)
	}
	bySubject := map[string]dataset.Sample{}
	for _, s := range src {
		bySubject[s.Subject] = s
	}
	for _, v := range views {
		s, ok := bySubject[v.Subject]
		if !ok || v.MadeFrom != "aflw2000" || v.Set != "aflw2000-turned" {
			t.Fatalf("view %s: subject %q made from %q in set %q", v.Path, v.Subject, v.MadeFrom, v.Set)
		}
		if a := math.Abs(v.Yaw); a < 60 || a > 90 || v.Yaw*s.Yaw < 0 || v.Pitch != s.Pitch || v.Roll != s.Roll {
			t.Errorf("view %s: yaw %.2f pitch %.2f roll %.2f from %.2f %.2f %.2f", v.Path, v.Yaw, v.Pitch, v.Roll, s.Yaw, s.Pitch, s.Roll)
		}
		img, err := dataset.LoadGray(v.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Box.Valid() || v.Box.X < -v.Box.W || v.Box.X > float64(img.Rect.Dx()) {
			t.Errorf("view %s: box %v outside its %v picture", v.Path, v.Box, img.Rect)
		}
	}
	if len(views) != 6 {
		t.Errorf("%d views read back, want 6", len(views))
	}
	f, err := os.Open(sheet)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != 4*2*225 {
		t.Errorf("contact sheet: %v, %v wide (want four pairs of 225)", err, img.Bounds())
	}
	// A nod plan moves pitch only, by the amounts asked.
	nodded := filepath.Join(t.TempDir(), "aflw2000-nodded")
	if err := runProfile([]string{"-o", nodded, "-n", "4", "-nod", "5,15"}, &buf); err != nil {
		t.Fatal(err)
	}
	nods, err := dataset.Read(nodded)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range nods {
		s := bySubject[v.Subject]
		if d := math.Abs(v.Pitch - s.Pitch); d < 5-0.01 || d > 15+0.01 || v.Yaw != s.Yaw || v.Roll != s.Roll || math.Abs(s.Yaw) > 60 || math.Abs(s.Pitch) > 30 || v.MadeFrom != "aflw2000" {
			t.Errorf("nodded view %s: yaw %.2f pitch %.2f roll %.2f from %.2f %.2f %.2f", v.Path, v.Yaw, v.Pitch, v.Roll, s.Yaw, s.Pitch, s.Roll)
		}
	}
	if len(nods) != 4 {
		t.Errorf("%d nodded views read back, want 4", len(nods))
	}
	// Bad plans are refused before anything is written.
	for _, args := range [][]string{{}, {"-o", out, "-min-yaw", "80", "-max-yaw", "70"}, {"-o", out, "-max-yaw", "120"},
		{"-o", out, "-nod", "15,5"}, {"-o", out, "-nod", "10"}, {"-o", out, "-nod", "5,60"}} {
		if err := runProfile(args, &buf); err == nil {
			t.Errorf("profile %v: no error", args)
		}
	}
}
