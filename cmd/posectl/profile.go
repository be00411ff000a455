package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image"
	"image/draw"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgepose/posed/train/cascade"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/profile"
)

// runProfile writes a data set of faces turned further than they were
// photographed (train/profile): pictures, labels.csv with a made_from
// column, and a contact sheet to check them by eye before training.
func runProfile(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	data := fs.String("data", filepath.Join(dataRoot(), "aflw2000"), "AFLW2000-3D folder (labels.csv, and a .mat beside each picture)")
	sfm := fs.String("sfm", filepath.Join(dataRoot(), "sfm"), "the Surrey Face Model's folder (eos's share/)")
	out := fs.String("o", "", "folder to write (images/ and labels.csv); its name is the new set's")
	sheet := fs.String("sheet", "", "also write a contact sheet (PNG) of the first -sheet-rows views, each beside its source")
	rows := fs.Int("sheet-rows", 24, "views on the contact sheet")
	most := fs.Int("n", 0, "write at most N views (0: every face the plan turns)")
	p := profile.DefaultPlan
	fs.Float64Var(&p.MinYaw, "min-yaw", p.MinYaw, "the least |yaw| a view is turned to (degrees)")
	fs.Float64Var(&p.MaxYaw, "max-yaw", p.MaxYaw, "the most |yaw| a view is turned to")
	fs.Float64Var(&p.MinTurn, "min-turn", p.MinTurn, "the least a face is turned")
	fs.Float64Var(&p.MaxTurn, "max-turn", p.MaxTurn, "the most a face is turned")
	fs.Float64Var(&p.MaxPitch, "max-pitch", p.MaxPitch, "faces with a larger |pitch| are not turned")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the turns")
	nod := fs.String("nod", "", "nod faces instead of turning them: MIN,MAX degrees up or down (profile.NodPlan: 5,15, faces within ±60° of yaw and ±30° of pitch; -max-pitch still applies)")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: -o DIR is required", errUsage)
	}
	if p.MinYaw < 0 || p.MaxYaw > 99 || p.MinYaw >= p.MaxYaw || p.MinTurn < 0 || p.MinTurn >= p.MaxTurn {
		return fmt.Errorf("%w: want 0 ≤ -min-yaw < -max-yaw ≤ 99 and 0 ≤ -min-turn < -max-turn", errUsage)
	}
	if *nod != "" {
		r, err := parseFloats(*nod)
		if err != nil || len(r) != 2 || r[0] < 0 || r[0] >= r[1] || r[1] > 45 {
			return fmt.Errorf("%w: -nod %q: want MIN,MAX with 0 ≤ MIN < MAX ≤ 45", errUsage, *nod)
		}
		maxPitch := profile.NodPlan.MaxPitch
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "max-pitch" {
				maxPitch = p.MaxPitch
			}
		})
		p = profile.Plan{MinNod: r[0], MaxNod: r[1], NodYaw: profile.NodPlan.NodYaw, MaxPitch: maxPitch, Seed: p.Seed}
	}
	mesh, err := profile.LoadSFM(*sfm)
	if err != nil {
		return err
	}
	ss, err := dataset.Read(*data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(*out, "images"), 0o755); err != nil {
		return err
	}
	var lines [][]string
	var pairs [][2]*image.Gray
	turns := p.Turns(ss)
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for i, s := range ss {
		if turns[i] == (profile.Move{}) {
			continue
		}
		if *most > 0 && len(lines) == *most {
			break
		}
		v, err := mesh.Make(s, turns[i])
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-y%+03.0f.jpg", strings.TrimSuffix(filepath.Base(s.Path), filepath.Ext(s.Path)), v.Sample.Yaw)
		if turns[i].Pitch != 0 {
			name = fmt.Sprintf("%s-p%+03.0f.jpg", strings.TrimSuffix(filepath.Base(s.Path), filepath.Ext(s.Path)), v.Sample.Pitch)
		}
		if err := writeJPEG(filepath.Join(*out, "images", name), v.Image); err != nil {
			return err
		}
		b := v.Sample.Box
		inRange := "0"
		if v.Sample.InRange {
			inRange = "1"
		}
		lines = append(lines, []string{"images/" + name, s.Subject, num(v.Sample.Yaw), num(v.Sample.Pitch), num(v.Sample.Roll),
			num(b.X), num(b.Y), num(b.W), num(b.H), inRange, v.Sample.MadeFrom})
		if *sheet != "" && len(pairs) < *rows {
			src, err := dataset.LoadGray(s.Path)
			if err != nil {
				return err
			}
			pairs = append(pairs, [2]*image.Gray{src, marked(v)})
		}
	}
	if err := writeLabels(filepath.Join(*out, "labels.csv"), lines); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d views of %d faces to %s (%s)\n", len(lines), len(ss), *out, dataset.Terms("aflw2000"))
	if *sheet != "" {
		return writeSheet(*sheet, pairs)
	}
	return nil
}

// writeLabels writes a labels.csv (dataset's layout, made_from added).
func writeLabels(path string, lines [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"path", "subject", "yaw", "pitch", "roll", "x", "y", "w", "h", "in_range_99", "made_from"})
	w.WriteAll(lines)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// marked is the view with its landmarks and its box drawn in white.
func marked(v *profile.View) *image.Gray {
	g := image.NewGray(v.Image.Rect)
	copy(g.Pix, v.Image.Pix)
	set := func(x, y int) {
		if (image.Point{x, y}).In(g.Rect) {
			g.Pix[y*g.Stride+x] = 255
		}
	}
	for _, p := range v.Landmarks {
		x, y := int(math.Round(p[0])), int(math.Round(p[1]))
		for d := -1; d <= 1; d++ {
			set(x+d, y)
			set(x, y+d)
		}
	}
	b := v.Sample.Box
	x0, y0, x1, y1 := int(b.X), int(b.Y), int(b.X+b.W), int(b.Y+b.H)
	for x := x0; x <= x1; x++ {
		set(x, y0)
		set(x, y1)
	}
	for y := y0; y <= y1; y++ {
		set(x0, y)
		set(x1, y)
	}
	return g
}

// writeSheet lays the pairs out four to a row, each picture halved.
func writeSheet(path string, pairs [][2]*image.Gray) error {
	const cell = 225
	perRow := 4
	rows := (len(pairs) + perRow - 1) / perRow
	sheet := image.NewGray(image.Rect(0, 0, 2*cell*perRow, cell*rows))
	for i, pr := range pairs {
		for k, g := range pr {
			x, y := (i%perRow*2+k)*cell, i/perRow*cell
			draw.Draw(sheet, image.Rect(x, y, x+cell, y+cell), cascade.ScaleGray(g, g.Rect.Dx()/2, g.Rect.Dy()/2), image.Point{}, draw.Src)
		}
	}
	return writePNG(path, sheet)
}
