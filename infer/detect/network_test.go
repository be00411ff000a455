package detect

import (
	"image"
	"math"
	"path/filepath"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

func testNetwork(t *testing.T) *Network {
	t.Helper()
	n, err := NewNetwork(yunet.New(yunet.Default()), DefaultNetworkParams())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The network confirms the cascades' faces in the wild, frontal to
// profile, and refuses the boxes they put on face-free scenes (phantoms
// of each view, up to facefinder's score 10 on a door; ../shared/data's
// scenes).
func TestNetworkVerify(t *testing.T) {
	root := datatest.Root(t)
	n := testNetwork(t)
	det, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	p.Turned = true
	both, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := dataset.Read(filepath.Join(root, "aflw2000"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	byPath := map[string]dataset.Sample{}
	for _, s := range samples {
		byPath[filepath.Base(s.Path)] = s
	}
	// Faces of every |yaw| bin, 75–90° among them.
	for _, name := range []string{"image00002.jpg", "image00004.jpg", "image00013.jpg", "image00040.jpg", "image01662.jpg", "image02532.jpg"} {
		s, ok := byPath[name]
		if !ok {
			t.Fatalf("%s is not in AFLW2000's labels", name)
		}
		g, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range both.Detect(g) {
			if feature.Finds(d.Box, s.Box) {
				found = true
				if !n.Verify(g, d.Box) {
					t.Errorf("%s (yaw %.0f°): the network refuses the %s cascade's box %+v on the face", name, s.Yaw, d.View, d.Box)
				}
			}
		}
		if !found {
			t.Errorf("%s: the cascades find no face: not a test of the verifier", name)
		}
	}
	phantoms := 0
	for _, name := range []string{"UMD_001.jpg", "UMD_010.jpg", "UMD_066.jpg", "UMD_103.jpg", "neg-0030.jpg", "neg-0048.jpg"} {
		g, err := dataset.LoadGray(filepath.Join(root, "scenes", "images", name))
		if err != nil {
			datatest.Missing(t, "%v", err)
		}
		// Scenes wider than a frame are shrunk as posectl eval -face-free
		// shrinks them.
		if g.Rect.Dx() > 640 {
			continue
		}
		for _, d := range append(det.Detect(g), both.Detect(g)...) {
			phantoms++
			if n.Verify(g, d.Box) {
				t.Errorf("%s: the network confirms the %s phantom %+v (score %.1f)", name, d.View, d.Box, d.Score)
			}
		}
	}
	if phantoms < 5 {
		t.Errorf("the cascades put %d boxes on the scenes: not a test of the refusals", phantoms)
	}
}

// The scan finds the faces of AFLW2000 photographs at half their size,
// their boxes where the cascades put theirs (within the rule a detection
// finds a face by) and, past 45°, turned the way the label says.
func TestNetworkScan(t *testing.T) {
	root := datatest.Root(t)
	n := testNetwork(t)
	samples, err := dataset.Read(filepath.Join(root, "aflw2000"))
	if err != nil {
		datatest.Missing(t, "%v", err)
	}
	found, turned, tried, views := 0, 0, 0, 0
	for i, s := range samples {
		if i%25 != 0 {
			continue
		}
		g, err := dataset.LoadGray(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		tried++
		for _, f := range n.Scan(g, g.Rect) {
			if !feature.Finds(f.Box, s.Box) {
				continue
			}
			found++
			if math.Abs(s.Yaw) >= 45 {
				turned++
				want := YawPositive
				if s.Yaw < 0 {
					want = YawNegative
				}
				if f.View == want {
					views++
				}
			}
			break
		}
	}
	t.Logf("%d of %d faces found; %d of %d past 45° seen turned the labelled way", found, tried, views, turned)
	if found < tried*9/10 {
		t.Errorf("the scan finds %d of %d faces", found, tried)
	}
	if turned < 5 || views < turned*8/10 {
		t.Errorf("%d of %d faces past 45° have the view of their yaw's sign", views, turned)
	}
}

// Unusable settings are refused, named as configuration keys.
func TestNetworkParams(t *testing.T) {
	p := DefaultNetworkParams()
	if pr := p.Problems(); len(pr) != 0 {
		t.Fatalf("the defaults have problems: %v", pr)
	}
	p.VerifyScore, p.ScanShrink = 1.5, 0
	pr := p.Problems()
	if len(pr) != 2 || pr[0].Field != "verify_score" || pr[1].Field != "scan_shrink" {
		t.Errorf("problems %v", pr)
	}
	if _, err := NewNetwork(yunet.New(yunet.Default()), p); err == nil {
		t.Error("NewNetwork took a verify_score of 1.5")
	}
}

// A frame much larger than 640 pixels is scanned at most 640 pixels wide:
// a face four times the size in a 2560×1920 frame is found as in the
// 640×480 one, and the scan's buffers stay those of a 640-pixel picture.
func TestNetworkScanBoundsLargeFrames(t *testing.T) {
	g := datatest.Frame640(t)
	big := image.NewGray(image.Rect(0, 0, 2560, 1920))
	for y := range 1920 {
		for x := range 2560 {
			big.Pix[y*2560+x] = g.Pix[(y/4)*g.Stride+x/4]
		}
	}
	n := testNetwork(t)
	small := n.Scan(g, g.Rect)
	if len(small) != 1 {
		t.Fatalf("%d faces in the 640×480 frame, want 1", len(small))
	}
	want := small[0].Box
	faces := n.Scan(big, big.Rect)
	if len(faces) != 1 {
		t.Fatalf("%d faces in the 2560×1920 frame, want 1", len(faces))
	}
	got := faces[0].Box
	// (The small frame is scanned at half its size, the large one at a
	// quarter, which is the small frame itself: boxes agree to a tenth.)
	if math.Abs(got.X/4-want.X) > 0.1*want.W || math.Abs(got.W/4-want.W) > 0.1*want.W {
		t.Errorf("box %+v in the large frame, %+v ×4 in the small one", got, want)
	}
	if k := n.scanShrink(big.Rect); k != 4 {
		t.Errorf("the 2560×1920 frame is shrunk %d times, want 4 (to 640×480)", k)
	}
}
