package yunet

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// libfacedetection's source: POSED_LIBFACEDETECTION, else
// models/libfacedetection beside the data sets.
func referenceSource(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("POSED_LIBFACEDETECTION")
	if dir == "" {
		dir = filepath.Join(dataset.Root(), "..", "models", "libfacedetection")
	}
	if _, err := os.Stat(filepath.Join(dir, "facedetectcnn-data.cpp")); err != nil {
		datatest.Missing(tb, "libfacedetection's source is not there (set POSED_LIBFACEDETECTION): %v", err)
	}
	return dir
}

var (
	refOnce sync.Once
	refBin  string
	refErr  error
)

// reference builds libfacedetection's C++ with testdata/reference.cpp
// (once per test binary) and returns the program.
func reference(t *testing.T) string {
	t.Helper()
	src := referenceSource(t)
	gxx, err := exec.LookPath("g++")
	if err != nil {
		datatest.Missing(t, "no g++ to build the reference: %v", err)
	}
	refOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yunet-reference")
		if err != nil {
			refErr = err
			return
		}
		refBin = filepath.Join(dir, "reference")
		args := []string{"-O2", "-I", "testdata", "-I", src, "-o", refBin, "testdata/reference.cpp"}
		for _, f := range []string{"facedetectcnn.cpp", "facedetectcnn-model.cpp", "facedetectcnn-data.cpp"} {
			args = append(args, filepath.Join(src, f))
		}
		if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
			refErr = fmt.Errorf("building the reference: %v\n%s", err, out)
		}
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refBin
}

// refFace is a line of the reference's output.
type refFace struct {
	score      float64
	x, y, w, h int
	lm         [10]int
}

// runReference runs the reference on img and parses its faces.
func runReference(t *testing.T, bin string, img *image.Gray) []refFace {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.pgm")
	if err != nil {
		t.Fatal(err)
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	fmt.Fprintf(f, "P5\n%d %d\n255\n", w, h)
	for y := range h {
		f.Write(img.Pix[y*img.Stride : y*img.Stride+w])
	}
	f.Close()
	out, err := exec.Command(bin, f.Name()).Output()
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	var faces []refFace
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 15 {
			t.Fatalf("reference printed %q", sc.Text())
		}
		var r refFace
		r.score, _ = strconv.ParseFloat(fields[0], 64)
		ints := make([]int, 14)
		for i := range ints {
			ints[i], _ = strconv.Atoi(fields[i+1])
		}
		r.x, r.y, r.w, r.h = ints[0], ints[1], ints[2], ints[3]
		copy(r.lm[:], ints[4:])
		faces = append(faces, r)
	}
	return faces
}

// referencePictures are real pictures of every kind posed meets: in-the-
// wild faces frontal to profile (AFLW2000), studio faces (Pointing'04), a
// face-free scene, and sizes that are not multiples of 32.
func referencePictures(t *testing.T) map[string]*image.Gray {
	t.Helper()
	root := datatest.Root(t)
	pics := map[string]*image.Gray{}
	for _, p := range []string{
		"aflw2000/images/image00002.jpg", "aflw2000/images/image00004.jpg",
		"aflw2000/images/image00013.jpg", "aflw2000/images/image00040.jpg",
		"pointing04/Person05/person05146+0+0.jpg", "pointing04/Person05/person05152+0+90.jpg",
		"scenes/images/UMD_001.jpg",
	} {
		img, err := dataset.LoadGray(filepath.Join(root, p))
		if err != nil {
			datatest.Missing(t, "%v", err)
		}
		pics[p] = img
	}
	// An odd size and an offset sub-image: the padding and the region.
	a := pics["aflw2000/images/image00002.jpg"]
	pics["aflw2000 image00002, 301×250 at (70, 120)"] = a.SubImage(image.Rect(70, 120, 371, 370)).(*image.Gray)
	return pics
}

// TestReference: on real pictures, posed's network finds the faces that
// libfacedetection's C++ finds, with the same scores, boxes and landmarks
// (the reference truncates its boxes to integers).
func TestReference(t *testing.T) {
	bin := reference(t)
	net := New(Default())
	var buf Buffers
	found := 0
	for name, img := range referencePictures(t) {
		want := runReference(t, bin, copyGray(img))
		got := net.Detect(&buf, img, img.Rect, 0.2)
		if len(got) != len(want) {
			t.Errorf("%s: %d faces, the reference %d", name, len(got), len(want))
			continue
		}
		for i, w := range want {
			g := got[i]
			if w.score >= 0.5 {
				found++
			}
			if math.Abs(g.Score-w.score) > 1e-4 {
				t.Errorf("%s face %d: score %.6f, the reference %.6f", name, i, g.Score, w.score)
			}
			// Back in the reference's frame (it saw the picture alone).
			ox, oy := float64(img.Rect.Min.X), float64(img.Rect.Min.Y)
			box := [4]float64{g.X - ox, g.Y - oy, g.W, g.H}
			ref := [4]int{w.x, w.y, w.w, w.h}
			// x and y are truncated corners; w and h differences of
			// truncated floats: each within a pixel.
			xmax, ymax := g.X+g.W-ox, g.Y+g.H-oy
			if d := max(math.Abs(float64(int(box[0]))-float64(ref[0])), math.Abs(float64(int(box[1]))-float64(ref[1])),
				math.Abs(float64(int(xmax)-int(box[0]))-float64(ref[2])), math.Abs(float64(int(ymax)-int(box[1]))-float64(ref[3]))); d > 1 {
				t.Errorf("%s face %d: box %.2f, the reference %v", name, i, box, ref)
			}
			for k := range 10 {
				o := ox
				if k%2 == 1 {
					o = oy
				}
				if math.Abs(float64(int(g.Landmarks[k]-o))-float64(w.lm[k])) > 1 {
					t.Errorf("%s face %d: landmark %d at %.2f, the reference %d", name, i, k, g.Landmarks[k]-o, w.lm[k])
				}
			}
		}
	}
	if found < 5 {
		t.Errorf("the reference found %d faces at 0.5 on pictures with 6: not a test of the faces", found)
	}
}

// copyGray returns img as a picture of its own, starting at (0, 0).
func copyGray(img *image.Gray) *image.Gray {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		copy(out.Pix[y*w:(y+1)*w], img.Pix[y*img.Stride:y*img.Stride+w])
	}
	return out
}
