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

	"github.com/edgepose/posed/internal/grey"
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
	// ErrFormat: the camera offers no usable pixel format, or a file is
	// not a replay posed can read.
	ErrFormat = errors.New("device: unusable pixel format")
	// ErrBadFrame: one frame cannot be decoded (empty, truncated, corrupt,
	// an unsupported JPEG). The frame is dropped; the source can go on.
	ErrBadFrame = errors.New("device: undecodable frame")
)

// MaxFramePixels bounds the frames posed decodes: 3840×2160 (4K UHD,
// 8.3 megapixels, above any camera it serves). A frame whose header claims
// more is refused before a byte of it is decoded, so that one picture
// cannot take the memory of a small board: Go's decoder holds a
// progressive 4:4:4 JPEG's coefficients whole (an 8000×8000 one, 375 KB on
// disk, took 2.5 GB), and at this bound a frame's decoding stays within
// about 300 MB (docs/internals.md, "Frames").
const MaxFramePixels = 3840 * 2160

// checkHeaderSize refuses a frame whose header says w×h where want (if
// not zero) is the expected size, or that is larger than MaxFramePixels.
func checkHeaderSize(w, h int, want image.Point) error {
	switch {
	case w <= 0 || h <= 0:
		return fmt.Errorf("%w: header says %d×%d", ErrBadFrame, w, h)
	case want != (image.Point{}) && (w != want.X || h != want.Y):
		return sizeError(fmt.Sprintf("%d×%d (from its header)", w, h), fmt.Sprintf("%d×%d", want.X, want.Y))
	case int64(w)*int64(h) > MaxFramePixels:
		return sizeError(fmt.Sprintf("%d×%d (from its header)", w, h), fmt.Sprintf("at most %d pixels", MaxFramePixels))
	}
	return nil
}

// setSize makes dst.Gray a w×h grey image, reusing its buffer if large
// enough.
func setSize(dst *Frame, w, h int) *image.Gray {
	dst.Gray = grey.Resize(dst.Gray, image.Rect(0, 0, w, h))
	return dst.Gray
}

// sizeError reports a frame of the wrong size.
func sizeError(got, want string) error {
	return fmt.Errorf("%w: %s, expected %s", ErrFrameSize, got, want)
}
