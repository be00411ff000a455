//go:build !linux

package device

import (
	"context"
	"fmt"
)

// Camera is a V4L2 capture device; V4L2 exists only on Linux.
type Camera struct{}

// OpenCamera fails: V4L2 exists only on Linux.
func OpenCamera(path string, o CameraOptions) (*Camera, error) {
	return nil, fmt.Errorf("device: %s: V4L2 cameras are only supported on Linux", path)
}

func (c *Camera) Next(ctx context.Context, dst *Frame) error { return ErrEnd }
func (c *Camera) Close() error                               { return nil }
func (c *Camera) Format() (string, int, int)                 { return "", 0, 0 }
