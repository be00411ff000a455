package device

import (
	"image"
	"testing"
)

// The turns against a reference that rotates point coordinates one
// quarter turn at a time (x, y) → (h−1−y, x), i.e. 90° clockwise, and
// mirrors them, on an image with no symmetry.
func TestOrient(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 5, 3))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	for _, rot := range []int{0, 90, 180, 270} {
		for _, flip := range []string{"none", "horizontal", "vertical"} {
			got := orient(nil, src, rot, flip)
			// Reference: move each source pixel forward.
			w, h := src.Rect.Dx(), src.Rect.Dy()
			want := map[image.Point]uint8{}
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					px, py, cw, ch := x, y, w, h
					for q := 0; q < rot/90; q++ {
						px, py, cw, ch = ch-1-py, px, ch, cw
					}
					switch flip {
					case "horizontal":
						px = cw - 1 - px
					case "vertical":
						py = ch - 1 - py
					}
					want[image.Pt(px, py)] = src.GrayAt(x, y).Y
				}
			}
			if len(want) != w*h || got.Rect.Dx()*got.Rect.Dy() != w*h {
				t.Fatalf("rotate %d flip %s: size %v", rot, flip, got.Rect)
			}
			for p, v := range want {
				if got.GrayAt(p.X, p.Y).Y != v {
					t.Fatalf("rotate %d flip %s: pixel %v = %d, want %d", rot, flip, p, got.GrayAt(p.X, p.Y).Y, v)
				}
			}
		}
	}
	// A top-left marker goes top-right on a 90° clockwise turn.
	g := orient(nil, src, 90, "none")
	if g.Rect.Dx() != 3 || g.Rect.Dy() != 5 || g.GrayAt(2, 0).Y != src.GrayAt(0, 0).Y {
		t.Errorf("90° clockwise: %v, top-right %d", g.Rect, g.GrayAt(2, 0).Y)
	}
}
