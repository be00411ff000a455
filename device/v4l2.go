package device

import (
	"fmt"
	"image"
	"sort"
	"time"
)

// V4L2 pixel formats posed reads, as FourCC codes (little-endian).
const (
	FourCCGREY uint32 = 'G' | 'R'<<8 | 'E'<<16 | 'Y'<<24
	FourCCYUYV uint32 = 'Y' | 'U'<<8 | 'Y'<<16 | 'V'<<24
	FourCCMJPG uint32 = 'M' | 'J'<<8 | 'P'<<16 | 'G'<<24
)

// CameraOptions configure a V4L2 camera.
type CameraOptions struct {
	Width, Height int
	FPS           float64
	Format        string // auto, grey, yuyv, mjpeg
	Buffers       int
	Timeout       time.Duration
}

// FourCCString renders a FourCC code, e.g. "YUYV".
func FourCCString(c uint32) string {
	return string([]byte{byte(c), byte(c >> 8), byte(c >> 16), byte(c >> 24)})
}

// ChooseFormat picks the pixel format to ask for among those the camera
// offers. "auto" prefers GREY (no conversion), then YUYV (luma is every
// other byte), then MJPEG (a JPEG decode per frame).
func ChooseFormat(offered []uint32, want string) (uint32, error) {
	has := map[uint32]bool{}
	for _, f := range offered {
		has[f] = true
	}
	var order []uint32
	switch want {
	case "auto", "":
		order = []uint32{FourCCGREY, FourCCYUYV, FourCCMJPG}
	case "grey":
		order = []uint32{FourCCGREY}
	case "yuyv":
		order = []uint32{FourCCYUYV}
	case "mjpeg":
		order = []uint32{FourCCMJPG}
	default:
		return 0, fmt.Errorf("%w: format %q is not auto, grey, yuyv or mjpeg", ErrFormat, want)
	}
	for _, f := range order {
		if has[f] {
			return f, nil
		}
	}
	var names []string
	for _, f := range offered {
		names = append(names, FourCCString(f))
	}
	sort.Strings(names)
	return 0, fmt.Errorf("%w: camera offers %v, none of which is %s", ErrFormat, names, want)
}

// Size is a frame size a camera offers: a discrete size (Step 0) or a
// stepwise range.
type Size struct {
	MinW, MaxW, StepW int
	MinH, MaxH, StepH int
}

// ChooseSize returns the offered size closest to w×h (by the difference in
// pixel count, then in width), so the driver is not left to pick one.
func ChooseSize(offered []Size, w, h int) (int, int) {
	if len(offered) == 0 {
		return w, h
	}
	bw, bh := 0, 0
	best := -1
	for _, s := range offered {
		cw, ch := clampStep(w, s.MinW, s.MaxW, s.StepW), clampStep(h, s.MinH, s.MaxH, s.StepH)
		d := abs(cw*ch-w*h)*4 + abs(cw-w)
		if best < 0 || d < best {
			best, bw, bh = d, cw, ch
		}
	}
	return bw, bh
}

func clampStep(v, lo, hi, step int) int {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	if step > 1 {
		v = lo + (v-lo)/step*step
	}
	return v
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// convertFrame turns one raw camera frame of format f and size w×h into
// grey, checking its length: a driver that silently chose another size
// shows up here as ErrFrameSize.
func convertFrame(dst *Frame, f uint32, raw []byte, w, h int) error {
	switch f {
	case FourCCGREY:
		if len(raw) < w*h {
			return sizeError(fmt.Sprintf("%d-byte GREY frame", len(raw)), fmt.Sprintf("%d bytes for %d×%d", w*h, w, h))
		}
		return GreyFromGREY(dst, raw, w, h, len(raw)/h)
	case FourCCYUYV:
		if len(raw) < 2*w*h {
			return sizeError(fmt.Sprintf("%d-byte YUYV frame", len(raw)), fmt.Sprintf("%d bytes for %d×%d", 2*w*h, w, h))
		}
		return GreyFromYUYV(dst, raw, w, h, len(raw)/h)
	case FourCCMJPG:
		if err := GreyFromJPEG(dst, raw, image.Pt(w, h)); err != nil {
			return err
		}
		if gw, gh := dst.Gray.Rect.Dx(), dst.Gray.Rect.Dy(); gw != w || gh != h {
			return sizeError(fmt.Sprintf("%d×%d MJPEG frame", gw, gh), fmt.Sprintf("%d×%d", w, h))
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrFormat, FourCCString(f))
}
