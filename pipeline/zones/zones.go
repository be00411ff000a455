// Package zones is the frame's first stage after tracking: it names the
// configured zones (rectangles of the frame) each face is in and chooses
// the primary face, the one that attention and Home Assistant follow.
package zones

import (
	"sort"

	"github.com/edgepose/posed/message"
)

// Zoning names the zones a face is in and chooses the primary face.
type Zoning struct {
	names []string     // sorted
	rect  [][4]float64 // rect[i]: the zone names[i]
	rects map[string][4]float64
	mode  string
	point [2]float64
	zone  string
	buf   [][]string // each face's zone names (Frame)
}

// Options are a zoning's: the named rectangles [x1, y1, x2, y2] (pixels
// of the turned frame) and how the primary face is chosen: "largest", the
// "nearest" to Point, or the largest in "zone" Zone.
type Options struct {
	Named map[string][4]float64
	Mode  string
	Point [2]float64
	Zone  string
}

// New makes the zoning of o (validated: pipeline/assemble makes it from the
// configuration's zones and primary blocks).
func New(o Options) *Zoning {
	out := &Zoning{rects: map[string][4]float64{}, mode: o.Mode, zone: o.Zone, point: o.Point}
	for name, r := range o.Named {
		out.names = append(out.names, name)
		out.rects[name] = r
	}
	sort.Strings(out.names)
	for _, n := range out.names {
		out.rect = append(out.rect, out.rects[n])
	}
	return out
}

// In returns the names of the zones (x, y) is in, sorted; nil if none.
func (z *Zoning) In(x, y float64) []string { return z.AppendIn(nil, x, y) }

// AppendIn appends the names of the zones (x, y) is in, sorted, to dst
// (the frame loop reuses one per face: nothing allocated).
func (z *Zoning) AppendIn(dst []string, x, y float64) []string {
	if z == nil {
		return dst
	}
	for i, n := range z.names {
		r := z.rect[i]
		if x >= r[0] && x < r[2] && y >= r[1] && y < r[3] {
			dst = append(dst, n)
		}
	}
	return dst
}

// Primary returns the index of the face that matters, or -1: the largest
// (faces come largest first), the one whose centre is nearest the point,
// or the largest whose centre is in the zone.
func (z *Zoning) Primary(faces []message.Face) int {
	if len(faces) == 0 {
		return -1
	}
	if z == nil {
		return 0
	}
	switch z.mode {
	case "nearest":
		best, bestD := -1, 0.0
		for i := range faces {
			cx, cy := centre(&faces[i])
			d := (cx-z.point[0])*(cx-z.point[0]) + (cy-z.point[1])*(cy-z.point[1])
			if best < 0 || d < bestD {
				best, bestD = i, d
			}
		}
		return best
	case "zone":
		r := z.rects[z.zone]
		for i := range faces {
			cx, cy := centre(&faces[i])
			if cx >= r[0] && cx < r[2] && cy >= r[1] && cy < r[3] {
				return i
			}
		}
		return -1
	}
	return 0
}

// centre is the centre of a face's box.
func centre(f *message.Face) (x, y float64) {
	return (f.Box[0] + f.Box[2]) / 2, (f.Box[1] + f.Box[3]) / 2
}
