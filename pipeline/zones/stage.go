package zones

import "github.com/edgepose/posed/pipeline/frame"

// Frame chooses the frame's primary face and names the zones each face's
// centre is in (frame.Stage). The names' storage is reused frame after
// frame: nothing is allocated once it has grown to the most faces seen.
func (z *Zoning) Frame(f *frame.Frame) {
	f.Primary = z.Primary(f.Faces)
	if len(z.buf) < len(f.Faces) {
		z.buf = append(z.buf, make([][]string, len(f.Faces)-len(z.buf))...)
	}
	for i := range f.Faces {
		cx, cy := centre(&f.Faces[i])
		z.buf[i] = z.AppendIn(z.buf[i][:0], cx, cy)
		if len(z.buf[i]) > 0 {
			f.Faces[i].Zones = z.buf[i]
		}
	}
}
