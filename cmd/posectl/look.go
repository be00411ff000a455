package main

import (
	"flag"
	"fmt"
	"image"
	"io"
	"os"
	"strings"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/headpose"
)

// runLookTrain trains the close look's head (detect.LookHead): the
// network's features where posed looks closely at a new face, at the
// faces of -data's photographs, at their faces pasted into face-free
// scenes, and at what it finds in the scenes themselves, all but the
// held-out third of -scenes, which measures it (docs/method.md §9).
func runLookTrain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("look-train", flag.ContinueOnError)
	data := fs.String("data", "", "labelled face sets (comma-separated folders)")
	scenes := fs.String("scenes", "", "a folder of face-free pictures (the held-out third is left out)")
	model := fs.String("model", "models/default.gllim", "the pose model that reads the candidates, as the daemon does")
	out := fs.String("o", "infer/detect/weights/look.bin", "the head's file to write")
	c := fs.Float64("c", 0.01, "the data's weight against the penalty ½‖w‖² (logistic regression's C)")
	keep := fs.Float64("keep", 0.995, "the share of the training faces the look finds that the head keeps")
	seed := fs.Uint64("seed", 1, "the noise's and the pasting's seed")
	near := fs.Float64("near", 0, "each training scene also seen this many times nearer: a random part of it enlarged (0: not)")
	frames := fs.Int("frames", headpose.LookFrames, "noisy frames of each training scene, each with its own draw of a camera's noise")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *data == "" || *scenes == "" {
		return fmt.Errorf("%w: look-train needs -data and -scenes", errUsage)
	}
	if *frames < 1 {
		return fmt.Errorf("%w: look-train -frames %d: want at least 1 noisy frame a scene", errUsage, *frames)
	}
	var faces []dataset.Sample
	for _, dir := range strings.Split(*data, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		s, err := dataset.Read(dir)
		if err != nil {
			return err
		}
		for _, x := range s {
			if x.MadeFrom == "" {
				faces = append(faces, x)
			}
		}
	}
	pics, err := cascade.ReadPictures(*scenes, 640)
	if err != nil {
		return err
	}
	var rest []*image.Gray
	for _, p := range pics {
		if !cascade.HeldOut(p.Name) {
			rest = append(rest, p.Img.Gray())
		}
	}
	if *near > 1 {
		rest = append(rest, headpose.NearViews(rest, *near, *seed)...)
	}
	if len(faces) == 0 || len(rest) == 0 {
		return fmt.Errorf("%w: %d faces in -data, %d training scenes in -scenes: need both", errUsage, len(faces), len(rest))
	}
	pasted, err := headpose.PasteScenes(faces, rest, headpose.PasteOptions{Widths: []int{32, 36, 40, 44, 48, 56, 64}, Seed: *seed})
	if err != nil {
		return err
	}
	cfg := config.Default()
	est, m, err := estimator(cfg.Model, cfg.Research, *model, cfg.Model.Expert)
	if err != nil {
		return err
	}
	samples, err := headpose.CollectLooks(headpose.LookData{Faces: faces, Pasted: pasted, Scenes: rest, Frames: *frames, StartStd: cfg.Track.StartStd, Seed: *seed},
		yunet.New(yunet.Default()), est, detect.CalibrationOf(m.Calibration))
	if err != nil {
		return err
	}
	h, rep, err := headpose.FitLookHead(samples, headpose.LookFit{C: *c, Keep: *keep, ConfirmScore: cfg.Detect.Confirm})
	if err != nil {
		return err
	}
	b, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	n := 0
	for _, p := range pasted {
		n += len(p.Faces)
	}
	fmt.Fprintf(stdout, "looks at %d faces and %d other things (%d photographs, %d scenes with %d pasted, %d scenes); %d iterations\n",
		rep.Faces, rep.NotFaces, len(faces), len(pasted), n, len(rest), rep.Iterations)
	fmt.Fprintf(stdout, "of those the look finds (confidence %.2g): faces %d, %d kept (%.2f %%); other things %d, %d kept\n",
		cfg.Detect.Confirm, rep.FacesFound, rep.FacesKept, 100*float64(rep.FacesKept)/float64(max(rep.FacesFound, 1)), rep.NotFacesFound, rep.NotFacesKept)
	fmt.Fprintf(stdout, "wrote %s: %d bytes\n", *out, len(b))
	return nil
}
