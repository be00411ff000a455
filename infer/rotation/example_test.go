package rotation_test

import (
	"fmt"
	"math"

	"github.com/edgepose/posed/infer/rotation"
)

// tidy rounds to 0.1° and drops the sign of a zero.
func tidy(v float64) float64 { return math.Round(v*10)/10 + 0 }

// A driver whose neutral pose looks 20° to the left and 10° down (a camera
// mounted off axis). A head turned 30° left at the same pitch is, for them,
// 10° left of straight ahead. Angles compose as rotations, not by
// subtraction: a head raised to 5° at the same yaw is 14.1° up and rolled
// for them, and the further from the neutral pose, the more the two differ.
func ExampleRelative() {
	neutral := rotation.Head(20, -10, 0)
	for _, h := range [][2]float64{{30, -10}, {20, 5}, {60, 20}} {
		yaw, pitch, roll := rotation.Relative(neutral, rotation.Head(h[0], h[1], 0))
		fmt.Printf("head yaw %g pitch %g: yaw %.1f pitch %.1f roll %.1f\n", h[0], h[1], tidy(yaw), tidy(pitch), tidy(roll))
	}
	// Output:
	// head yaw 30 pitch -10: yaw 10.0 pitch 0.0 roll 0.0
	// head yaw 20 pitch 5: yaw 0.6 pitch 14.1 roll -5.1
	// head yaw 60 pitch 20: yaw 41.7 pitch 19.6 roll -13.2
}

// The mean of a few noisy poses, as a measured neutral pose is made.
func ExampleMean() {
	poses := []rotation.Matrix{rotation.Head(18, -9, 1), rotation.Head(22, -11, -1), rotation.Head(20, -10, 0)}
	yaw, pitch, roll := rotation.Mean(poses).Angles()
	fmt.Printf("yaw %.1f pitch %.1f roll %.1f\n", tidy(yaw), tidy(pitch), tidy(roll))
	// Output: yaw 20.0 pitch -10.0 roll 0.0
}
