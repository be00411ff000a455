package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/train/dataset/datatest"

	"github.com/edgepose/posed/train/dataset"
)

// posectl predict with the default model finds the face in a Pointing'04
// photograph, prints its pose as JSON and draws it.
func TestPredictDefaultModel(t *testing.T) {
	img := filepath.Join(dataset.Root(), "pointing04", "Person02", "person02145+0-15.jpg")
	if _, err := os.Stat(img); err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	out := filepath.Join(t.TempDir(), "drawn.png")
	var buf bytes.Buffer
	err := runPredict([]string{"-model", filepath.Join("..", "..", "models", "default.gllim"), "-draw", out, img}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	best := math.Inf(1)
	n := 0
	for sc.Scan() {
		var f faceJSON
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		n++
		if !f.Yaw.Set || !f.Pitch.Set || !f.Roll.Set || !f.YawStd.Set {
			t.Fatalf("face without angles: %s", sc.Text())
		}
		best = math.Min(best, math.Abs(f.Yaw.V-(-15)))
	}
	// Truth: yaw −15°, pitch 0. The default model's LOPO yaw MAE is ≈ 8.5° on
	// detected boxes; this person was trained on, so 15° is generous.
	if n == 0 || best > 15 {
		t.Errorf("%d faces, best yaw error %.1f°", n, best)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("-draw wrote no PNG: %v", err)
	}
	if err := runPredict([]string{"-box", "1,2,3"}, &buf); err == nil {
		t.Error("a 3-number box was accepted")
	}
}

// Flags may follow the images; a picture without a face is an error (exit
// status 3) that names it and says how to give the box instead.
func TestPredictFlagsAfterImagesAndNoFace(t *testing.T) {
	img := filepath.Join(dataset.Root(), "pointing04", "Person02", "person02145+0-15.jpg")
	if _, err := os.Stat(img); err != nil {
		datatest.Missing(t, "data set not available: %v", err)
	}
	model := filepath.Join("..", "..", "models", "default.gllim")
	var buf bytes.Buffer
	if err := runPredict([]string{img, "-model", model, "-min-size", "60"}, &buf); err != nil {
		t.Fatalf("flags after the image: %v", err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"yaw"`)) {
		t.Errorf("no pose printed: %s", buf.String())
	}
	blank := filepath.Join(t.TempDir(), "-blank.png")
	g := image.NewGray(image.Rect(0, 0, 160, 120))
	for i := range g.Pix {
		g.Pix[i] = 128
	}
	f, err := os.Create(blank)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, g); err != nil {
		t.Fatal(err)
	}
	f.Close()
	buf.Reset()
	// After "--" a name that starts with "-" is an image, not a flag.
	err = runPredict([]string{"-model", model, img, "--", blank}, &buf)
	if !errors.Is(err, errNoFace) {
		t.Fatalf("a face-free picture: %v, want the no-face error", err)
	}
	for _, want := range []string{blank, "-box x,y,w,h", "of 2 images"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"yaw"`)) {
		t.Errorf("the other image's face was not printed: %s", buf.String())
	}
	if err := runPredict([]string{"-model", model, img, "-no-such-flag"}, &buf); err == nil {
		t.Error("an unknown flag after the image was accepted")
	}
	// The model's profile expert is taken from beside it; a model that is
	// none is refused as one.
	if err := runPredict([]string{"-model", model, "-expert", model, img}, &buf); err == nil || !strings.Contains(err.Error(), "not a profile expert") {
		t.Errorf("a plain model as the expert: %v", err)
	}
	if err := runPredict([]string{"-model", model, "-expert", "none", img}, &buf); err != nil {
		t.Errorf("-expert none: %v", err)
	}
}
