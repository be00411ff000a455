package headpose

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
)

// PasteOptions make a set of small faces in rooms: labelled faces shrunk
// so that their label box is Widths wide and pasted, PerScene to a scene,
// into face-free 640×480 scenes.
type PasteOptions struct {
	Widths   []int   // face widths (label box, pixels), taken in turn
	PerScene int     // faces a scene (default 4)
	Context  float64 // the pasted square's side in label sides (default 2)
	Seed     uint64
}

// Pasted is one scene with faces pasted into it.
type Pasted struct {
	Scene int // index of the scene
	Frame *image.Gray
	Faces []PastedFace
}

// PastedFace is a face of a Pasted scene: the sample it shows, its label
// box in the scene and its width (the label box's).
type PastedFace struct {
	Sample int
	Box    feature.Box
	Width  int
}

// PasteScenes pastes the faces of samples (their pictures read from disk)
// into scenes (640×480, or scaled to it), PerScene faces to a scene in a
// seeded order, each at a seeded place where its square does not overlap
// another's. Each face is the square of Context label sides around its
// label box, scaled so the box is its width wide, blended into the scene
// over its outer sixth so that no edge frames it. A sample whose picture
// does not read is an error naming it.
func PasteScenes(samples []dataset.Sample, scenes []*image.Gray, o PasteOptions) ([]Pasted, error) {
	if len(o.Widths) == 0 || len(scenes) == 0 {
		return nil, fmt.Errorf("headpose: paste: no widths or no scenes")
	}
	for _, w := range o.Widths {
		if w < 8 || w > 128 {
			return nil, fmt.Errorf("headpose: paste: face width %d px: want 8 to 128", w)
		}
	}
	if o.PerScene < 1 {
		o.PerScene = 4
	}
	if !(o.Context >= 1) {
		o.Context = 2
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9a57e))
	order := rng.Perm(len(samples))
	out := make([]Pasted, 0, (len(samples)+o.PerScene-1)/o.PerScene)
	var placed []image.Rectangle
	for k, i := range order {
		if k%o.PerScene == 0 {
			j := len(out) % len(scenes)
			frame := cascade.ScaleGray(scenes[j], 640, 480)
			out = append(out, Pasted{Scene: j, Frame: frame})
			placed = placed[:0]
		}
		p := &out[len(out)-1]
		s := samples[i]
		src, err := dataset.LoadGray(s.Path)
		if err != nil {
			return nil, fmt.Errorf("headpose: paste %s: %w", s.Path, err)
		}
		w := o.Widths[k%len(o.Widths)]
		patch, box := faceSquare(src, s.Box, w, o.Context)
		pw, ph := patch.Rect.Dx(), patch.Rect.Dy()
		// A place in the frame, clear of the faces already there.
		var at image.Point
		ok := false
		for range 100 {
			at = image.Pt(rng.IntN(640-pw+1), rng.IntN(480-ph+1))
			r := image.Rectangle{Min: at, Max: at.Add(image.Pt(pw, ph))}
			clear := true
			for _, q := range placed {
				if r.Overlaps(q) {
					clear = false
					break
				}
			}
			if clear {
				placed, ok = append(placed, r), true
				break
			}
		}
		if !ok {
			continue // no room left: the face is not pasted
		}
		blend(p.Frame, patch, at)
		box.X += float64(at.X)
		box.Y += float64(at.Y)
		p.Faces = append(p.Faces, PastedFace{Sample: i, Box: box, Width: w})
	}
	return out, nil
}

// faceSquare cuts the square of context label sides around label from src
// (clamped to the picture) and scales it so that the label is width
// pixels wide; it returns the patch and the label's box in it.
func faceSquare(src *image.Gray, label feature.Box, width int, context float64) (*image.Gray, feature.Box) {
	cx, cy := label.Centre()
	half := context * math.Max(label.W, label.H) / 2
	r := image.Rect(int(math.Floor(cx-half)), int(math.Floor(cy-half)), int(math.Ceil(cx+half)), int(math.Ceil(cy+half))).Intersect(src.Rect)
	k := float64(width) / label.W
	sw, sh := max(int(math.Round(float64(r.Dx())*k)), 1), max(int(math.Round(float64(r.Dy())*k)), 1)
	patch := cascade.ScaleGray(src.SubImage(r).(*image.Gray), sw, sh)
	kx, ky := float64(sw)/float64(r.Dx()), float64(sh)/float64(r.Dy())
	box := feature.Box{X: (label.X - float64(r.Min.X)) * kx, Y: (label.Y - float64(r.Min.Y)) * ky, W: label.W * kx, H: label.H * ky}
	return patch, box
}

// blend draws patch into dst at at, its weight rising linearly from 0 at
// its edge to 1 a sixth of its side in.
func blend(dst, patch *image.Gray, at image.Point) {
	w, h := patch.Rect.Dx(), patch.Rect.Dy()
	ramp := float64(min(w, h)) / 6
	for y := range h {
		for x := range w {
			d := float64(min(x, y, w-1-x, h-1-y)) + 0.5
			a := math.Min(d/ramp, 1)
			di := dst.PixOffset(at.X+x, at.Y+y)
			v := float64(patch.Pix[patch.PixOffset(patch.Rect.Min.X+x, patch.Rect.Min.Y+y)])
			dst.Pix[di] = uint8(math.Round(a*v + (1-a)*float64(dst.Pix[di])))
		}
	}
}

// PasteResult is what the frame path published on the pasted scenes.
type PasteResult struct {
	Faces  []FaceResult // one per pasted face; Face is its label box in the scene
	Widths []int        // each face's width
	Others []int        // per scene: published faces that find no pasted face
	// Beside is, per scene, how many of Others overlap a pasted face's
	// label box (a second or misplaced box on a face, rather than a
	// phantom where there is none).
	Beside []int
	// Shown and First are, per face, the frames of its scene on which a
	// published box found it and the first of them (−1: none): a face
	// found then lost has Shown > 0 and Found false.
	Shown, First []int
}

// Within is the report of the pasted faces at least lo and under hi
// pixels wide.
func (r *PasteResult) Within(lo, hi int) *Report {
	out := &Report{Case: fmt.Sprintf("pasted, %d–%d px", lo, hi)}
	for i, f := range r.Faces {
		if r.Widths[i] >= lo && r.Widths[i] < hi {
			out.Faces = append(out.Faces, f)
		}
	}
	return out
}

// EvaluatePasted shows each pasted scene to a frame path of fr (around
// est) as the first frame of a scene (frames frames, the last counted),
// with sensor-like noise of σ sigma grey levels on every frame where sigma
// is above 0 (NoisyStill, from seed), and matches what it publishes with
// the pasted faces (feature.Finds).
func EvaluatePasted(samples []dataset.Sample, scenes []Pasted, est *pose.Estimator, frames func(*pose.Estimator, detect.Calibration) (Frames, error), calib detect.Calibration, n int, sigma float64, seed uint64) (*PasteResult, error) {
	res := &PasteResult{Others: make([]int, len(scenes)), Beside: make([]int, len(scenes))}
	start := make([]int, len(scenes))
	for j, p := range scenes {
		start[j] = len(res.Faces)
		for _, f := range p.Faces {
			s := samples[f.Sample]
			r := FaceResult{Sample: f.Sample, Face: f.Box}
			for a, name := range pose.AngleNames {
				if v, ok := s.Angle(name); ok && est.HasAngle(a) {
					r.Truth[a], r.Has[a] = v, true
				}
			}
			res.Faces = append(res.Faces, r)
			res.Widths = append(res.Widths, f.Width)
			res.Shown = append(res.Shown, 0)
			res.First = append(res.First, -1)
		}
	}
	err := onFrames(len(scenes), est, EvalOptions{Frames: frames, Calibration: calib}, func(f Frames) func(int) {
		return func(j int) {
			p := scenes[j]
			faces := res.Faces[start[j] : start[j]+len(p.Faces)]
			shown, first := res.Shown[start[j]:start[j]+len(p.Faces)], res.First[start[j]:start[j]+len(p.Faces)]
			frame := 0
			each := func(pub []track.Face) {
				for k := range faces {
					for _, g := range pub {
						if feature.Finds(g.Box, faces[k].Face) {
							shown[k]++
							if first[k] < 0 {
								first[k] = frame
							}
							break
						}
					}
				}
				frame++
			}
			for _, g := range NoisyStill(f, p.Frame, n, sigma, seed, each) {
				hit := false
				for k := range faces {
					out := &faces[k]
					if out.Found || !feature.Finds(g.Box, out.Face) {
						continue
					}
					out.Found, out.Refined, out.Test, out.View = true, g.Box, g.Box, g.View
					out.Pred, out.Std, out.Unread = g.Angles, g.Std, !g.Has[0]
					hit = true
					break
				}
				if !hit {
					res.Others[j]++
					for k := range faces {
						if cascade.Overlaps(g.Box, faces[k].Face) {
							res.Beside[j]++
							break
						}
					}
				}
			}
		}
	})
	return res, err
}
