package device

import (
	"context"
	"image"
)

// Oriented turns each frame of Source upright: rotated by Rotate degrees
// clockwise (0, 90, 180, 270), then flipped (Flip "horizontal": left and
// right swap; "vertical": top and bottom swap; "none" or ""). It works in
// the capture goroutine, into a buffer it swaps with the frame's.
type Oriented struct {
	Source interface {
		Next(ctx context.Context, dst *Frame) error
	}
	Rotate int
	Flip   string
	spare  *image.Gray
}

// Next reads a frame from the source and turns it.
func (o *Oriented) Next(ctx context.Context, f *Frame) error {
	if err := o.Source.Next(ctx, f); err != nil {
		return err
	}
	if (o.Rotate == 0 || o.Rotate == 360) && (o.Flip == "" || o.Flip == "none") {
		return nil
	}
	o.spare = orient(o.spare, f.Gray, o.Rotate, o.Flip)
	f.Gray, o.spare = o.spare, f.Gray
	return nil
}

// orient writes src rotated and flipped into dst (reallocated if its size
// differs) and returns it. Output pixel (x, y) of a w×h result takes the
// source pixel that the inverse of the turn maps it to.
func orient(dst, src *image.Gray, rotate int, flip string) *image.Gray {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	w, h := sw, sh
	if rotate == 90 || rotate == 270 {
		w, h = sh, sw
	}
	if dst == nil || dst.Rect.Dx() != w || dst.Rect.Dy() != h {
		dst = image.NewGray(image.Rect(0, 0, w, h))
	}
	for y := 0; y < h; y++ {
		// Undo the flip: (x, y) in the flipped frame is (fx, fy) in the
		// rotated one.
		fy := y
		if flip == "vertical" {
			fy = h - 1 - y
		}
		row := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		for x := range row {
			fx := x
			if flip == "horizontal" {
				fx = w - 1 - x
			}
			// Undo the clockwise rotation: (fx, fy) of the rotated frame
			// comes from (sx, sy) of the source.
			var sx, sy int
			switch rotate {
			case 90:
				sx, sy = fy, sh-1-fx
			case 180:
				sx, sy = sw-1-fx, sh-1-fy
			case 270:
				sx, sy = sw-1-fy, fx
			default:
				sx, sy = fx, fy
			}
			row[x] = src.Pix[sy*src.Stride+sx]
		}
	}
	return dst
}
