// Package device provides the frame sources of posed: V4L2 cameras
// (Linux), and replays of image folders and video files. Every source
// delivers 8-bit grey frames, converted straight from the camera's bytes
// where the pixel format allows.
package device

import (
	"context"
	"errors"
	"fmt"
	"image"
	"time"
)

// Frame is one grey frame. Gray's buffer belongs to the Frame: a source
// writes into it (reallocating only when the size grows), so a caller that
// keeps a frame past the next call to Next passes a different Frame.
type Frame struct {
	Seq  uint64    // 1, 2, … per source, across re-opens
	Time time.Time // capture time
	Gray *image.Gray
}

// Source delivers frames. Next blocks until a frame is ready, the context
// ends, or the source fails; Close releases the device or file.
type Source interface {
	Next(ctx context.Context, dst *Frame) error
	Close() error
}

// Errors a source returns; test with errors.Is.
var (
	// ErrEnd: a replay reached its end (and does not loop).
	ErrEnd = errors.New("device: end of replay")
	// ErrTimeout: no frame within the configured timeout.
	ErrTimeout = errors.New("device: frame timeout")
	// ErrFrameSize: a frame does not have the negotiated size or length. The
	// frame is dropped; the source can go on.
	ErrFrameSize = errors.New("device: frame of the wrong size")
	// ErrFormat: the camera offers no usable pixel format, or a frame
	// cannot be decoded.
	ErrFormat = errors.New("device: unusable pixel format")
)

// setSize makes dst.Gray a w×h grey image, reusing its buffer if large
// enough.
func setSize(dst *Frame, w, h int) *image.Gray {
	n := w * h
	g := dst.Gray
	if g == nil || cap(g.Pix) < n {
		g = image.NewGray(image.Rect(0, 0, w, h))
	} else {
		g.Pix = g.Pix[:n]
		g.Stride = w
		g.Rect = image.Rect(0, 0, w, h)
	}
	dst.Gray = g
	return g
}

// sizeError reports a frame of the wrong size.
func sizeError(got, want string) error {
	return fmt.Errorf("%w: %s, expected %s", ErrFrameSize, got, want)
}
