// Package grey holds the frame's grey conversion and the reuse of a grey
// image's buffer: what the camera's source and the data sets' reader need,
// below the pose model's packages so that neither links them.
package grey

import (
	"image"
	"image/color"
)

// Grey returns src as an 8-bit grey image. For *image.Gray it returns src
// itself and for *image.YCbCr a view of its Y plane (no copy; the result
// aliases src). Other images are converted into dst, which is reused when
// its buffer is large enough (nil: allocate). RGBA and NRGBA take a fast
// path; any other image.Image goes through color.GrayModel pixel by pixel.
func Grey(dst *image.Gray, src image.Image) *image.Gray {
	switch s := src.(type) {
	case *image.Gray:
		return s
	case *image.YCbCr:
		// The Y plane of full-range (JPEG) YCbCr is the luma that
		// color.GrayModel would compute from the RGB it decodes to, up to
		// rounding for colours inside the RGB gamut (decoding clips the
		// others): use it as is.
		return &image.Gray{Pix: s.Y, Stride: s.YStride, Rect: s.Rect}
	}
	b := src.Bounds()
	dst = Resize(dst, b)
	w, h := b.Dx(), b.Dy()
	switch s := src.(type) {
	case *image.RGBA:
		lumaRows(dst, s.Pix, s.Stride, w, h)
	case *image.NRGBA:
		// Non-premultiplied: luma of the colour itself; alpha is ignored as
		// a camera frame has none.
		lumaRows(dst, s.Pix, s.Stride, w, h)
	default:
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				g := color.GrayModel.Convert(src.At(b.Min.X+x, b.Min.Y+y)).(color.Gray)
				dst.Pix[y*dst.Stride+x] = g.Y
			}
		}
	}
	return dst
}

// lumaRows writes the luma of w×h pixels of 4 bytes (R, G, B, then alpha,
// ignored) with rows stride bytes apart into dst.
func lumaRows(dst *image.Gray, pix []uint8, stride, w, h int) {
	for y := 0; y < h; y++ {
		row := pix[y*stride : y*stride+4*w]
		out := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		for x := range out {
			out[x] = luma(row[4*x], row[4*x+1], row[4*x+2])
		}
	}
}

// luma is ITU-R BT.601 luma, Y = 0.299 R + 0.587 G + 0.114 B, computed
// exactly as color.GrayModel does: on 16-bit channels (c·0x101) with 16-bit
// weights that sum to 65536 (19595 + 38470 + 7471), so a grey input maps to
// itself; +1<<15 rounds, and >>24 drops the 16 weight bits and 8 of the
// channel bits.
func luma(r, g, b uint8) uint8 {
	return uint8((19595*uint32(r)*0x101 + 38470*uint32(g)*0x101 + 7471*uint32(b)*0x101 + 1<<15) >> 24)
}

// Resize returns dst with bounds b, reusing its buffer when large enough
// (nil: a new image). The pixels are left as they were.
func Resize(dst *image.Gray, b image.Rectangle) *image.Gray {
	n := b.Dx() * b.Dy()
	if dst == nil || cap(dst.Pix) < n {
		return image.NewGray(b)
	}
	dst.Pix = dst.Pix[:n]
	dst.Stride = b.Dx()
	dst.Rect = b
	return dst
}
