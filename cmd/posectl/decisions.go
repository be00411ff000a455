package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/attention"
)

// runDecisions measures the attention decisions posed makes from the poses
// an evaluation predicted (posectl eval -per-face): for each face, whether
// it looks at the road (the block: |yaw| ≤ 22.5°, |pitch| ≤ 25°)
// and at the camera (the built-in target, within attention.camera of the
// lens), decided by the attention stage itself from the predicted angles
// and σ, against the same decision from the labels; by |yaw| bin.
func runDecisions(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("decisions", flag.ContinueOnError)
	perFace := fs.String("per-face", "", "comma-separated per-face CSV files of posectl eval (-per-face)")
	only := fs.String("case", "", "only the evaluation cases whose name contains this")
	maxStd := fs.Float64("max-std", config.Default().Attention.MaxStd, "attention.max_std: a face whose yaw or pitch σ is above it is unknown")
	doubt := fs.Float64("doubt", config.Default().Attention.Doubt, "attention.doubt: a face nearer than this many σ to its target's border is unknown")
	cone := fs.Float64("camera", config.Default().Attention.Camera, "attention.camera: the camera target's radius, degrees")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *perFace == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: give -per-face FILE[,FILE]", errUsage)
	}
	byCase := map[string][]faceRow{}
	unread := map[string]int{}
	var order []string
	for _, path := range strings.Split(*perFace, ",") {
		rows, err := readPerFace(path)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if !strings.Contains(r.caseName, *only) || !r.found {
				continue
			}
			if r.unread {
				// Published without angles (track.unread): no decision to
				// make, and none the attention stage makes of it.
				unread[r.caseName]++
				continue
			}
			if _, ok := byCase[r.caseName]; !ok {
				order = append(order, r.caseName)
			}
			byCase[r.caseName] = append(byCase[r.caseName], r)
		}
	}
	if len(order) == 0 {
		return errors.New("no face with a prediction in the files (and -case)")
	}
	road := config.AttentionTarget{Yaw: []float64{-22.5, 22.5}, Pitch: []float64{-25, 25}}
	for _, c := range order {
		fmt.Fprintf(stdout, "%s (max_std %g°, doubt %gσ, camera %g°; agreement with the labels' decision, %% of the faces with a decision; unknown: in doubt; %d faces published without angles left out)\n\n", c, *maxStd, *doubt, *cone, unread[c])
		fmt.Fprintln(stdout, "| \\|yaw\\| | faces | road agrees | road unknown | camera agrees | camera unknown | road agrees, no doubt | camera agrees, no doubt |")
		fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
		rows := byCase[c]
		var all decisionTally
		for lo := 0.0; lo < 90; lo += 15 {
			var in []faceRow
			for _, r := range rows {
				if a := math.Abs(r.truth[0]); a >= lo && (a < lo+15 || lo == 75 && a <= 90) {
					in = append(in, r)
				}
			}
			t, err := tallyDecisions(in, road, *cone, *maxStd, *doubt)
			if err != nil {
				return err
			}
			all.add(t)
			fmt.Fprintf(stdout, "| %g–%g | %s\n", lo, lo+15, t)
		}
		fmt.Fprintf(stdout, "| all | %s\n\n", all)
	}
	return nil
}

// faceRow is one line of eval's per-face CSV.
type faceRow struct {
	caseName   string
	found      bool
	unread     bool       // found and published without angles
	truth, est [3]float64 // yaw, pitch, roll
	std        [3]float64
}

// readPerFace reads eval's per-face CSV by its header's names.
func readPerFace(path string) ([]faceRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no faces", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	need := []string{"case", "found", "yaw_true", "pitch_true", "roll_true", "yaw", "pitch", "roll", "yaw_std", "pitch_std", "roll_std"}
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("%s: no column %q: not a per-face file of posectl eval", path, n)
		}
	}
	var out []faceRow
	for line, rec := range recs[1:] {
		r := faceRow{caseName: rec[col["case"]], found: rec[col["found"]] == "true"}
		r.unread = r.found && rec[col["yaw"]] == "" && rec[col["pitch"]] == ""
		num := func(name string) float64 {
			if rec[col[name]] == "" && strings.HasPrefix(name, "roll") {
				return 0 // Pointing'04 has no roll; the decisions do not use it
			}
			v, e := strconv.ParseFloat(rec[col[name]], 64)
			if e != nil && err == nil {
				err = fmt.Errorf("%s:%d: %s: %w", path, line+2, name, e)
			}
			return v
		}
		for i, a := range []string{"yaw", "pitch", "roll"} {
			r.truth[i] = num(a + "_true")
			if r.found && !r.unread {
				r.est[i], r.std[i] = num(a), num(a+"_std")
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// decisionTally counts agreements of the road and camera decisions with
// the labels': of the faces decided (not in doubt), and of all faces with
// the doubt ignored.
type decisionTally struct {
	n, roadKnown, camKnown, roadOK, camOK, roadAll, camAll int
}

func (t *decisionTally) add(o decisionTally) {
	t.n += o.n
	t.roadKnown, t.camKnown = t.roadKnown+o.roadKnown, t.camKnown+o.camKnown
	t.roadOK, t.camOK, t.roadAll, t.camAll = t.roadOK+o.roadOK, t.camOK+o.camOK, t.roadAll+o.roadAll, t.camAll+o.camAll
}

func (t decisionTally) String() string {
	pct := func(a, b int) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f %%", 100*float64(a)/float64(b))
	}
	return fmt.Sprintf("%d | %s | %s | %s | %s | %s | %s |", t.n, pct(t.roadOK, t.roadKnown), pct(t.n-t.roadKnown, t.n),
		pct(t.camOK, t.camKnown), pct(t.n-t.camKnown, t.n), pct(t.roadAll, t.n), pct(t.camAll, t.n))
}

// tallyDecisions decides, with the attention stage, each face's road and
// camera targets from its prediction (with and without the σ bound) and
// from its labels, and counts the agreements.
func tallyDecisions(rows []faceRow, road config.AttentionTarget, cone, maxStd, doubt float64) (decisionTally, error) {
	var t decisionTally
	// Margin 0: one image is one decision, with no hysteresis to enter.
	stage := func(targets map[string]config.AttentionTarget, camera, std, doubt float64) (*attention.Stage, error) {
		a := config.Default().Attention
		a.Targets, a.Camera, a.Margin, a.MaxStd, a.Doubt = targets, camera, 0, std, doubt
		return assemble.Attention(a)
	}
	roadSt, err := stage(map[string]config.AttentionTarget{"road": road}, 0, maxStd, doubt)
	if err != nil {
		return t, err
	}
	camSt, _ := stage(nil, cone, maxStd, doubt)
	roadAny, _ := stage(map[string]config.AttentionTarget{"road": road}, 0, 0, 0)
	camAny, _ := stage(nil, cone, 0, 0)
	now := time.Unix(0, 0)
	decide := func(s *attention.Stage, a, std [3]float64) (string, bool) {
		// A new track each time: a face is decided where it is first seen.
		now = now.Add(time.Hour)
		f := []message.Face{{Track: 1, Box: [4]float64{270, 190, 370, 290}, Yaw: message.Some(a[0]), Pitch: message.Some(a[1]),
			Roll: message.Some(a[2]), YawStd: message.Some(std[0]), PitchStd: message.Some(std[1])}}
		s.Apply(f, 640, 480, now, 0)
		s.Apply(nil, 640, 480, now.Add(time.Minute), -1) // forget it
		return f[0].Target.Name, f[0].AttentionReason == ""
	}
	for _, r := range rows {
		t.n++
		wantRoad, _ := decide(roadAny, r.truth, [3]float64{})
		wantCam, _ := decide(camAny, r.truth, [3]float64{})
		gotRoad, known := decide(roadSt, r.est, r.std)
		gotCam, camKnown := decide(camSt, r.est, r.std)
		anyRoad, _ := decide(roadAny, r.est, r.std)
		anyCam, _ := decide(camAny, r.est, r.std)
		if anyRoad == wantRoad {
			t.roadAll++
		}
		if anyCam == wantCam {
			t.camAll++
		}
		if known {
			t.roadKnown++
			if gotRoad == wantRoad {
				t.roadOK++
			}
		}
		if camKnown {
			t.camKnown++
			if gotCam == wantCam {
				t.camOK++
			}
		}
	}
	return t, nil
}
