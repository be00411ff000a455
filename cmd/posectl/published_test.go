package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// posedFaces runs the posed binary with its defaults on a replay of one
// picture (the embedded broker, every message printed) and returns the
// faces of its first pose message: box and yaw.
func posedFaces(t *testing.T, posed, picture string) [][5]float64 {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(picture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "frame"+filepath.Ext(picture)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	model, _ := filepath.Abs(filepath.Join("..", "..", "models", "default.gllim"))
	cfg := filepath.Join(dir, "posed.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("device: eq\nsource:\n  path: %s\n  fps: 0\nmodel:\n  path: %s\nmqtt:\n  broker: embedded\n  listen: %s\n  print: true\n  max_rate: 0\nmetrics:\n  listen: \"\"\n",
		dir, model, addr)), 0o644)
	out, err := exec.Command(posed, "-config", cfg).Output()
	if err != nil {
		t.Fatalf("posed on %s: %v", picture, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		topic, payload, _ := strings.Cut(sc.Text(), " ")
		if topic != "posed/eq/pose" {
			continue
		}
		var m struct {
			Faces []struct {
				Box [4]float64
				Yaw *float64
			}
		}
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("pose message %s: %v", payload, err)
		}
		var faces [][5]float64
		for _, f := range m.Faces {
			y := math.NaN()
			if f.Yaw != nil {
				y = *f.Yaw
			}
			faces = append(faces, [5]float64{f.Box[0], f.Box[1], f.Box[2] - f.Box[0], f.Box[3] - f.Box[1], y})
		}
		return faces
	}
	return nil // no pose message: no face on the first frame
}

// posectl eval -model measures what posed publishes: on pictures where the
// cascades, the network's verification and its scan each decide (a
// profile, faces the network scan finds, a face-free scene where the
// cascades put a phantom), the face eval counts as found is the face the
// daemon publishes there, with the same yaw, and the faces eval counts
// beside it are the daemon's others.
func TestEvalIsWhatPosedPublishes(t *testing.T) {
	root := datatest.Root(t)
	posed := filepath.Join(t.TempDir(), "posed")
	if out, err := exec.Command("go", "build", "-o", posed, "../posed").CombinedOutput(); err != nil {
		t.Fatalf("building posed: %v\n%s", err, out)
	}
	// A data set of 40 AFLW2000 pictures in its own labels.csv (eval
	// learns how the detector frames its faces from 20 or more): the
	// daemon runs on the seven named, the others pad the set.
	// image03189 (yaw −83°, pitch −63°, roll 65°): the network sees it
	// turned, the model cannot read it: published without angles (and,
	// since track.unread_score 0.5, image01662, yaw 81°, too).
	compared := []string{"image00002", "image00004", "image01662", "image02532", "image00610", "image03862", "image03189"}
	src := filepath.Join(root, "aflw2000")
	data := aflwSubset(t, src, compared, 40)
	perFace := filepath.Join(t.TempDir(), "faces.csv")
	var stdout bytes.Buffer
	if err := runEval([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-data", data, "-per-face", perFace, "-cache", ""}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "published, 3 iterations") {
		t.Fatalf("eval -model did not measure the published condition:\n%s", stdout.String())
	}
	f, err := os.Open(perFace)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 21 {
		t.Fatalf("per-face rows %d, err %v", len(rows), err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	samples, err := dataset.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	label := map[string]feature.Box{}
	for _, s := range samples {
		label[s.Subject] = s.Box
	}
	found, seen := 0, 0
	var unread []string
	for _, r := range rows[1:] {
		name := r[col["subject"]]
		if !slices.Contains(compared, name) {
			continue
		}
		seen++
		faces := posedFaces(t, posed, filepath.Join(data, "images", name+".jpg"))
		evalFound := r[col["found"]] == "true"
		match := -1
		for k, pf := range faces {
			if feature.Finds(feature.Box{X: pf[0], Y: pf[1], W: pf[2], H: pf[3]}, label[name]) {
				match = k
				break
			}
		}
		if evalFound != (match >= 0) {
			t.Errorf("%s: eval found %v, posed published %v", name, evalFound, faces)
			continue
		}
		if !evalFound {
			continue
		}
		found++
		if r[col["yaw"]] == "" {
			// Found without angles: posed publishes no yaw either.
			unread = append(unread, name)
			if !math.IsNaN(faces[match][4]) {
				t.Errorf("%s: eval found it without angles, posed published yaw %.2f", name, faces[match][4])
			}
			continue
		}
		yaw, err := strconv.ParseFloat(r[col["yaw"]], 64)
		if err != nil {
			t.Fatalf("%s: eval's yaw %q: %v", name, r[col["yaw"]], err)
		}
		t.Logf("%s: found, yaw %.3f by eval, %.2f by posed; %d faces published", name, yaw, faces[match][4], len(faces))
		if d := math.Abs(yaw - faces[match][4]); !(d <= 0.006) {
			t.Errorf("%s: eval's yaw %.3f, posed's %.2f", name, yaw, faces[match][4])
		}
	}
	if seen != len(compared) {
		t.Errorf("eval measured %d of the %d pictures compared", seen, len(compared))
	}
	if found < 5 || !slices.Contains(unread, "image03189") {
		t.Errorf("%d of %d faces found, %v of them without angles: the comparison needs faces, and image03189's without angles", found, len(compared), unread)
	}
	// A face-free scene where the cascades put a phantom: eval counts what
	// posed publishes there.
	scene := filepath.Join(root, "scenes", "images", "UMD_066.jpg")
	sceneDir := t.TempDir()
	b, err := os.ReadFile(scene)
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	os.WriteFile(filepath.Join(sceneDir, "UMD_066.jpg"), b, 0o644)
	stdout.Reset()
	if err := runEval([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-data", data, "-face-free", sceneDir, "-face-free-held-out=false", "-cache", ""}, &stdout); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("(every picture, 1): %.4f faces published per picture", float64(len(posedFaces(t, posed, scene))))
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("eval -face-free says\n%s\nposed publishes %d faces on the scene", stdout.String(), len(posedFaces(t, posed, scene)))
	}
}

// aflwSubset copies the AFLW2000 pictures named, and others up to n, with
// their labels into a data set of their own and returns its folder.
func aflwSubset(t *testing.T, src string, named []string, n int) string {
	t.Helper()
	names := slices.Clone(named)
	data := filepath.Join(t.TempDir(), "aflw2000")
	os.MkdirAll(filepath.Join(data, "images"), 0o755)
	labels, err := os.ReadFile(filepath.Join(src, "labels.csv"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	lines := strings.Split(string(labels), "\n")
	for _, l := range lines[1:] {
		if n1, _, ok := strings.Cut(strings.TrimPrefix(l, "images/"), ".jpg,"); ok && len(names) < n && !slices.Contains(names, n1) {
			names = append(names, n1)
		}
	}
	kept := []string{lines[0]}
	for _, l := range lines[1:] {
		for _, name := range names {
			if strings.HasPrefix(l, "images/"+name+".jpg,") {
				kept = append(kept, l)
				b, err := os.ReadFile(filepath.Join(src, "images", name+".jpg"))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(data, "images", name+".jpg"), b, 0o644)
			}
		}
	}
	if len(kept) != len(names)+1 {
		t.Fatalf("%d of %d pictures in AFLW2000's labels", len(kept)-1, len(names))
	}
	os.WriteFile(filepath.Join(data, "labels.csv"), []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	return data
}

// posectl eval -paste counts what posed publishes on the scenes it makes:
// on each pasted scene (written by -paste-save), the faces the daemon
// publishes are the faces eval found there and the others it counted.
func TestPasteIsWhatPosedPublishes(t *testing.T) {
	root := datatest.Root(t)
	posed := filepath.Join(t.TempDir(), "posed")
	if out, err := exec.Command("go", "build", "-o", posed, "../posed").CombinedOutput(); err != nil {
		t.Fatalf("building posed: %v\n%s", err, out)
	}
	data := aflwSubset(t, filepath.Join(root, "aflw2000"), nil, 32)
	scenes := t.TempDir()
	for _, n := range []string{"UMD_001.jpg", "UMD_003.jpg", "UMD_004.jpg", "UMD_005.jpg", "UMD_006.jpg", "UMD_007.jpg"} {
		b, err := os.ReadFile(filepath.Join(root, "scenes", "images", n))
		if err != nil {
			datatest.Missing(t, "%v", err)
		}
		os.WriteFile(filepath.Join(scenes, n), b, 0o644)
	}
	saved := t.TempDir()
	var stdout bytes.Buffer
	if err := runEval([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-data", data, "-cache", "",
		"-paste", scenes, "-paste-scenes", "all", "-paste-widths", "40,64", "-paste-per-scene", "6", "-paste-save", saved}, &stdout); err != nil {
		t.Fatal(err)
	}
	var n, others, on, of int
	var pct float64
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, "| all |") {
			fmt.Sscanf(l, "| all | %d | %g %%", &n, &pct)
		}
		if strings.HasPrefix(l, "other faces published:") {
			_, rest, _ := strings.Cut(l, "(")
			fmt.Sscanf(rest, "%d on %d of %d scenes", &others, &on, &of)
		}
	}
	found := int(math.Round(pct * float64(n) / 100))
	if n < 24 || of != (n+5)/6 || of > 8 {
		t.Fatalf("eval -paste measured %d faces on %d scenes, want 24 to 48 at 6 a scene:\n%s", n, of, stdout.String())
	}
	published := 0
	for i := range of {
		published += len(posedFaces(t, posed, filepath.Join(saved, fmt.Sprintf("pasted-%02d.png", i))))
	}
	t.Logf("eval: %d of %d found, %d others; posed published %d faces", found, n, others, published)
	if published != found+others {
		t.Errorf("posed published %d faces on the %d scenes, eval counts %d found and %d others:\n%s", published, of, found, others, stdout.String())
	}
	if found < n/4 {
		t.Errorf("%d of %d pasted faces found: the comparison needs faces", found, n)
	}
}

// posectl eval -face-free over the frames of a still scene, with a
// camera's noise on each: on a scene where the scan finds a spray can the
// model reads as a face (neg-3550), posed's defaults (but the scan tiles:
// the whole frame scanned every 15 frames) show no face on any of 31 noisy
// frames, and without the close look (detect.confirm 0) it is
// shown on every one. On a scene where the noise moves the model's box,
// on the 91st frame, to where the close look finds a face, unsure
// (neg-0696, a car's wheel): the look's confidence alone showed it on
// that frame only (the next look misses it) until a face found where a
// look refused one became a suspect, held until its looks have all found
// it, one surely: the wheel was refused there before, and is shown on
// none, as with detect.confirm_hold, and now also with every face found
// sure (detect.confirm_sure 0), which showed it from then on (10 of 100
// frames) while a sure look cut a suspect's looks short; the look head
// (detect.confirm_head, a default) refuses it there. With the default
// scan tiles, which see the wheel at full size, it is long tracks
// without the head, and shown on at most 3 of 300 frames with it (#55).
// Phantoms that a close look passes on one noisy frame (neg-4833, a
// fractal's dark ground, 122 px; neg-4643, dark water) are looked at
// again every detect.confirm_every frames, as the scan's weak answers and
// the cascades keep them, and a face found again where a look refused
// one is held until its looks have all found it, one surely (a suspect):
// a short track, 8 of the two scenes' 600 frames (39 before the
// suspects), where one look only (confirm_every 0) tracks them on 56
// (265 before the suspects, 353 before the network's border took the
// vector kernel: which of the two lasts moves with the network's
// rounding, their sum much less).
// A σ out of range is a usage error.
func TestEvalStillPhantomWithNoise(t *testing.T) {
	root := datatest.Root(t)
	scene := func(names ...string) string {
		dir := t.TempDir()
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join(root, "scenes", "images", name))
			if err != nil {
				datatest.Missing(t, "%v", err)
			}
			os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		return dir
	}
	can, sphere, kept := scene("neg-3550.jpg"), scene("neg-0696.jpg"), scene("neg-4833.jpg", "neg-4643.jpg")
	config := func(yaml string) string {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(yaml), 0o644)
		return p
	}
	// The scan of the whole frame every 15 frames, without the default's
	// tiles: a tile sees the wheel at full size, where this test follows
	// the close look's answers on the shrunk scan's faces.
	const whole = "scan_tiles: 0, scan_every: 15"
	plain := config("detect: {" + whole + "}\n")
	off := config("detect: {confirm: 0, " + whole + "}\n")
	// The look's confidence alone (no look head), for the checks of an
	// unsure face.
	const bare = whole + ", confirm_head: false"
	sure, hold, unsure := config("detect: {confirm_sure: 0, "+bare+"}\n"), config("detect: {confirm_hold: true, "+bare+"}\n"), config("detect: {"+bare+"}\n")
	// The defaults (scan tiles, the look head), and without the head.
	defaults, headless := config("track: {}\n"), config("detect: {confirm_head: false}\n")
	once := config("detect: {confirm_every: 0}\n")
	data := filepath.Join(root, "aflw2000")
	worst := regexp.MustCompile(`the worst scene (\d+) frames`)
	total := regexp.MustCompile(`show a face \((\d+) of \d+\)`)
	for _, c := range []struct {
		dir, frames string
		args        []string
		min, max    int
		sum         bool // min and max bound the frames of every scene, not the worst one's
	}{
		{can, "31", []string{"-config", plain}, 0, 0, false},
		{can, "31", []string{"-config", off}, 31, 31, false},
		{sphere, "100", []string{"-config", sure}, 0, 0, false},
		{sphere, "100", []string{"-config", unsure}, 0, 0, false},
		{sphere, "100", []string{"-config", hold}, 0, 0, false},
		{sphere, "100", []string{"-config", plain}, 0, 0, false},
		{sphere, "300", []string{"-config", defaults}, 0, 3, false},
		{sphere, "300", []string{"-config", headless}, 50, 300, false},
		{kept, "300", []string{"-config", defaults}, 1, 20, true},
		{kept, "300", []string{"-config", once}, 30, 600, true},
	} {
		var stdout strings.Builder
		args := append([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-data", data, "-condition", "none", "-face-free", c.dir,
			"-face-free-held-out=false", "-frames", c.frames, "-noise", "3"}, c.args...)
		if err := runEval(args, &stdout); err != nil {
			t.Fatal(err)
		}
		m := worst.FindStringSubmatch(stdout.String())
		if !strings.Contains(stdout.String(), "sensor noise σ 3") || m == nil {
			t.Fatalf("%v: eval says\n%s\nwant the noise and the worst scene", c.args, stdout.String())
		}
		n, _ := strconv.Atoi(m[1])
		got := n
		if c.sum {
			all := total.FindStringSubmatch(stdout.String())
			if all == nil {
				t.Fatalf("%v: eval says\n%s\nwant the frames with a face", c.args, stdout.String())
			}
			got, _ = strconv.Atoi(all[1])
		}
		if got < c.min || got > c.max {
			t.Errorf("%s %v: a face on %d of %s noisy frames (the worst scene %d), want %d to %d:\n%s", filepath.Base(c.dir), c.args, got, c.frames, n, c.min, c.max, stdout.String())
		}
		// A scene past the audit's 3 frames is named with its count.
		named := regexp.MustCompile(`neg-\d+\.jpg: a face on (\d+) frames`).FindStringSubmatch(stdout.String())
		if (n > maxPhantomFrames) != (named != nil) || named != nil && named[1] != m[1] {
			t.Errorf("%s %v: %d frames with a face, the scene named %v:\n%s", filepath.Base(c.dir), c.args, n, named, stdout.String())
		}
	}
	var stdout strings.Builder
	err := runEval([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-data", data, "-condition", "none", "-face-free", can, "-noise", "-1"}, &stdout)
	if !errors.Is(err, errUsage) {
		t.Errorf("-noise -1: %v, want a usage error", err)
	}
}
