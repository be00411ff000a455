package track

import "math"

// angleFilter follows one angle of a face over time: a Kalman filter on
// the angle and its rate under a constant-velocity model whose rate is
// moved by white-noise acceleration (Bar-Shalom, Li and Kirubarajan,
// "Estimation with Applications to Tracking and Navigation", 2001, §6.3.2:
// the continuous white-noise acceleration model). Each frame's estimate is
// a measurement of the angle with the model's σ; the filter weighs it
// against where the angle was heading, so a confident estimate moves the
// state and a doubtful one barely does (docs/method.md §8).
//
// The model's error is not white: a face's own proportions, the light, the
// person bias every estimate of it alike, frame after frame. Only a share
// of the variance, white (Config.White), is noise that averaging removes;
// the filter is told that share as its measurement noise, and the rest is
// added back to the σ it reports, which therefore never falls below what
// averaging cannot remove.
type angleFilter struct {
	x    [2]float64 // angle (degrees), rate (degrees per second)
	p    [3]float64 // covariance: p[0] = var(angle), p[1] = cov, p[2] = var(rate)
	bias float64    // the measurements' variance that is not white, smoothed
}

// initialRate is the σ of a new face's rate (degrees per second): a head
// that appears may already be turning, about as fast as one turns to look
// at something (ATTENTION.md: saccadic head turns reach 300°/s and more;
// most are far slower).
const initialRate = 100

// reset starts the filter at measurement z of variance r, still.
func (f *angleFilter) reset(z, r, white float64) {
	f.x = [2]float64{z, 0}
	f.p = [3]float64{white * r, 0, initialRate * initialRate}
	f.bias = (1 - white) * r
}

// predict moves the state dt seconds ahead (equations (6.3.2-4) and
// (6.3.2-5) of Bar-Shalom et al.: F = [1 dt; 0 1], Q = q·[dt³/3 dt²/2;
// dt²/2 dt]).
func (f *angleFilter) predict(dt, q float64) {
	if !(dt > 0) {
		return
	}
	p0, p1, p2 := f.p[0], f.p[1], f.p[2]
	f.x[0] += dt * f.x[1]
	// F P Fᵀ + Q
	f.p[0] = p0 + 2*dt*p1 + dt*dt*p2 + q*dt*dt*dt/3
	f.p[1] = p1 + dt*p2 + q*dt*dt/2
	f.p[2] = p2 + q*dt
}

// update takes measurement z of variance r: the white share of r is the
// measurement noise (H = [1 0]; K = P Hᵀ / (H P Hᵀ + R)), and the rest
// is kept as the bias's variance, smoothed over the last frames.
func (f *angleFilter) update(z, r, white float64) {
	rw := white * r
	s := f.p[0] + rw
	if !(s > 0) || math.IsNaN(z) {
		return
	}
	k0, k1 := f.p[0]/s, f.p[1]/s
	v := z - f.x[0]
	f.x[0] += k0 * v
	f.x[1] += k1 * v
	p0, p1, p2 := f.p[0], f.p[1], f.p[2]
	f.p[0] = (1 - k0) * p0
	f.p[1] = (1 - k0) * p1
	f.p[2] = p2 - k1*p1
	f.bias += biasWeight * ((1-white)*r - f.bias)
}

// biasWeight is how much of a new measurement's bias variance the bias
// takes: the σ it reports follows the model's doubt within a few frames.
const biasWeight = 0.5

// angle is the filtered angle; std its σ: the state's and the bias's.
func (f *angleFilter) angle() float64 { return f.x[0] }
func (f *angleFilter) std() float64   { return math.Sqrt(max(f.p[0], 0) + f.bias) }
