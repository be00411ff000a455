package zones

import "github.com/edgepose/posed/pipeline/frame"

// Frame chooses the frame's primary face and names the zones each face's
// centre is in (frame.Stage). The names' storage is reused frame after
// frame: nothing is allocated once it has grown to the most faces seen.
func (z *Zoning) Frame(f *frame.Frame) {
	f.Primary = z.Primary(f.Tracked)
	if len(z.buf) < len(f.Tracked) {
		z.buf = append(z.buf, make([][]string, len(f.Tracked)-len(z.buf))...)
	}
	for i, t := range f.Tracked {
		cx, cy := t.Box.Centre()
		z.buf[i] = z.AppendIn(z.buf[i][:0], cx, cy)
		if len(z.buf[i]) > 0 {
			f.Faces[i].Zones = z.buf[i]
		}
	}
}
