// Command posectl is posed's offline tool: it trains head-pose models,
// evaluates them with the paper's protocol, predicts on images, exports
// features and inspects model files. `posectl help` lists the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type command struct {
	name, usage, summary string
	run                  func(args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"train", "train [flags] -o MODEL.gllim", "train a head-pose model (variants of docs/method.md §5)", runTrain},
		{"eval", "eval -protocol lopo|-model M [flags]", "measure MAE/STD/RMSE per angle (docs/method.md §6)", runEval},
		{"predict", "predict [-model M] [-box x,y,w,h] [-draw OUT.png] IMAGE...", "estimate the pose of the faces in images", runPredict},
		{"features", "features [-data DIR] [-o OUT.csv]", "export p-HOG features and labels as CSV", runFeatures},
		{"sequence", "sequence [-o DIR] [-fallback IMAGE]", "write the demo frame sequence `make run` replays", runSequence},
		{"cascade", "cascade -o FILE [-view LO,HI] [-half H] [flags]", "train a detection cascade for turned faces (pico, pigo's format)", runCascade},
		{"cut", "cut -trees N IN OUT", "keep a cascade's first N trees (cut after a stage: the training prints where each ends)", runCut},
		{"detections", "detections [-cascades A,B -half H] [flags]", "measure detectors: faces found by |yaw| on unseen persons, false detections per frame", runDetections},
		{"decisions", "decisions -per-face EVAL.csv [flags]", "measure the attention decisions (road, camera) on an evaluation's poses, by |yaw|", runDecisions},
		{"profile", "profile -o DIR [-sheet FILE.png] [flags]", "make faces turned further from AFLW2000's photographs with a 3-D face (face profiling)", runProfile},
		{"yunet-import", "yunet-import [-o FILE] facedetectcnn-data.cpp", "convert libfacedetection's CNN weights into posed's weights file", runYunetImport},
		{"look-train", "look-train -data DIRS -scenes DIR [-o FILE] [flags]", "train the close look's head on the face network's features (faces against what it finds in face-free scenes)", runLookTrain},
		{"inspect", "inspect [-json] MODEL.gllim", "print a model file's header in words", runInspect},
		{"version", "version", "print the version", func([]string, io.Writer) error {
			fmt.Println("posectl", version)
			return nil
		}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: posectl COMMAND [flags] [args]")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-32s %s\n", c.usage, c.summary)
	}
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	for _, c := range commands() {
		if c.name == name {
			stop, err := startProfile(os.Getenv("POSECTL_CPUPROFILE"))
			if err == nil {
				err = c.run(os.Args[2:], os.Stdout)
				stop()
			}
			switch {
			case errors.Is(err, flag.ErrHelp):
				os.Exit(0)
			case errors.Is(err, errUsage):
				fmt.Fprintf(os.Stderr, "posectl %s: %v\nusage: posectl %s\n", name, err, c.usage)
				os.Exit(2)
			case errors.Is(err, errNoFace):
				fmt.Fprintf(os.Stderr, "posectl %s: %v\n", name, err)
				os.Exit(3)
			case err != nil:
				fmt.Fprintf(os.Stderr, "posectl %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	if name == "-h" || name == "-help" || name == "help" {
		usage(os.Stdout)
		return
	}
	fmt.Fprintf(os.Stderr, "posectl: unknown command %q\n", name)
	usage(os.Stderr)
	os.Exit(2)
}

var errUsage = errors.New("bad usage")

// startProfile writes a CPU profile of the command to path (none if path
// is empty: POSECTL_CPUPROFILE=FILE asks for one, to see where a long
// training or evaluation spends its time; go tool pprof reads it).
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("POSECTL_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("POSECTL_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "POSECTL_CPUPROFILE: %v\n", err)
		}
	}, nil
}
