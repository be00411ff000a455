package track

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// kalmanRef is the textbook Kalman filter in matrices (float64, gonum):
// predict x ← F x, P ← F P Fᵀ + Q; update with H = [1 0]:
// K = P Hᵀ (H P Hᵀ + R)⁻¹, x ← x + K (z − H x), P ← (I − K H) P.
type kalmanRef struct {
	x *mat.VecDense
	p *mat.Dense
}

func (k *kalmanRef) predict(dt, q float64) {
	f := mat.NewDense(2, 2, []float64{1, dt, 0, 1})
	qm := mat.NewDense(2, 2, []float64{q * dt * dt * dt / 3, q * dt * dt / 2, q * dt * dt / 2, q * dt})
	k.x.MulVec(f, k.x)
	var fp, fpf mat.Dense
	fp.Mul(f, k.p)
	fpf.Mul(&fp, f.T())
	fpf.Add(&fpf, qm)
	k.p = &fpf
}

func (k *kalmanRef) update(z, r float64) {
	h := mat.NewDense(1, 2, []float64{1, 0})
	var hp, s mat.Dense
	hp.Mul(h, k.p)
	s.Mul(&hp, h.T())
	inv := 1 / (s.At(0, 0) + r)
	var pht mat.Dense
	pht.Mul(k.p, h.T())
	gain := mat.NewVecDense(2, []float64{pht.At(0, 0) * inv, pht.At(1, 0) * inv})
	v := z - k.x.AtVec(0)
	k.x.AddScaledVec(k.x, v, gain)
	var kh, ikh, np mat.Dense
	kh.Mul(gain, h)
	ikh.Sub(mat.NewDense(2, 2, []float64{1, 0, 0, 1}), &kh)
	np.Mul(&ikh, k.p)
	k.p = &np
}

// The filter's algebra is the textbook Kalman filter's: on a random walk
// of measurements, times and variances its state and covariance match a
// matrix implementation in float64 to rounding.
func TestAngleFilterMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const white, q = 0.4, 3e4
	var f angleFilter
	z0, r0 := 12.0, 49.0
	f.reset(z0, r0, white)
	ref := kalmanRef{x: mat.NewVecDense(2, []float64{z0, 0}), p: mat.NewDense(2, 2, []float64{white * r0, 0, 0, initialRate * initialRate})}
	angle := z0
	for i := range 200 {
		dt := 0.02 + 0.1*rng.Float64()
		angle += 200 * dt * math.Sin(float64(i)/10)
		sd := 2 + 10*rng.Float64()
		z := angle + sd*rng.NormFloat64()
		f.predict(dt, q)
		ref.predict(dt, q)
		f.update(z, sd*sd, white)
		ref.update(z, white*sd*sd)
		for j, c := range [][2]float64{
			{f.x[0], ref.x.AtVec(0)}, {f.x[1], ref.x.AtVec(1)},
			{f.p[0], ref.p.At(0, 0)}, {f.p[1], ref.p.At(0, 1)}, {f.p[1], ref.p.At(1, 0)}, {f.p[2], ref.p.At(1, 1)},
		} {
			if math.Abs(c[0]-c[1]) > 1e-9*math.Max(1, math.Abs(c[1])) {
				t.Fatalf("step %d: value %d is %.12g, the reference %.12g", i, j, c[0], c[1])
			}
		}
	}
}

// What the filter is for. On a head held still the published angle
// jitters far less than the frames; its σ never falls below the share of
// the model's σ that averaging cannot remove (a person's bias). On a head
// turning at a steady 100°/s it does not lag behind the turn as an
// exponential smoothing of the same frames does, since it learns the
// rate.
func TestAngleFilterSmoothsWithoutLag(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const white, q, dt, sd = 0.5, 2e4, 1.0 / 15, 6.0
	var f angleFilter
	var jitterIn, jitterOut float64
	prevZ, prevF := 0.0, 0.0
	for i := range 300 {
		z := 10 + sd*rng.NormFloat64()
		if i == 0 {
			f.reset(z, sd*sd, white)
		} else {
			f.predict(dt, q)
			f.update(z, sd*sd, white)
		}
		if i > 30 {
			jitterIn += (z - prevZ) * (z - prevZ)
			jitterOut += (f.angle() - prevF) * (f.angle() - prevF)
		}
		prevZ, prevF = z, f.angle()
		if floor := math.Sqrt((1 - white) * sd * sd); f.std() < floor-1e-9 {
			t.Fatalf("frame %d: σ %.3f under the bias's %.3f", i, f.std(), floor)
		}
	}
	if ratio := math.Sqrt(jitterOut / jitterIn); ratio > 0.6 {
		t.Errorf("still head: the filter keeps %.2f of the frames' jitter, want ≤ 0.6", ratio)
	}
	// A steady turn, the frames exact: the filter's lag after a second,
	// against an exponential smoothing of weight 0.5 (1 frame: 6.7°).
	f.reset(0, sd*sd, white)
	ema := 0.0
	for i := 1; i <= 15; i++ {
		z := 100 * dt * float64(i)
		f.predict(dt, q)
		f.update(z, sd*sd, white)
		ema = 0.5*ema + 0.5*z
	}
	truth := 100.0
	if lag, emaLag := truth-f.angle(), truth-ema; math.Abs(lag) > 1 || emaLag < 6 {
		t.Errorf("after 1 s of a 100°/s turn the filter is %.2f° behind, the smoothing %.2f°: want ≤ 1° and the smoothing's ≈ 6.7°", lag, emaLag)
	}
}
