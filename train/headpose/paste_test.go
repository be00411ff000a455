package headpose

import (
	"image"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"

	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// facesAndScenes reads AFLW2000's first n samples and the face-free
// scenes named.
func facesAndScenes(t *testing.T, n int, names ...string) ([]dataset.Sample, []*image.Gray) {
	t.Helper()
	samples, err := dataset.Read(filepath.Join(datatest.Root(t), "aflw2000"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	var scenes []*image.Gray
	for _, name := range names {
		g, err := dataset.LoadGray(datatest.File(t, "scenes", "images", name))
		if err != nil {
			t.Fatal(err)
		}
		scenes = append(scenes, g)
	}
	return samples[:n], scenes
}

// Faces pasted into scenes: each as wide as asked, inside the frame, clear
// of the others, the scene untouched around them, the same places for the
// same seed and others for another.
func TestPasteScenes(t *testing.T) {
	samples, scenes := facesAndScenes(t, 10, "UMD_001.jpg", "UMD_003.jpg", "UMD_004.jpg")
	o := PasteOptions{Widths: []int{32, 48, 64}, PerScene: 4, Seed: 3}
	set, err := PasteScenes(samples, scenes, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 3 {
		t.Fatalf("%d scenes for 10 faces at 4 a scene", len(set))
	}
	n := 0
	for j, p := range set {
		if p.Scene != j || p.Frame.Rect != image.Rect(0, 0, 640, 480) {
			t.Errorf("scene %d: scene %d, frame %v", j, p.Scene, p.Frame.Rect)
		}
		bare := cascade.ScaleGray(scenes[p.Scene], 640, 480)
		for k, f := range p.Faces {
			n++
			if math.Abs(f.Box.W-float64(f.Width)) > 1 {
				t.Errorf("scene %d face %d: %.1f px wide, want %d", j, k, f.Box.W, f.Width)
			}
			if f.Box.X < 0 || f.Box.Y < 0 || f.Box.X+f.Box.W > 640 || f.Box.Y+f.Box.H > 480 {
				t.Errorf("scene %d face %d: box %v outside the frame", j, k, f.Box)
			}
			for _, g := range p.Faces[k+1:] {
				if f.Box.X < g.Box.X+g.Box.W && g.Box.X < f.Box.X+f.Box.W && f.Box.Y < g.Box.Y+g.Box.H && g.Box.Y < f.Box.Y+f.Box.H {
					t.Errorf("scene %d: faces %v and %v overlap", j, f.Box, g.Box)
				}
			}
		}
		// Far from every face (more than its context square), the
		// scene is as it was; on the faces it is not.
		changed, same := 0, 0
		for y := 0; y < 480; y += 3 {
			for x := 0; x < 640; x += 3 {
				near, on := false, false
				for _, f := range p.Faces {
					cx, cy := f.Box.Centre()
					d := math.Max(math.Abs(float64(x)-cx), math.Abs(float64(y)-cy))
					near = near || d < 1.6*math.Max(f.Box.W, f.Box.H)
					on = on || d < f.Box.W/3
				}
				i := y*640 + x
				switch {
				case !near && p.Frame.Pix[i] != bare.Pix[i]:
					t.Fatalf("scene %d: pixel %d,%d changed away from every face", j, x, y)
				case on && p.Frame.Pix[i] != bare.Pix[i]:
					changed++
				case on:
					same++
				}
			}
		}
		if changed < 4*same {
			t.Errorf("scene %d: %d pixels on the faces changed, %d not", j, changed, same)
		}
	}
	if n != 10 {
		t.Errorf("%d faces pasted, want 10", n)
	}
	again, _ := PasteScenes(samples, scenes, o)
	o.Seed = 4
	other, _ := PasteScenes(samples, scenes, o)
	if again[1].Faces[0] != set[1].Faces[0] || other[1].Faces[0] == set[1].Faces[0] {
		t.Errorf("seed 3 twice: %v, %v; seed 4: %v", set[1].Faces[0], again[1].Faces[0], other[1].Faces[0])
	}
	if _, err := PasteScenes(samples, scenes, PasteOptions{Widths: []int{300}}); err == nil {
		t.Error("a 300-px face width accepted")
	}
}

// recordFrames is a frame path that publishes nothing and keeps a copy of
// every frame it is shown.
type recordFrames struct{ seen []*image.Gray }

func (r *recordFrames) Process(img *image.Gray) []track.Face {
	c := *img
	c.Pix = slices.Clone(img.Pix)
	r.seen = append(r.seen, &c)
	return nil
}
func (r *recordFrames) ProcessAt(img *image.Gray, _ time.Time) []track.Face { return r.Process(img) }
func (r *recordFrames) Reset()                                              {}

// onePastedScene pastes AFLW2000's first four faces, 48 px wide, into one
// face-free scene, and returns them with the shipped model's estimator.
func onePastedScene(t *testing.T) ([]dataset.Sample, []Pasted, *pose.Estimator) {
	t.Helper()
	_, samples := bothSets(t)
	samples = samples[:4]
	g, err := dataset.LoadGray(datatest.File(t, "scenes", "images", "UMD_001.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := PasteScenes(samples, []*image.Gray{g}, PasteOptions{Widths: []int{48}, PerScene: 4, Seed: 3})
	if err != nil || len(set) != 1 || len(set[0].Faces) != 4 {
		t.Fatalf("pasted %d scenes: %v", len(set), err)
	}
	m, err := gllim.ReadFile(filepath.Join("..", "..", "models", "default.gllim"))
	if err != nil {
		t.Fatal(err)
	}
	est, err := pose.New(m, pose.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	return samples, set, est
}

// EvaluatePasted shows each pasted scene for the frames asked, as it is
// without noise, and with a camera's noise of σ sigma a frame of its own
// each time (the noise measured back from the frames within 10 %).
func TestEvaluatePastedNoise(t *testing.T) {
	samples, set, est := onePastedScene(t)
	for _, sigma := range []float64{0, 3} {
		rec := &recordFrames{}
		frames := func(*pose.Estimator, detect.Calibration) (Frames, error) { return rec, nil }
		res, err := EvaluatePasted(samples, set, est, frames, detect.Identity, 3, sigma, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.seen) != 3 || len(res.Faces) != 4 {
			t.Fatalf("σ %g: %d frames shown, %d faces measured; want 3 and 4", sigma, len(rec.seen), len(res.Faces))
		}
		for k, f := range rec.seen {
			var ss float64
			for i, v := range f.Pix {
				d := float64(v) - float64(set[0].Frame.Pix[i])
				ss += d * d
			}
			rms := math.Sqrt(ss / float64(len(f.Pix)))
			if sigma == 0 && rms != 0 || sigma > 0 && math.Abs(rms-sigma) > 0.1*sigma {
				t.Errorf("σ %g, frame %d: %.2f grey levels from the scene", sigma, k+1, rms)
			}
			if k > 0 && sigma > 0 && slices.Equal(f.Pix, rec.seen[k-1].Pix) {
				t.Errorf("σ %g: frames %d and %d have the same noise", sigma, k, k+1)
			}
		}
	}
}

// scriptFrames publishes, on each frame, the boxes its script gives for
// that frame's index.
type scriptFrames struct {
	frame  int
	script func(frame int) []feature.Box
}

func (s *scriptFrames) Process(*image.Gray) []track.Face {
	var out []track.Face
	for _, b := range s.script(s.frame) {
		out = append(out, track.Face{Box: b, Has: [3]bool{true, true, true}})
	}
	s.frame++
	return out
}
func (s *scriptFrames) ProcessAt(img *image.Gray, _ time.Time) []track.Face { return s.Process(img) }
func (s *scriptFrames) Reset()                                              { s.frame = 0 }

// EvaluatePasted counts, per face, the frames that found it and the first
// of them, beside whether the last frame did: a face found then lost is
// told from one never found.
func TestEvaluatePastedCountsFrames(t *testing.T) {
	samples, set, est := onePastedScene(t)
	faces := set[0].Faces
	// Face 0 from the second frame on, face 1 on the first frame only,
	// face 2 never, face 3 on the second frame and the last.
	script := func(frame int) []feature.Box {
		var out []feature.Box
		if frame >= 1 {
			out = append(out, faces[0].Box)
		}
		if frame == 0 {
			out = append(out, faces[1].Box)
		}
		if frame == 1 || frame == 3 {
			out = append(out, faces[3].Box)
		}
		return out
	}
	frames := func(*pose.Estimator, detect.Calibration) (Frames, error) { return &scriptFrames{script: script}, nil }
	res, err := EvaluatePasted(samples, set, est, frames, detect.Identity, 4, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	wantShown, wantFirst := []int{3, 1, 0, 2}, []int{1, 0, -1, 1}
	wantFound := []bool{true, false, false, true}
	for k := range faces {
		if res.Shown[k] != wantShown[k] || res.First[k] != wantFirst[k] || res.Faces[k].Found != wantFound[k] {
			t.Errorf("face %d: shown on %d frames from frame %d, found at the last %t; want %d, %d, %t",
				k, res.Shown[k], res.First[k], res.Faces[k].Found, wantShown[k], wantFirst[k], wantFound[k])
		}
	}
	if n := res.Others[0]; n != 0 {
		t.Errorf("%d other faces on the last frame, want 0", n)
	}
}
