//go:build linux

package device

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/blackjack/webcam"
	"golang.org/x/sys/unix"
)

// Camera is a V4L2 capture device read through memory-mapped buffers.
type Camera struct {
	path   string
	cam    *webcam.Webcam
	format uint32
	w, h   int
	o      CameraOptions
}

// OpenCamera opens and starts the V4L2 device at path (/dev/video0,
// /dev/v4l/by-id/…): it negotiates the pixel format and size, sets the
// frame rate and the number of buffers, and starts streaming.
func OpenCamera(path string, o CameraOptions) (*Camera, error) {
	cam, err := webcam.Open(path)
	if err != nil {
		return nil, fmt.Errorf("device: opening %s: %w", path, err)
	}
	c := &Camera{path: path, cam: cam, o: o}
	if err := c.start(); err != nil {
		cam.Close()
		return nil, fmt.Errorf("device: %s: %w", path, err)
	}
	return c, nil
}

func (c *Camera) start() error {
	formats := c.cam.GetSupportedFormats()
	var offered []uint32
	for f := range formats {
		offered = append(offered, uint32(f))
	}
	f, err := ChooseFormat(offered, c.o.Format)
	if err != nil {
		return err
	}
	var sizes []Size
	for _, s := range c.cam.GetSupportedFrameSizes(webcam.PixelFormat(f)) {
		sizes = append(sizes, Size{MinW: int(s.MinWidth), MaxW: int(s.MaxWidth), StepW: int(s.StepWidth),
			MinH: int(s.MinHeight), MaxH: int(s.MaxHeight), StepH: int(s.StepHeight)})
	}
	w, h := ChooseSize(sizes, c.o.Width, c.o.Height)
	// webcam v0.6.1's SetImageFormat returns the size asked for, not the
	// one the driver set: the size is checked again on every frame's length.
	got, _, _, err := c.cam.SetImageFormat(webcam.PixelFormat(f), uint32(w), uint32(h))
	if err != nil {
		return fmt.Errorf("setting %s %d×%d: %w", FourCCString(f), w, h, err)
	}
	if uint32(got) != f {
		return fmt.Errorf("%w: asked for %s, the driver set %s", ErrFormat, FourCCString(f), FourCCString(uint32(got)))
	}
	c.format, c.w, c.h = f, w, h
	if c.o.FPS > 0 {
		// Not every driver lets the rate be set; frames then come as they do.
		_ = c.cam.SetFramerate(float32(c.o.FPS))
	}
	if c.o.Buffers > 0 {
		if err := c.cam.SetBufferCount(uint32(c.o.Buffers)); err != nil {
			return err
		}
	}
	return c.cam.StartStreaming()
}

// Format returns the negotiated pixel format and size.
func (c *Camera) Format() (string, int, int) { return FourCCString(c.format), c.w, c.h }

// Next waits for a frame (at most the timeout), takes the newest one the
// driver holds, converts it to grey and gives the buffer back at once.
func (c *Camera) Next(ctx context.Context, dst *Frame) error {
	timeout := c.o.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Wait in slices of at most a second so cancellation is prompt
		// (the library's timeout is in whole seconds).
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("device: %s: %w after %v", c.path, ErrTimeout, timeout)
		}
		err := c.cam.WaitForFrame(uint32(math.Min(1, math.Ceil(left.Seconds()))))
		var to *webcam.Timeout
		if errors.As(err, &to) {
			continue
		}
		if err != nil {
			return fmt.Errorf("device: %s: waiting for a frame: %w", c.path, err)
		}
		break
	}
	raw, idx, err := c.cam.GetFrame()
	if err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("device: %s: %w: woken without a frame", c.path, ErrTimeout)
		}
		return fmt.Errorf("device: %s: reading a frame: %w", c.path, err)
	}
	// Latest frame wins: if the driver holds newer frames, give this one
	// back and take the next.
	for {
		raw2, idx2, err := c.cam.GetFrame()
		if err != nil {
			break
		}
		c.cam.ReleaseFrame(idx)
		raw, idx = raw2, idx2
	}
	now := time.Now()
	err = convertFrame(dst, c.format, raw, c.w, c.h) // copies out of the mmap'd buffer
	if rerr := c.cam.ReleaseFrame(idx); rerr != nil && err == nil {
		err = fmt.Errorf("device: %s: returning a buffer: %w", c.path, rerr)
	}
	if err != nil {
		return fmt.Errorf("device: %s: %w", c.path, err)
	}
	dst.Time = now
	return nil
}

// Close stops streaming and closes the device.
func (c *Camera) Close() error { return c.cam.Close() }

var _ Source = (*Camera)(nil)
