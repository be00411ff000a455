// Package annotate draws faces on frames: each face's box, its track id,
// its attention (target, dwell, state) under the box, and its pose as 3-D
// axes from the box centre (x, red, to the face's
// left; y, green, up; z, blue, out of the nose), for posed's live view
// and snapshots and for `posectl predict -draw`.
package annotate

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/edgepose/posed/infer/feature"
)

// Face is what is drawn of one face.
type Face struct {
	Box    feature.Box
	ID     uint64     // 0: no label
	Angles [3]float64 // yaw, pitch, roll in degrees
	Has    [3]bool    // which angles are known (axes need yaw and pitch)
	// Attention, written under the box: the target ("" none), the
	// seconds there (if HasDwell) and the state ("" none).
	Target, State string
	Dwell         float64
	HasDwell      bool
	// Points are the face network's landmarks ([x, y], Landmarks), drawn
	// as small crosses where HasPoints.
	Points    [5][2]float64
	HasPoints bool
}

// Colours of the drawing.
var (
	BoxColour   = color.RGBA{30, 200, 30, 255}
	PointColour = color.RGBA{250, 220, 40, 255} // the landmarks
	axisRGB     = [3]color.RGBA{{230, 40, 40, 255}, {40, 200, 40, 255}, {40, 80, 240, 255}}
)

// Grey copies a grey frame into an RGBA image (reallocated if its size
// differs) and returns it.
func Grey(dst *image.RGBA, src *image.Gray) *image.RGBA {
	r := image.Rect(0, 0, src.Rect.Dx(), src.Rect.Dy())
	if dst == nil || dst.Rect != r {
		dst = image.NewRGBA(r)
	}
	draw.Draw(dst, r, src, src.Rect.Min, draw.Src)
	return dst
}

// Faces draws each face on img: its box, its id above the box, its
// landmarks where it has them, and its axes when its yaw and pitch are
// known.
func Faces(img *image.RGBA, faces []Face) {
	for _, f := range faces {
		Rect(img, f.Box, BoxColour)
		if f.ID > 0 {
			Number(img, int(f.Box.X), int(f.Box.Y)-12, f.ID, BoxColour)
		}
		if f.State != "" || f.HasDwell {
			x, y := int(f.Box.X), int(f.Box.Y+f.Box.H)+2
			if f.HasDwell {
				t := f.Target
				if t == "" {
					t = "-"
				}
				Text(img, x, y, fmt.Sprintf("%s %.1fs", t, f.Dwell), BoxColour)
				y += lineHeight
			}
			if f.State != "" {
				c := BoxColour
				if f.State == "unknown" {
					c = doubtColour
				}
				Text(img, x, y, f.State, c)
			}
		}
		if f.HasPoints {
			for _, p := range f.Points {
				Line(img, p[0]-2, p[1], p[0]+2, p[1], PointColour)
				Line(img, p[0], p[1]-2, p[0], p[1]+2, PointColour)
			}
		}
		if f.Has[0] && f.Has[1] {
			cx, cy := f.Box.Centre()
			l := 0.5 * f.Box.W
			for a, d := range Axes(f.Angles) {
				Line(img, cx, cy, cx+l*d[0], cy+l*d[1], axisRGB[a])
			}
		}
	}
}

// Axes returns the image-plane directions (x right, y down; unit length
// before projection) of the head's x (the image's right for a frontal
// face), y (up) and z (out of the nose) axes, turned by yaw, then pitch,
// then roll in camera axes (x right, y down, z into the scene), a frontal
// face's nose along −z;
// yaw > 0 turns the nose to the image's left, pitch > 0 up, roll > 0
// turns the head clockwise as seen (the conventions of the data sets'
// labels, train/dataset/rotation.go).
func Axes(angles [3]float64) [3][2]float64 {
	yaw, pitch, roll := angles[0]*math.Pi/180, angles[1]*math.Pi/180, angles[2]*math.Pi/180
	base := [3][3]float64{{1, 0, 0}, {0, -1, 0}, {0, 0, -1}}
	var out [3][2]float64
	for i, v := range base {
		x, y, z := v[0], v[1], v[2]
		// yaw about y: the nose (0, 0, −1) goes to (−sin yaw, 0, −cos yaw).
		x, z = x*math.Cos(yaw)+z*math.Sin(yaw), -x*math.Sin(yaw)+z*math.Cos(yaw)
		// pitch about x: the nose (…, −cos) goes up (−y) for pitch > 0.
		y, z = y*math.Cos(pitch)+z*math.Sin(pitch), -y*math.Sin(pitch)+z*math.Cos(pitch)
		// roll about the viewing axis.
		x, y = x*math.Cos(roll)-y*math.Sin(roll), x*math.Sin(roll)+y*math.Cos(roll)
		_ = z
		out[i] = [2]float64{x, y}
	}
	return out
}

// Rect draws the outline of b.
func Rect(img *image.RGBA, b feature.Box, c color.RGBA) {
	x0, y0, x1, y1 := b.X, b.Y, b.X+b.W, b.Y+b.H
	Line(img, x0, y0, x1, y0, c)
	Line(img, x1, y0, x1, y1, c)
	Line(img, x1, y1, x0, y1, c)
	Line(img, x0, y1, x0, y0, c)
}

// Line draws a 2-pixel-wide segment by stepping along its longer axis;
// what falls outside img is left out.
func Line(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	if n > 1<<16 || math.IsNaN(x0+y0+x1+y1) {
		return
	}
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		x, y := int(x0+t*(x1-x0)), int(y0+t*(y1-y0))
		for _, d := range [4][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
			if p := image.Pt(x+d[0], y+d[1]); p.In(img.Rect) {
				img.SetRGBA(p.X, p.Y, c)
			}
		}
	}
}

// lineHeight is the height of a line of Text, in pixels.
const lineHeight = 14

// doubtColour writes a state that is unknown.
var doubtColour = color.RGBA{230, 180, 30, 255}

// Text writes s with its top-left corner at (x, y), in a 7×13 bitmap
// font, on a black band so that it reads on any picture.
func Text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	face := basicfont.Face7x13
	w := font.MeasureString(face, s).Ceil()
	draw.Draw(img, image.Rect(x-1, y, x+w+1, y+lineHeight-1).Intersect(img.Rect), image.Black, image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y+face.Ascent)}
	d.DrawString(s)
}

// digits are 3×5 glyphs of 0–9, one row per 3 bits (top first).
var digits = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// Number writes n at (x, y) (top-left) in 3×5 digits drawn 2× (6×10
// pixels each, 2 pixels apart).
func Number(img *image.RGBA, x, y int, n uint64, c color.RGBA) {
	s := []byte{}
	for {
		s = append([]byte{byte(n % 10)}, s...)
		n /= 10
		if n == 0 {
			break
		}
	}
	for i, d := range s {
		for row := 0; row < 5; row++ {
			for col := 0; col < 3; col++ {
				if digits[d][row]&(4>>col) == 0 {
					continue
				}
				for dy := 0; dy < 2; dy++ {
					for dx := 0; dx < 2; dx++ {
						if p := image.Pt(x+i*8+col*2+dx, y+row*2+dy); p.In(img.Rect) {
							img.SetRGBA(p.X, p.Y, c)
						}
					}
				}
			}
		}
	}
}
