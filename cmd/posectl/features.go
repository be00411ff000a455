package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/headpose"
)

// runFeatures exports the p-HOG features of every face (at its face box)
// with its labels, so other tools can be compared on the same inputs.
func runFeatures(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("features", flag.ContinueOnError)
	var data dataFlags
	data.register(fs, dataRoot()+"/pointing04")
	var df detectFlags
	df.register(fs, 40)
	out := fs.String("o", "-", "CSV file to write (- for standard output)")
	box := fs.String("box", "canonical", "face box: canonical (the detector's, by each data set's convention), square or annotated")
	cache := cacheFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := headpose.ParseBoxKind(*box)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	det, err := detect.New(df.p)
	if err != nil {
		return err
	}
	samples, err := data.load()
	if err != nil {
		return err
	}
	bar := newProgressBar()
	bank, err := headpose.NewBank(samples, headpose.BankOptions{Box: kind, Detector: det, Cache: *cache}, bar.features)
	bar.done()
	if err != nil {
		return err
	}
	w := stdout
	var f *os.File
	if *out != "-" {
		if f, err = os.Create(*out); err != nil {
			return err
		}
		w = f
	}
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "path,set,subject,yaw,pitch,roll,box_x,box_y,box_side")
	for d := 0; d < feature.Dim; d++ {
		fmt.Fprintf(bw, ",f%d", d)
	}
	fmt.Fprintln(bw)
	for i, s := range samples {
		b := bank.FaceBox(i)
		angle := func(v float64, ok bool) string {
			if !ok {
				return ""
			}
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		fmt.Fprintf(bw, "%q,%s,%s,%s,%s,%s,%.2f,%.2f,%.2f", s.Path, s.Set, s.Subject, angle(s.Yaw, s.HasYaw), angle(s.Pitch, s.HasPitch),
			angle(s.Roll, s.HasRoll), b.X, b.Y, b.W)
		for _, v := range bank.Base(i).Feat[0] {
			bw.WriteByte(',')
			bw.WriteString(strconv.FormatFloat(float64(v), 'g', 6, 32))
		}
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if f != nil {
		return f.Close()
	}
	return nil
}
