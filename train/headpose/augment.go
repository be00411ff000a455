package headpose

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/train/dataset"
)

// AugKind names an augmentation of the training images.
type AugKind string

// The augmentations. Each makes N views per image, with an amount drawn
// uniformly up to Max (Rotate: in ±Max). The photometric ones change the
// 64×64 patch before it is equalised, as a camera would change the face:
// in patch pixels and grey levels, whatever the face's size in the image.
const (
	// Rotate turns the image about the face box's centre by θ degrees
	// (default up to ±30°); the labels are composed with the rotation
	// (dataset.RotateInPlane), not added to roll.
	Rotate AugKind = "rotate"
	// Blur convolves the patch with a Gaussian of σ ∈ [0.5, Max] patch
	// pixels (default 2): defocus, motion, a small face.
	Blur AugKind = "blur"
	// Noise adds Gaussian sensor noise of σ ∈ [2, Max] grey levels
	// (default 16), as dim cabins and high gains produce.
	Noise AugKind = "noise"
	// LowRes shrinks the patch to a side in [Max, 48] pixels (default 16)
	// and enlarges it back: a far or low-resolution face.
	LowRes AugKind = "lowres"
	// Gamma raises the patch's intensities to γ = exp(u), u ∈ [−Max, Max]
	// (default 0.7): exposure and sensor curves. Equalisation undoes any
	// monotone change but for rounding, so this one is a control.
	Gamma AugKind = "gamma"
	// NIR mixes the red channel into the grey, w·R + (1−w)·luma with
	// w ∈ [Max, 1] (default 0.5): near-infrared-like skin, bright and even,
	// as in-car and night cameras see it.
	NIR AugKind = "nir"
	// Camera draws one of Blur, LowRes and NIR for each view, with its
	// default amount: the changes a car's or a room's camera makes, at the
	// cost of one view.
	Camera AugKind = "camera"
	// Backdrop puts a face-free picture (BankOptions.Backdrops) behind a
	// person photographed against a plain wall, where the wall was
	// (dataset.Matte, dataset.Composite): a studio face with the clutter a
	// head has behind it in the wild. The amount picks the picture and its
	// crop. Images whose matte fails, or takes part of the face for wall
	// (dataset.MatteHolds), get no such view. The matte also takes some
	// photographs in the wild with a plain, even background: name the
	// studio sets in AugmentSets.
	Backdrop AugKind = "backdrop"
)

var augKinds = []AugKind{Rotate, Blur, Noise, LowRes, Gamma, NIR, Camera, Backdrop}

var cameraKinds = []AugKind{Blur, LowRes, NIR}

// Augmentation is one kind of augmented view: N views per image, with an
// amount up to Max (0: the kind's default).
type Augmentation struct {
	Kind AugKind `json:"kind"`
	N    int     `json:"n"`
	Max  float64 `json:"max,omitempty"`
}

func (a Augmentation) String() string {
	if a.Kind == "" {
		return "none"
	}
	if a.Kind == Camera || a.Kind == Backdrop {
		return fmt.Sprintf("%s:%d", a.Kind, a.N)
	}
	return fmt.Sprintf("%s:%d:%g", a.Kind, a.N, a.max())
}

func (a Augmentation) max() float64 {
	if a.Max != 0 {
		return a.Max
	}
	switch a.Kind {
	case Rotate:
		return 30
	case Blur:
		return 2
	case Noise:
		return 16
	case LowRes:
		return 16
	case Gamma:
		return 0.7
	case NIR:
		return 0.5
	}
	return 0
}

// Validate checks the kind, the count and the amount.
func (a Augmentation) Validate() error {
	ok := false
	for _, k := range augKinds {
		ok = ok || a.Kind == k
	}
	switch {
	case !ok:
		return fmt.Errorf("headpose: augmentation %q is not one of %v", a.Kind, augKinds)
	case a.N < 1 || a.N > 32:
		return fmt.Errorf("headpose: augmentation %s: %d views per image, want 1 to 32", a.Kind, a.N)
	case math.IsNaN(a.Max) || a.Max < 0:
		return fmt.Errorf("headpose: augmentation %s: amount %g is not positive", a.Kind, a.Max)
	case a.Kind == Camera && a.Max != 0:
		return fmt.Errorf("headpose: augmentation camera takes no amount (its kinds keep their defaults)")
	case a.Kind == Backdrop && a.Max != 0:
		return fmt.Errorf("headpose: augmentation backdrop takes no amount (the picture and its crop are drawn)")
	case a.Kind == Rotate && a.max() > 90:
		return fmt.Errorf("headpose: augmentation rotate: ±%g° is beyond ±90°", a.max())
	case a.Kind == Blur && a.max() < 0.5,
		a.Kind == Noise && a.max() < 2,
		a.Kind == LowRes && (a.max() < 4 || a.max() > 48),
		a.Kind == NIR && a.max() > 1:
		return fmt.Errorf("headpose: augmentation %s: amount %g is out of its range", a.Kind, a.max())
	}
	return nil
}

// ParseAugmentations reads a comma-separated list of kind[:n[:max]], e.g.
// "rotate:2:30,blur:1".
func ParseAugmentations(s string) ([]Augmentation, error) {
	var out []Augmentation
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		parts := strings.Split(f, ":")
		a := Augmentation{Kind: AugKind(parts[0]), N: 1}
		var err error
		if len(parts) > 1 {
			if a.N, err = strconv.Atoi(parts[1]); err != nil {
				return nil, fmt.Errorf("headpose: augmentation %q: count %q is not an integer", f, parts[1])
			}
		}
		if len(parts) > 2 {
			if a.Max, err = strconv.ParseFloat(parts[2], 64); err != nil {
				return nil, fmt.Errorf("headpose: augmentation %q: amount %q is not a number", f, parts[2])
			}
		}
		if len(parts) > 3 {
			return nil, fmt.Errorf("headpose: augmentation %q: want kind[:n[:max]]", f)
		}
		if err := a.Validate(); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// draw returns one view's amount.
func (a Augmentation) draw(rng *rand.Rand) float64 {
	m := a.max()
	u := rng.Float64()
	switch a.Kind {
	case Rotate, Gamma:
		return m * (2*u - 1)
	case Blur:
		return 0.5 + u*(m-0.5)
	case Noise:
		return 2 + u*(m-2)
	case LowRes:
		return m + u*(48-m)
	case NIR:
		return m + u*(1-m)
	case Backdrop:
		return u
	}
	return 0
}

// augmenter computes the features of augmented views; one per goroutine.
type augmenter struct {
	ex    feature.Extractor
	patch [feature.PatchSize * feature.PatchSize]uint8
	red   [feature.PatchSize * feature.PatchSize]uint8
	tmp   [feature.PatchSize * feature.PatchSize]float64
	pcg   *rand.PCG
	rng   *rand.Rand
}

// extract writes into dst the features of box on img changed by a with
// amount v; face is the view's face box (a rotation turns about its centre);
// red is img's red channel (NIR only).
func (g *augmenter) extract(dst []float32, img, red *image.Gray, box feature.Box, a Augmentation, v float64, face feature.Box) {
	const n = feature.PatchSize
	p := g.patch[:]
	switch a.Kind {
	case "":
		g.ex.Extract(dst, img, box)
		return
	case Rotate:
		cx, cy := face.Centre()
		cropRotated(p, n, img, box, cx, cy, v)
	case NIR:
		feature.Crop(p, n, img, box)
		feature.Crop(g.red[:], n, red, box)
		for i := range p {
			p[i] = clampGrey(v*float64(g.red[i]) + (1-v)*float64(p[i]))
		}
	default:
		feature.Crop(p, n, img, box)
	}
	switch a.Kind {
	case Blur:
		g.blur(p, v)
	case Noise:
		if g.rng == nil {
			g.pcg = rand.NewPCG(0, 0)
			g.rng = rand.New(g.pcg)
		}
		// Seeded by the box and amount, so a view's noise is the same
		// whichever goroutine draws it.
		g.pcg.Seed(math.Float64bits(box.X)^math.Float64bits(box.Y)<<1, math.Float64bits(v))
		addGaussian(p, p, v, g.rng)
	case LowRes:
		g.lowRes(p, int(math.Round(v)))
	case Gamma:
		gamma := math.Exp(v)
		var lut [256]uint8
		for i := range lut {
			lut[i] = clampGrey(255 * math.Pow(float64(i)/255, gamma))
		}
		for i, x := range p {
			p[i] = lut[x]
		}
	}
	feature.Equalize(p)
	g.ex.Describe(dst, p)
}

func clampGrey(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }

// addGaussian writes src with Gaussian noise of σ grey levels drawn from
// rng into dst (the same length; it may be src): sensor noise.
func addGaussian(dst, src []uint8, sigma float64, rng *rand.Rand) {
	for i, x := range src {
		dst[i] = clampGrey(float64(x) + sigma*rng.NormFloat64())
	}
}

// blur convolves the n×n patch with a separable Gaussian of σ pixels
// (kernel to ±3σ, border replicated).
func (g *augmenter) blur(p []uint8, sigma float64) {
	const n = feature.PatchSize
	r := int(math.Ceil(3 * sigma))
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := range k {
		d := float64(i - r)
		k[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			acc := 0.0
			for i, w := range k {
				xx := min(max(x+i-r, 0), n-1)
				acc += w * float64(p[y*n+xx])
			}
			g.tmp[y*n+x] = acc
		}
	}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			acc := 0.0
			for i, w := range k {
				yy := min(max(y+i-r, 0), n-1)
				acc += w * g.tmp[yy*n+x]
			}
			p[y*n+x] = clampGrey(acc)
		}
	}
}

// lowRes area-averages the n×n patch down to m×m and enlarges it back
// bilinearly.
func (g *augmenter) lowRes(p []uint8, m int) {
	const n = feature.PatchSize
	small := image.NewGray(image.Rect(0, 0, n, n))
	copy(small.Pix, p)
	lo := make([]uint8, m*m)
	feature.Crop(lo, m, small, feature.Box{W: n, H: n})
	img := &image.Gray{Pix: lo, Stride: m, Rect: image.Rect(0, 0, m, m)}
	feature.Crop(p, n, img, feature.Box{W: float64(m), H: float64(m)})
}

// cropRotated samples box of src into the n×n patch dst as feature.Crop
// does (s×s bilinear samples per patch pixel, border replicated), from the
// image rotated by theta degrees counter-clockwise about (cx, cy): patch
// position q reads src at the point that the rotation takes to q.
func cropRotated(dst []uint8, n int, src *image.Gray, box feature.Box, cx, cy, theta float64) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	sx, sy := box.W/float64(n), box.H/float64(n)
	nx := min(max(int(math.Ceil(sx-1e-9)), 1), 4)
	ny := min(max(int(math.Ceil(sy-1e-9)), 1), 4)
	ox, oy := float64(src.Rect.Min.X), float64(src.Rect.Min.Y)
	at := func(x, y int) float64 { return float64(src.Pix[y*src.Stride+x]) }
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			acc := 0.0
			for a := 0; a < ny; a++ {
				for c := 0; c < nx; c++ {
					// Continuous coordinates of the sample in the rotated image…
					qx := box.X + (float64(j)+(float64(c)+0.5)/float64(nx))*sx
					qy := box.Y + (float64(i)+(float64(a)+0.5)/float64(ny))*sy
					// …come from this point of the source.
					x, y := dataset.RotatePoint(qx, qy, cx, cy, -theta)
					fx := math.Min(math.Max(x-ox-0.5, 0), float64(w-1))
					fy := math.Min(math.Max(y-oy-0.5, 0), float64(h-1))
					x0, y0 := int(fx), int(fy)
					x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
					tx, ty := fx-float64(x0), fy-float64(y0)
					top := at(x0, y0) + tx*(at(x1, y0)-at(x0, y0))
					bot := at(x0, y1) + tx*(at(x1, y1)-at(x0, y1))
					acc += top + ty*(bot-top)
				}
			}
			dst[i*n+j] = uint8(acc/float64(nx*ny) + 0.5)
		}
	}
}
