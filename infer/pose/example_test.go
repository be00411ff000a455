package pose_test

import (
	"fmt"
	"image"
	"strings"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
)

// Estimating a face's pose with the default model: load it, make an
// estimator (safe for concurrent use) and one worker per goroutine, and
// run Algorithm 1 from a face box (a detector's, or a tracked face's). The
// result holds the angles, their calibrated σ, and the refined box.
func ExampleWorker_Estimate() {
	m, err := gllim.ReadFile("../../models/default.gllim")
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, o := range m.Outputs {
		names = append(names, o.Name)
	}
	fmt.Println(strings.Join(names, " "))
	est, err := pose.New(m, pose.DefaultSettings())
	if err != nil {
		fmt.Println(err)
		return
	}
	w := est.NewWorker()
	img := image.NewGray(image.Rect(0, 0, 320, 240)) // a camera frame
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7 + i/320*3)
	}
	r := w.Estimate(img, feature.Box{X: 110, Y: 70, W: 100, H: 100})
	fmt.Println("iterations within the default 3:", r.Iterations >= 1 && r.Iterations <= 3)
	fmt.Println("every angle has a σ:", r.Std[0] > 0 && r.Std[1] > 0 && r.Std[2] > 0)
	// Output:
	// yaw pitch roll dx dy ds
	// iterations within the default 3: true
	// every angle has a σ: true
}
