package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// pasteFlags measure small faces in rooms: posectl eval -model M -paste
// DIR (docs/measured.md, "Small faces in rooms").
type pasteFlags struct {
	dir, widths, scenes, save, perFace string
	perScene                           int
	seed                               uint64
}

func (p *pasteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.dir, "paste", "", "with -model: also paste every labelled face of -data, shrunk to -paste-widths, into the face-free pictures of this folder (each scaled to 640×480), -paste-per-scene to a scene, and measure what posed publishes on them: faces found by width and yaw, their angles, and the other faces published")
	fs.StringVar(&p.widths, "paste-widths", "32,40,48,56,64", "paste: the faces' widths (their label box, pixels in the 640×480 frame), taken in turn")
	fs.IntVar(&p.perScene, "paste-per-scene", 4, "paste: faces pasted into each scene")
	fs.StringVar(&p.scenes, "paste-scenes", "held-out", "paste: the scenes used: held-out (the third kept out of every training and choice), rest (the other two thirds, to choose settings on) or all")
	fs.Uint64Var(&p.seed, "paste-seed", 1, "paste: seed of the faces' order and places")
	fs.StringVar(&p.save, "paste-save", "", "paste: write the first 8 pasted scenes to this folder as PNG (to look at)")
	fs.StringVar(&p.perFace, "paste-per-face", "", "paste: write every pasted face to this CSV file: its scene, picture, width and angles, whether the last frame found it, and the frames that did (found then lost, or never found)")
}

// pasteWidthBins are the width bins the paste report splits faces by:
// [32, 48), [48, 64), [64, ∞) pixels, and below 32.
var pasteWidthBins = []struct {
	name     string
	min, max int
}{{"below 32 px", 0, 32}, {"32–47 px", 32, 48}, {"48–63 px", 48, 64}, {"64 px and more", 64, 1 << 30}}

// pasted runs the paste measure with -model and the daemon's frame path.
func (e *evalFlags) pasted(stdout io.Writer, samples []dataset.Sample) error {
	p := &e.paste
	if e.modelPath == "" {
		return fmt.Errorf("%w: -paste measures -model", errUsage)
	}
	widths, err := parseInts(p.widths)
	if err != nil || len(widths) == 0 {
		return fmt.Errorf("%w: -paste-widths %q: want pixel widths, comma-separated", errUsage, p.widths)
	}
	keep := map[string]func(string) bool{
		"held-out": cascade.HeldOut,
		"rest":     func(n string) bool { return !cascade.HeldOut(n) },
		"all":      func(string) bool { return true },
	}[p.scenes]
	if keep == nil {
		return fmt.Errorf("%w: -paste-scenes %q is not held-out, rest or all", errUsage, p.scenes)
	}
	pics, err := cascade.ReadPictures(p.dir, 640)
	if err != nil {
		return err
	}
	var scenes []*image.Gray
	var names []string
	for _, pic := range pics {
		if keep(pic.Name) {
			scenes = append(scenes, pic.Img.Gray())
			names = append(names, pic.Name)
		}
	}
	var faces []dataset.Sample
	for _, s := range samples {
		if s.MadeFrom == "" && s.InRange && s.HasYaw {
			faces = append(faces, s)
		}
	}
	set, err := headpose.PasteScenes(faces, scenes, headpose.PasteOptions{Widths: widths, PerScene: p.perScene, Seed: p.seed})
	if err != nil {
		return err
	}
	if p.save != "" {
		if err := savePasted(p.save, set[:min(8, len(set))]); err != nil {
			return err
		}
	}
	est, m, err := estimator(e.daemon.Model, e.daemon.Research, e.modelPath, e.daemon.Model.Expert)
	if err != nil {
		return err
	}
	calib := detect.CalibrationOf(m.Calibration)
	res, err := headpose.EvaluatePasted(faces, set, est, framesOf(e.daemon), calib, e.frames, e.noise, e.testSeed)
	if err != nil {
		return err
	}
	printPasted(stdout, p, len(scenes), faces, res, e.noise)
	if p.perFace != "" {
		return writePastedFaces(p.perFace, names, set, faces, res)
	}
	return nil
}

// writePastedFaces writes each pasted face of set (in res's order) as a
// CSV row: the scene's name, the face's picture and set, its width,
// labels and box, and what the frame path published on it.
func writePastedFaces(path string, names []string, set []headpose.Pasted, samples []dataset.Sample, res *headpose.PasteResult) error {
	var b strings.Builder
	b.WriteString("scene,image,set,width,yaw,pitch,roll,x,y,w,h,found,unread,pred_yaw,pred_pitch,shown,first\n")
	num := func(ok bool, v float64) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	k := 0
	for _, p := range set {
		for _, f := range p.Faces {
			s, r := samples[f.Sample], res.Faces[k]
			fmt.Fprintf(&b, "%s,%s,%s,%d,%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%t,%t,%s,%s,%d,%d\n",
				names[p.Scene], filepath.Base(s.Path), s.Set, f.Width,
				num(s.HasYaw, s.Yaw), num(s.HasPitch, s.Pitch), num(s.HasRoll, s.Roll),
				f.Box.X, f.Box.Y, f.Box.W, f.Box.H, r.Found, r.Unread,
				num(r.Found && !r.Unread, r.Pred[0]), num(r.Found && !r.Unread, r.Pred[1]), res.Shown[k], res.First[k])
			k++
		}
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// printPasted prints the paste measure: a row per width bin (faces,
// found, MAE as headpose.Report counts them), then each bin's faces by
// |yaw| (Report.YawTable), then the other faces published.
func printPasted(w io.Writer, p *pasteFlags, scenes int, samples []dataset.Sample, res *headpose.PasteResult, noise float64) {
	others, on, beside := 0, 0, 0
	for j, n := range res.Others {
		others += n
		beside += res.Beside[j]
		if n > 0 {
			on++
		}
	}
	sensor := ""
	if noise > 0 {
		sensor = fmt.Sprintf(", sensor noise σ %g on every frame", noise)
	}
	fmt.Fprintf(w, "\nFaces pasted into face-free scenes (%s, %s scenes of %d, %d faces a scene, widths %s px, seed %d%s)\n\n",
		p.dir, p.scenes, scenes, p.perScene, p.widths, p.seed, sensor)
	fmt.Fprintln(w, "| width | faces | found | without angles | yaw / pitch / roll MAE |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(name string, r *headpose.Report) {
		var mae []string
		for _, a := range pose.AngleNames {
			if st := r.Stats(a); st.N > 0 {
				mae = append(mae, fmt.Sprintf("%.2f", st.MAE))
			} else {
				mae = append(mae, "–")
			}
		}
		fmt.Fprintf(w, "| %s | %d | %.1f %% | %d | %s |\n", name, len(r.Faces), 100*float64(r.Found())/float64(max(len(r.Faces), 1)),
			r.Unread(), strings.Join(mae, " / "))
	}
	var bins []*headpose.Report
	for _, b := range pasteWidthBins {
		r := res.Within(b.min, b.max)
		bins = append(bins, r)
		if len(r.Faces) > 0 {
			row(b.name, r)
			for _, set := range setsOf(samples, r) {
				row(b.name+", "+set, bySet(samples, r, set))
			}
		}
	}
	row("all", res.Within(0, 1<<30))
	for i, r := range bins {
		if len(r.Faces) > 0 {
			fmt.Fprintf(w, "\nFaces %s, by |yaw|:\n\n", pasteWidthBins[i].name)
			r.YawTable(w)
			fmt.Fprintf(w, "\nFaces %s, by |pitch|:\n\n", pasteWidthBins[i].name)
			r.PitchTable(w)
		}
	}
	fmt.Fprintf(w, "\nother faces published: %.4f a scene (%d on %d of %d scenes; %d of them overlapping a pasted face)\n", float64(others)/float64(max(len(res.Others), 1)), others, on, len(res.Others), beside)
}

// setsOf names the data sets of r's faces, when there is more than one.
func setsOf(samples []dataset.Sample, r *headpose.Report) []string {
	var sets []string
	for _, f := range r.Faces {
		if s := samples[f.Sample].Set; !slices.Contains(sets, s) {
			sets = append(sets, s)
		}
	}
	if len(sets) < 2 {
		return nil
	}
	slices.Sort(sets)
	return sets
}

// bySet is the report of r's faces from data set set.
func bySet(samples []dataset.Sample, r *headpose.Report, set string) *headpose.Report {
	out := &headpose.Report{Case: r.Case + ", " + set}
	for _, f := range r.Faces {
		if samples[f.Sample].Set == set {
			out.Faces = append(out.Faces, f)
		}
	}
	return out
}

// savePasted writes scenes as PNG files into dir.
func savePasted(dir string, scenes []headpose.Pasted) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, s := range scenes {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("pasted-%02d.png", i)))
		if err != nil {
			return err
		}
		err = png.Encode(f, s.Frame)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
