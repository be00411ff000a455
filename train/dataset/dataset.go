// Package dataset reads labelled head-pose images: the labels.csv layout of
// ../shared/data (README there), the original Pointing'04 download (file
// names and .txt boxes) and the original AFLW2000-3D download (.jpg + .mat).
//
// Angles follow the AFLW2000 convention: yaw > 0 when the nose points to the
// image's left, pitch > 0 looking up, degrees.
package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // the data sets are JPEG
	_ "image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/internal/grey"
)

// Sample is one labelled face.
type Sample struct {
	Set     string  // data set name, e.g. "pointing04"
	Path    string  // image file
	Subject string  // person id, for leave-one-person-out splits
	Series  int     // Pointing'04 series (1, 2), else 0
	Yaw     float64 // degrees
	Pitch   float64
	Roll    float64
	// Which angles are labelled. A data set may label only some angles
	// (an empty cell in labels.csv): the others are unknown, not zero.
	HasYaw, HasPitch, HasRoll bool
	InRange                   bool        // all angles within ±99° (AFLW2000's usual subset); true elsewhere
	Box                       feature.Box // annotated box as the data set gives it
	// MadeFrom names the data set a made picture comes from (a face turned
	// further by train/profile, labels.csv's made_from column); empty for a
	// photograph. Such a picture is trained on, never tested on, and held
	// out with its person whenever that person's set is cross-validated.
	MadeFrom string
	// Reading says how a Pointing'04 sample's pan and tilt became its
	// angles: Labels (pan is yaw, tilt pitch), or Faced or FacedYaw
	// (PointingReading).
	Reading Reading
}

// Origin is the data set whose persons the sample shows: MadeFrom for a made
// picture, else Set.
func (s Sample) Origin() string {
	if s.MadeFrom != "" {
		return s.MadeFrom
	}
	return s.Set
}

// Angle returns the named angle ("yaw", "pitch" or "roll") and whether the
// sample has it.
func (s Sample) Angle(name string) (float64, bool) {
	switch name {
	case "yaw":
		return s.Yaw, s.HasYaw
	case "pitch":
		return s.Pitch, s.HasPitch
	case "roll":
		return s.Roll, s.HasRoll
	}
	return 0, false
}

// ErrLayout is returned for a folder in none of the known layouts.
var ErrLayout = errors.New("dataset: unknown folder layout")

// Read loads the data set in dir: labels.csv if there is one, else the
// original Pointing'04 layout (PersonNN/*.jpg with .txt boxes), else the
// original AFLW2000-3D layout (*.jpg with .mat). Samples are sorted by path.
func Read(dir string) ([]Sample, error) {
	if _, err := os.Stat(filepath.Join(dir, "labels.csv")); err == nil {
		return ReadLabels(dir)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "Person*", "*.txt")); len(m) > 0 {
		return ReadPointing04(dir)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.mat")); len(m) > 0 {
		return ReadAFLW2000(dir)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "*.mat")); len(m) > 0 {
		return ReadAFLW2000(filepath.Dir(m[0]))
	}
	return nil, fmt.Errorf("%w: %s has no labels.csv, no Person*/*.txt and no *.mat", ErrLayout, dir)
}

// ReadLabels reads dir/labels.csv (columns path, subject, x, y, w, h, at
// least one of yaw, pitch and roll, and optionally series and in_range_99,
// in any order). An empty or absent yaw, pitch or roll leaves that angle
// unlabelled; a row must label at least one angle.
func ReadLabels(dir string) ([]Sample, error) {
	path := filepath.Join(dir, "labels.csv")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	samples, err := parseLabels(f, dir, filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return samples, nil
}

func parseLabels(r io.Reader, dir, set string) ([]Sample, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"path", "subject", "x", "y", "w", "h"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %q column (have %v)", need, head)
		}
	}
	_, hasYaw := col["yaw"]
	_, hasPitch := col["pitch"]
	_, hasRoll := col["roll"]
	if !hasYaw && !hasPitch && !hasRoll {
		return nil, fmt.Errorf("no yaw, pitch or roll column (have %v)", head)
	}
	var out []Sample
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		num := func(name string) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[name]]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("line %d: %s %q is not a number", line, name, rec[col[name]])
			}
			return v, nil
		}
		rel := rec[col["path"]]
		if !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("line %d: path %q leaves the data set's folder (want a path inside it)", line, rel)
		}
		s := Sample{Set: set, Path: filepath.Join(dir, rel), Subject: rec[col["subject"]], InRange: true}
		vals := make([]float64, 4)
		for i, name := range []string{"x", "y", "w", "h"} {
			if vals[i], err = num(name); err != nil {
				return nil, err
			}
		}
		s.Box = feature.Box{X: vals[0], Y: vals[1], W: vals[2], H: vals[3]}
		if !s.Box.Valid() {
			return nil, fmt.Errorf("line %d: box %v has no area", line, s.Box)
		}
		for _, a := range []struct {
			name string
			v    *float64
			has  *bool
		}{{"yaw", &s.Yaw, &s.HasYaw}, {"pitch", &s.Pitch, &s.HasPitch}, {"roll", &s.Roll, &s.HasRoll}} {
			i, ok := col[a.name]
			if !ok || strings.TrimSpace(rec[i]) == "" {
				continue
			}
			if *a.v, err = num(a.name); err != nil {
				return nil, err
			}
			*a.has = true
		}
		if !s.HasYaw && !s.HasPitch && !s.HasRoll {
			return nil, fmt.Errorf("line %d: %s labels no angle (yaw, pitch and roll are empty)", line, rec[col["path"]])
		}
		optionalColumns(&s, col, rec)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// optionalColumns reads the columns a data set may leave out: series,
// made_from, in_range_99.
func optionalColumns(s *Sample, col map[string]int, rec []string) {
	if i, ok := col["series"]; ok && rec[i] != "" {
		s.Series, _ = strconv.Atoi(rec[i])
	}
	if i, ok := col["made_from"]; ok {
		s.MadeFrom = strings.TrimSpace(rec[i])
	}
	if i, ok := col["in_range_99"]; ok {
		s.InRange = strings.TrimSpace(rec[i]) == "1"
	}
}

// pointingName matches Pointing'04 file names: "personne" (original) or
// "person" (../shared/data), person (2 digits), series (1), index (2), tilt
// and pan (signed degrees).
var pointingName = regexp.MustCompile(`^person(?:ne)?(\d\d)(\d)(\d\d)([+-]\d+)([+-]\d+)\.jpg$`)

// ReadPointing04 reads the original Pointing'04 layout: dir/PersonNN/ with
// one .jpg per pose and a .txt beside it holding the annotated box (name,
// blank line, "Face", centre x, centre y, width, height). The labels come
// from the file names: tilt is pitch, pan is yaw.
func ReadPointing04(dir string) ([]Sample, error) {
	txts, err := filepath.Glob(filepath.Join(dir, "Person*", "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	var out []Sample
	for _, txt := range txts {
		jpg := strings.TrimSuffix(txt, ".txt") + ".jpg"
		m := pointingName.FindStringSubmatch(filepath.Base(jpg))
		if m == nil {
			return nil, fmt.Errorf("dataset: %s: not a Pointing'04 file name", jpg)
		}
		data, err := os.ReadFile(txt)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		box, err := parsePointingBox(data)
		if err != nil {
			return nil, fmt.Errorf("dataset: %s: %w", txt, err)
		}
		series, _ := strconv.Atoi(m[2])
		tilt, _ := strconv.Atoi(m[4])
		pan, _ := strconv.Atoi(m[5])
		out = append(out, Sample{
			Set: "pointing04", Path: jpg, Subject: strings.TrimLeft(m[1], "0"), Series: series,
			Yaw: float64(pan), Pitch: float64(tilt), HasYaw: true, HasPitch: true, InRange: true, Box: box,
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no Pointing'04 images in %s", ErrLayout, dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Reading is how Pointing'04's pan and tilt are read as angles.
type Reading string

const (
	// Labels reads pan as yaw and tilt as pitch, with no roll: the data
	// README's reading (and a sample's until PointingReading reads it).
	Labels Reading = ""
	// Faced reads them as the direction the person faced, with the roll
	// and pitch of that head.
	Faced Reading = "faced"
	// FacedYaw takes the yaw of the faced head and keeps the tilt as
	// pitch, with no roll.
	FacedYaw Reading = "faced-yaw"
)

// About says how r read Pointing'04's angles, for a model card ("" for
// Labels, the data README's reading).
func (r Reading) About() string {
	switch r {
	case Faced:
		return "Pan and tilt read as the direction faced (R = Ry(pan)·Rx(tilt)), in the convention below."
	case FacedYaw:
		return "Yaw read as the faced head's (R = Ry(pan)·Rx(tilt)), tilt as pitch."
	}
	return ""
}

// Readings names the readings as posectl's -pointing04 takes them.
var Readings = map[string]Reading{"labels": Labels, "faced": Faced, "faced-yaw": FacedYaw}

// PointingReading reads the Pointing'04 samples' pan and tilt as r says;
// other samples, and samples read already, are left as they are.
//
// Pointing'04's persons look at marks placed at a pan (about the vertical)
// and a tilt (the elevation above the horizontal). A head faces such a
// mark by turning about the neck by pan and then nodding about its own
// ear-to-ear axis by tilt: R = Ry(pan)·Rx(tilt), its nose along the
// direction of the mark. The labels' convention composes the other way,
// R = Rx(pitch)·Ry(yaw)·Rz(−roll), so pan and tilt are yaw and pitch only
// where one of them is 0. Elsewhere the faced head has a roll, and less
// yaw: pan 60°, tilt −30° is yaw 48.6°, pitch −49.1°, roll −40.9°, and at
// pan 90° any tilt gives the convention's lost angle (pitch and roll
// ±90°). A model learnt from AFLW2000 alone reads Pointing'04's heads
// nearer these rotations than the file names', with about half their roll
// (docs/measured.md, "Pointing'04's angles"). FacedYaw keeps the faced
// head's yaw, the sine of its nose's sideways part (sin pan·cos tilt),
// which no roll moves, and the tilt as pitch.
func PointingReading(samples []Sample, r Reading) {
	if r == Labels {
		return
	}
	for i := range samples {
		s := &samples[i]
		if s.Set != "pointing04" || s.Reading != Labels || !s.HasYaw || !s.HasPitch {
			continue
		}
		y, p, ro := rotation.Head(s.Yaw, 0, 0).Mul(rotation.Head(0, s.Pitch, 0)).Angles()
		s.Yaw, s.Reading = tidy(y), r
		if r == Faced {
			s.Pitch, s.Roll, s.HasRoll = tidy(p), tidy(ro), true
		}
	}
}

// tidy rounds a converted angle to 10⁻⁶ degrees, so that a pan or tilt of
// 0 converts to 0 (not −1e−15) and labels read back from a file compare.
func tidy(a float64) float64 {
	a = math.Round(a*1e6) / 1e6
	if a == 0 {
		return 0
	}
	return a
}

// parsePointingBox reads the last four numbers of a Pointing'04 .txt file:
// centre x, centre y, width, height.
func parsePointingBox(data []byte) (feature.Box, error) {
	var nums []float64
	for _, f := range strings.Fields(string(data)) {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			nums = append(nums, v)
		}
	}
	if len(nums) < 4 {
		return feature.Box{}, fmt.Errorf("want centre x, centre y, width and height, found %d numbers", len(nums))
	}
	n := nums[len(nums)-4:]
	b := feature.Box{X: n[0] - n[2]/2, Y: n[1] - n[3]/2, W: n[2], H: n[3]}
	if !b.Valid() {
		return b, fmt.Errorf("box %v has no area", b)
	}
	return b, nil
}

// ReadAFLW2000 reads the original AFLW2000-3D layout: image*.jpg with a .mat
// beside each. Angles come from Pose_Para (pitch, yaw, roll in radians), the
// box is the tight box around the 68 landmarks of pt3d_68 (x and y rows).
func ReadAFLW2000(dir string) ([]Sample, error) {
	mats, err := filepath.Glob(filepath.Join(dir, "*.mat"))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	var out []Sample
	for _, mp := range mats {
		data, err := os.ReadFile(mp)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		s, err := parseAFLW(data)
		if err != nil {
			return nil, fmt.Errorf("dataset: %s: %w", mp, err)
		}
		s.Path = strings.TrimSuffix(mp, ".mat") + ".jpg"
		s.Subject = strings.TrimSuffix(filepath.Base(mp), ".mat")
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no .mat files in %s", ErrLayout, dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func parseAFLW(data []byte) (Sample, error) {
	vars, err := parseMAT(data)
	if err != nil {
		return Sample{}, err
	}
	pose, ok := vars["Pose_Para"]
	if !ok || len(pose.Data) < 3 {
		return Sample{}, fmt.Errorf("no Pose_Para with 3 angles")
	}
	pts, ok := vars["pt3d_68"]
	if !ok || len(pts.Dims) != 2 || pts.Dims[0] < 2 || pts.Dims[1] < 1 {
		return Sample{}, fmt.Errorf("no pt3d_68 landmark matrix")
	}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for j := 0; j < pts.Dims[1]; j++ {
		x, y := pts.At(0, j), pts.At(1, j)
		minX, maxX = math.Min(minX, x), math.Max(maxX, x)
		minY, maxY = math.Min(minY, y), math.Max(maxY, y)
	}
	deg := 180 / math.Pi
	s := Sample{
		Set: "aflw2000", Pitch: pose.Data[0] * deg, Yaw: pose.Data[1] * deg, Roll: pose.Data[2] * deg,
		HasYaw: true, HasPitch: true, HasRoll: true,
		Box: feature.Box{X: minX, Y: minY, W: maxX - minX, H: maxY - minY},
	}
	s.InRange = math.Abs(s.Yaw) <= 99 && math.Abs(s.Pitch) <= 99 && math.Abs(s.Roll) <= 99
	if !s.Box.Valid() {
		return s, fmt.Errorf("landmark box %v has no area", s.Box)
	}
	return s, nil
}

// LoadGray decodes the image at path as 8-bit grey.
func LoadGray(path string) (*image.Gray, error) {
	img, err := decode(path)
	if err != nil {
		return nil, err
	}
	return grey.Grey(nil, img), nil
}

// Load decodes the image file at path as it is (in colour).
func Load(path string) (image.Image, error) { return decode(path) }

// decode reads and decodes the image file at path.
func decode(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return img, nil
}

// LoadRed decodes the image at path and returns its red channel as grey:
// skin is bright and even in red light, as it is under the near-infrared
// illumination of in-car and night cameras, which a visible-light luma
// does not show. A grey image is returned as it is.
func LoadRed(path string) (*image.Gray, error) {
	img, err := decode(path)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	out := image.NewGray(b)
	switch s := img.(type) {
	case *image.Gray:
		return s, nil
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := s.YOffset(x, y), s.COffset(x, y)
				r, _, _ := color.YCbCrToRGB(s.Y[yi], s.Cb[ci], s.Cr[ci])
				out.Pix[(y-b.Min.Y)*out.Stride+(x-b.Min.X)] = r
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, _, _, _ := img.At(x, y).RGBA()
				out.Pix[(y-b.Min.Y)*out.Stride+(x-b.Min.X)] = uint8(r >> 8)
			}
		}
	}
	return out, nil
}

// Terms returns the licence terms of a data set, for model cards: a model
// trained on a data set inherits them.
func Terms(set string) string {
	switch set {
	case "pointing04":
		return "Pointing'04 / PRIMA head pose database: free for research as long as the source paper is cited — " +
			"N. Gourier, D. Hall, J. L. Crowley, \"Estimating face orientation from robust detection of salient facial features\", " +
			"ICPR Workshop on Visual Observation of Deictic Gestures, 2004."
	case "aflw2000":
		return "AFLW2000-3D (training part): non-commercial research only (AFLW licence, TU Graz; AFLW2000-3D by X. Zhu et al., " +
			"\"Face Alignment Across Large Poses: A 3D Solution\", CVPR 2016). A model trained on it inherits these terms."
	}
	return "unknown data set: check its licence before using or distributing a model trained on it."
}

// Root is where the data sets are: $POSED_DATA if set, else shared/data
// beside the checkout (../shared/data from the folder holding go.mod, found
// by walking up from the working directory), else ../shared/data.
func Root() string {
	if d := os.Getenv("POSED_DATA"); d != "" {
		return d
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.Join(filepath.Dir(dir), "shared", "data")
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return filepath.Join("..", "shared", "data")
}

// Landmarks3D reads the 68 three-dimensional landmarks (pt3d_68) of an
// AFLW2000-3D .mat file: x and y in image pixels, z the depth in the same
// scale (the fitted 3-D face's landmarks, so the jaw points lie on the jaw
// whether or not it is seen).
func Landmarks3D(matPath string) ([68][3]float64, error) {
	var out [68][3]float64
	data, err := os.ReadFile(matPath)
	if err != nil {
		return out, fmt.Errorf("dataset: %w", err)
	}
	vars, err := parseMAT(data)
	if err != nil {
		return out, fmt.Errorf("dataset: %s: %w", matPath, err)
	}
	pts, ok := vars["pt3d_68"]
	if !ok || len(pts.Dims) != 2 || pts.Dims[0] != 3 || pts.Dims[1] != 68 {
		return out, fmt.Errorf("dataset: %s: no 3×68 pt3d_68 landmark matrix", matPath)
	}
	for j := range out {
		for i := 0; i < 3; i++ {
			v := pts.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return out, fmt.Errorf("dataset: %s: landmark %d is not a number", matPath, j+1)
			}
			out[j][i] = v
		}
	}
	return out, nil
}
