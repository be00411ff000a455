package cascade

import (
	"fmt"
	"hash/fnv"
	"image"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// View is the range of head turns one cascade learns: faces with
// Lo ≤ |yaw| ≤ Hi, those turned the other way mirrored, so that the
// cascade sees every face turned one way (yaw > 0: the nose towards the
// image's left) and its mirror (detect.Cascade.Mirrored) finds the others.
type View struct{ Lo, Hi float64 }

func (v View) String() string { return fmt.Sprintf("%g–%g°", v.Lo, v.Hi) }

// ParseView reads "LO,HI" in degrees.
func ParseView(s string) (View, error) {
	lo, hi, ok := strings.Cut(s, ",")
	a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil || !(0 <= a && a < b && b <= 180) {
		return View{}, fmt.Errorf("cascade: view %q is not LO,HI with 0 ≤ LO < HI ≤ 180 degrees", s)
	}
	return View{a, b}, nil
}

// Has reports whether a face of this yaw belongs to the view (either side).
func (v View) Has(yaw float64) bool { return math.Abs(yaw) >= v.Lo && math.Abs(yaw) <= v.Hi }

// Half is the half of the persons a face belongs to (0 or 1), for training
// a cascade on one half and measuring it on the other: Fold(s, 2).
func Half(s dataset.Sample) int { return Fold(s, 2) }

// Fold is the fold of n (≥ 1) that a face's person belongs to, for
// training a cascade on every fold but one and measuring it on that one:
// Pointing'04 persons by their number modulo n (3 persons a fold for n =
// 5), other sets by a hash of the person; a picture made from another
// (dataset.Sample.MadeFrom) in its person's fold.
func Fold(s dataset.Sample, n int) int {
	if s.Origin() == "pointing04" {
		if p, err := strconv.Atoi(s.Subject); err == nil {
			return p % n
		}
	}
	h := fnv.New32a()
	h.Write([]byte(s.Origin() + "/" + s.Subject)) // a made picture goes with its person
	return int(h.Sum32() % uint32(n))
}

// Calibrates reports whether a face's person is one of about 1 in n (n ≥
// 2) whose faces set a cascade's stage thresholds instead of growing its
// trees (Options.Calibration): drawn by a hash of the person apart from
// Fold's, so that every fold gives some of its persons.
func Calibrates(s dataset.Sample, n int) bool {
	h := fnv.New32a()
	h.Write([]byte("calibrate/" + s.Set + "/" + s.Subject))
	return h.Sum32()%uint32(n) == 0
}

// Calibration marks the windows of f whose person Calibrates (1 in n) and
// counts them and their persons: the faces that set the stage thresholds
// (Options.Calibration).
func (f FaceSet) Calibration(samples []dataset.Sample, n int) (marks []bool, windows, persons int) {
	marks = make([]bool, len(f.Windows))
	seen := map[string]bool{}
	for i, k := range f.Sample {
		if marks[i] = Calibrates(samples[k], n); marks[i] {
			seen[samples[k].Set+"/"+samples[k].Subject] = true
			windows++
		}
	}
	return marks, windows, len(seen)
}

// FaceSet holds the face windows a cascade trains on.
type FaceSet struct {
	Images  []Image
	Windows []Window
	Sample  []int // each window's sample (index into the samples given)
	Skipped int   // faces whose box does not fit inside the image
}

// Jitter is how the face windows are moved: N windows per face, the box
// itself and N−1 seeded moves of its centre (σ Centre of its side) and
// log-side (σ Scale), as the scan meets faces between its steps.
type Jitter struct {
	N             int
	Centre, Scale float64
	// SetN, if it names a face's data set, is that set's N instead (to
	// weigh a set's faces more).
	SetN map[string]int
	// TiltN, if it names the data set of a face whose labelled |pitch| is
	// Tilt degrees or more, is its N instead of SetN's or N: turned faces
	// that also look up or down are few in the data and the ones a
	// cascade misses most in the wild, so a stage keeping its share of
	// the windows keeps more of them.
	Tilt  float64
	TiltN map[string]int
	// Rotations more copies of each face's image, turned about the box
	// centre by angles drawn uniformly within ±Rotate degrees, each with
	// its windows (in-plane turns the scan does not search).
	Rotations int
	Rotate    float64
	// Backdrops, if any, are face-free pictures put behind the faces that
	// have a matte (Mattes[i], see dataset.Matte; aligned with Faces'
	// samples, nil for none) in their turned copies, in place of the wall
	// they stand against. A face whose matte takes part of the middle of
	// its box for wall keeps its wall (dataset.MatteHolds).
	Backdrops []Image
	Mattes    [][]float32
}

// windows is how many windows face s gets.
func (j Jitter) windows(s dataset.Sample) int {
	if v, ok := j.TiltN[s.Set]; ok && s.HasPitch && math.Abs(s.Pitch) >= j.Tilt {
		return v
	}
	if v, ok := j.SetN[s.Set]; ok {
		return v
	}
	return j.N
}

// Faces builds the positive windows: for each sample i of view v, its
// image (mirrored when its yaw is negative) and box boxes[i] (the box the
// daemon's pose model expects, see headpose.Bank.FaceBox), moved by j.
func Faces(samples []dataset.Sample, imgs []*image.Gray, boxes []feature.Box, v View, j Jitter, seed uint64) FaceSet {
	var fs FaceSet
	for i, s := range samples {
		if !s.HasYaw || !v.Has(s.Yaw) {
			continue
		}
		g, box := imgs[i], boxes[i]
		if s.Yaw < 0 {
			g, box = mirror(g), mirrorBox(box, g.Rect.Dx())
		}
		n := j.windows(s)
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		base := FromGray(g)
		cx0, cy0 := box.Centre()
		// The backdrops draw from their own stream: the windows' draws
		// stay those of the same faces without backdrops.
		var alpha []float32
		if len(j.Backdrops) > 0 && i < len(j.Mattes) && j.Mattes[i] != nil {
			alpha = j.Mattes[i]
			if s.Yaw < 0 {
				alpha = dataset.MirrorMatte(alpha, base.W)
			}
			if !dataset.MatteHolds(alpha, base.W, box) {
				alpha = nil
			}
		}
		var brng *rand.Rand
		if alpha != nil {
			brng = rand.New(rand.NewPCG(seed^0x6261636b64726f70, uint64(i)))
		}
		added := false
		for r := range 1 + j.Rotations {
			im := base
			if r > 0 {
				src := base
				if alpha != nil {
					src = FromGray(dataset.Composite(base.Gray(), alpha, j.Backdrops[brng.IntN(len(j.Backdrops))].Gray(), brng))
				}
				im = rotate(src, cx0, cy0, (2*rng.Float64()-1)*j.Rotate*math.Pi/180)
			}
			any := false
			for k := range max(n, 1) {
				cx, cy := cx0, cy0
				side := math.Sqrt(box.W * box.H)
				if k > 0 {
					cx += rng.NormFloat64() * j.Centre * side
					cy += rng.NormFloat64() * j.Centre * side
					side *= math.Exp(rng.NormFloat64() * j.Scale)
				}
				w := Window{Img: int32(len(fs.Images)), R: int32(math.Round(cy)), C: int32(math.Round(cx)), S: int32(math.Round(side))}
				if !w.fits(&im) {
					continue
				}
				fs.Windows = append(fs.Windows, w)
				fs.Sample = append(fs.Sample, i)
				any = true
			}
			if any {
				fs.Images = append(fs.Images, im)
				added = true
			}
		}
		if !added {
			fs.Skipped++
		}
	}
	return fs
}

// rotate returns im turned by theta radians about (cx, cy), bilinear,
// the edges repeated where the turn uncovers the corners.
func rotate(im Image, cx, cy, theta float64) Image {
	out := Image{Pix: make([]uint8, len(im.Pix)), W: im.W, H: im.H}
	c, s := math.Cos(theta), math.Sin(theta)
	for y := range im.H {
		for x := range im.W {
			// The source point that lands on (x, y): the inverse turn.
			dx, dy := float64(x)+0.5-cx, float64(y)+0.5-cy
			fx := math.Min(math.Max(cx+c*dx+s*dy-0.5, 0), float64(im.W-1))
			fy := math.Min(math.Max(cy-s*dx+c*dy-0.5, 0), float64(im.H-1))
			x0, y0 := int(fx), int(fy)
			x1, y1 := min(x0+1, im.W-1), min(y0+1, im.H-1)
			tx, ty := fx-float64(x0), fy-float64(y0)
			at := func(x, y int) float64 { return float64(im.Pix[y*im.W+x]) }
			top := at(x0, y0) + tx*(at(x1, y0)-at(x0, y0))
			bot := at(x0, y1) + tx*(at(x1, y1)-at(x0, y1))
			out.Pix[y*im.W+x] = uint8(top + ty*(bot-top) + 0.5)
		}
	}
	return out
}

// FromGray copies g into an Image.
func FromGray(g *image.Gray) Image {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	pix := make([]uint8, w*h)
	for y := range h {
		copy(pix[y*w:(y+1)*w], g.Pix[y*g.Stride:])
	}
	return Image{Pix: pix, W: w, H: h}
}

// mirror returns g flipped left to right.
func mirror(g *image.Gray) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	m := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		src, dst := g.Pix[y*g.Stride:y*g.Stride+w], m.Pix[y*m.Stride:]
		for x := range w {
			dst[w-1-x] = src[x]
		}
	}
	return m
}

// mirrorBox is box in the image mirrored about its vertical centre line
// (pixel x goes to w−1−x, so a box [x, x+W) goes to [w−x−W, w−x)).
func mirrorBox(b feature.Box, w int) feature.Box {
	b.X = float64(w) - b.X - b.W
	return b
}

// Mirror returns the image flipped left to right.
func (im Image) Mirror() Image {
	out := Image{Pix: make([]uint8, len(im.Pix)), W: im.W, H: im.H}
	for y := range im.H {
		src, dst := im.Pix[y*im.W:(y+1)*im.W], out.Pix[y*im.W:(y+1)*im.W]
		for x := range im.W {
			dst[im.W-1-x] = src[x]
		}
	}
	return out
}

// Transpose returns the image with rows and columns swapped (a quarter
// turn and a mirror): textures at other orientations, which pixel
// comparisons tell apart.
func (im Image) Transpose() Image {
	out := Image{Pix: make([]uint8, len(im.Pix)), W: im.H, H: im.W}
	for y := range im.H {
		for x := range im.W {
			out.Pix[x*out.W+y] = im.Pix[y*im.W+x]
		}
	}
	return out
}

// Gray returns the image as an image.Gray sharing its pixels.
func (im Image) Gray() *image.Gray {
	return &image.Gray{Pix: im.Pix, Stride: im.W, Rect: image.Rect(0, 0, im.W, im.H)}
}

// Picture is a face-free photograph read for negatives or for measuring
// false detections.
type Picture struct {
	Name string // its path below usr/share (pictureName)
	Img  Image
}

// pictureName names the picture at path p read from below dir: its path
// below the last usr/share in p, where its package installs it, else its
// path below dir. HeldOut hashes the name, so the third of the pictures
// kept out of training is the same whichever folder above usr/share
// -negatives names (build/negatives or build/negatives/unpacked/usr/share):
// a cascade is measured on pictures it never mined.
func pictureName(dir, p string) string {
	slash := filepath.ToSlash(p)
	if i := strings.LastIndex(slash, "usr/share/"); i >= 0 && (i == 0 || slash[i-1] == '/') {
		return slash[i+len("usr/share/"):]
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return slash
	}
	return filepath.ToSlash(rel)
}

// ReadPictures reads the JPEG and PNG files below dir in grey, each scaled
// down (box filter) so that its longer side is at most maxSide pixels.
// Wallpaper packages ship one picture in several sizes in one folder
// (…/Name/contents/images/1920x1080.png): of the files of such a folder
// only the largest is kept.
func ReadPictures(dir string, maxSide int) ([]Picture, error) {
	best := map[string]string{}
	size := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ext := strings.ToLower(filepath.Ext(p))
		if ext != ".jpg" && ext != ".jpeg" && ext != ".png" || strings.HasPrefix(filepath.Base(p), "screenshot") {
			return nil
		}
		key := p
		if strings.Contains(p, "/contents/images") {
			key = filepath.Dir(p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > size[key] {
			best[key], size[key] = p, info.Size()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cascade: reading pictures: %w", err)
	}
	var names []string
	for _, p := range best {
		names = append(names, p)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("cascade: no JPEG or PNG picture below %s", dir)
	}
	out := make([]Picture, 0, len(names))
	for _, p := range names {
		g, err := dataset.LoadGray(p)
		if err != nil {
			return nil, fmt.Errorf("cascade: %s: %w", p, err)
		}
		out = append(out, Picture{Name: pictureName(dir, p), Img: FromGray(shrink(g, maxSide))})
	}
	return out, nil
}

// HeldOut reports whether a picture is kept out of training to measure
// false detections: one in three, by a hash of its name.
func HeldOut(name string) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()%3 == 0
}

// shrink scales g down by an integer box filter so that its longer side is
// at most maxSide (no change if it already is).
func shrink(g *image.Gray, maxSide int) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	f := (max(w, h) + maxSide - 1) / maxSide
	if f <= 1 {
		return g
	}
	out := image.NewGray(image.Rect(0, 0, w/f, h/f))
	for y := range h / f {
		for x := range w / f {
			sum := 0
			for dy := range f {
				row := g.Pix[(y*f+dy)*g.Stride+x*f:]
				for dx := range f {
					sum += int(row[dx])
				}
			}
			out.Pix[y*out.Stride+x] = uint8((sum + f*f/2) / (f * f))
		}
	}
	return out
}
