package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/edgepose/posed/train/yunetsrc"
)

// runYunetImport converts libfacedetection's weights (its C++ data file)
// into posed's weights file (infer/yunet/weights/yunet.bin).
func runYunetImport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("yunet-import", flag.ContinueOnError)
	out := fs.String("o", "infer/yunet/weights/yunet.bin", "the weights file to write")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("%w: want libfacedetection's facedetectcnn-data.cpp, got %d arguments", errUsage, len(files))
	}
	src, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	w, err := yunetsrc.Parse(string(src))
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	b, err := w.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes\n", *out, len(b))
	return nil
}
