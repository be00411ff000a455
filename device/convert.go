package device

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
)

// GreyFromGREY copies a GREY (Y8) frame of w×h with the given bytes per
// line into dst. It returns ErrFrameSize if src is too short.
func GreyFromGREY(dst *Frame, src []byte, w, h, stride int) error {
	if stride < w {
		stride = w
	}
	if len(src) < stride*(h-1)+w {
		return sizeError(fmt.Sprintf("%d bytes", len(src)), fmt.Sprintf("%d for %d×%d GREY at %d bytes per line", stride*h, w, h, stride))
	}
	g := setSize(dst, w, h)
	for y := 0; y < h; y++ {
		copy(g.Pix[y*w:(y+1)*w], src[y*stride:y*stride+w])
	}
	return nil
}

// GreyFromYUYV takes the luma of a YUYV (YUY2, 4:2:2) frame: bytes are
// Y0 U Y1 V per pair of pixels, so Y is every even byte.
func GreyFromYUYV(dst *Frame, src []byte, w, h, stride int) error {
	if stride < 2*w {
		stride = 2 * w
	}
	if len(src) < stride*(h-1)+2*w {
		return sizeError(fmt.Sprintf("%d bytes", len(src)), fmt.Sprintf("%d for %d×%d YUYV at %d bytes per line", stride*h, w, h, stride))
	}
	g := setSize(dst, w, h)
	for y := 0; y < h; y++ {
		row := src[y*stride : y*stride+2*w]
		out := g.Pix[y*w : (y+1)*w]
		for x := range out {
			out[x] = row[2*x]
		}
	}
	return nil
}

// GreyFromJPEG decodes a JPEG (or an MJPEG frame, whose Huffman tables may
// be missing) into dst as grey: the luma plane as it is. want, if not zero,
// is the size the frame must have: the header is read first, and a frame of
// another size (or beyond MaxFramePixels) is refused with ErrFrameSize
// before it is decoded. A frame that cannot be decoded gives ErrBadFrame.
func GreyFromJPEG(dst *Frame, src []byte, want image.Point) error {
	src = withHuffmanTables(src)
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(src))
	if err != nil {
		return fmt.Errorf("%w: JPEG header: %v", ErrBadFrame, err)
	}
	if err := checkHeaderSize(cfg.Width, cfg.Height, want); err != nil {
		return err
	}
	img, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		return fmt.Errorf("%w: JPEG: %v", ErrBadFrame, err)
	}
	switch m := img.(type) {
	case *image.YCbCr:
		return copyPlane(dst, m.Y, m.YStride, m.Rect.Dx(), m.Rect.Dy())
	case *image.Gray:
		return copyPlane(dst, m.Pix, m.Stride, m.Rect.Dx(), m.Rect.Dy())
	default:
		return fmt.Errorf("%w: JPEG decoded to %T (CMYK or YCCK: not a camera's)", ErrBadFrame, img)
	}
}

func copyPlane(dst *Frame, pix []byte, stride, w, h int) error {
	g := setSize(dst, w, h)
	for y := 0; y < h; y++ {
		copy(g.Pix[y*w:(y+1)*w], pix[y*stride:y*stride+w])
	}
	return nil
}
