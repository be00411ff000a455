package gllim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refDot is Σ a_d x_d in float64: the independent reference.
func refDot(a, x []float32) float64 {
	s := 0.0
	for d := range x {
		s += float64(a[d]) * float64(x[d])
	}
	return s
}

// refDist is Σ (x_d − c_d)² s_d in float64.
func refDist(x, c, s []float32) float64 {
	q := 0.0
	for d := range x {
		r := float64(x[d]) - float64(c[d])
		q += r * r * float64(s[d])
	}
	return q
}

// randVec is n values in [−1, 1) starting at offset off of a fresh slice,
// so that vectors start unaligned.
func randVec(rng *rand.Rand, n, off int) []float32 {
	v := make([]float32, n+off)
	for i := range v {
		v[i] = float32(2*rng.Float64() - 1)
	}
	return v[off:]
}

// tol is the bound on a float32 sum of n products of magnitude sum |terms|:
// n·ε₃₂ relative to Σ|terms| (generous for any summation order).
func tol(n int, abs float64) float64 { return float64(n+4) * 6e-8 * abs }

// Every kernel (the vector ones where this CPU has them, and the Go ones)
// against the float64 reference, for lengths 0…67 and 1888, on slices
// that start unaligned; r = x − c written exactly.
func TestKernelsMatchFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lengths := []int{1888}
	for n := 0; n <= 67; n++ {
		lengths = append(lengths, n)
	}
	type impl struct {
		name string
		dot4 func(a, b, c, e, x []float32) (float32, float32, float32, float32)
		dot  func(a, x []float32) float32
		dist func(r, x, c, s []float32) float32
	}
	impls := []impl{{"go", dot4Go, dotGo, diffSqDistGo}}
	if simd {
		impls = append(impls, impl{simdName(), dot4SIMD, dotSIMD, diffSqDistSIMD})
	} else {
		t.Logf("no vector kernels on this CPU or build (%s): the Go kernels only", simdName())
	}
	for _, im := range impls {
		for _, n := range lengths {
			off := rng.IntN(8)
			x := randVec(rng, n, off)
			rows := [4][]float32{randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8))}
			g := [4]float32{}
			g[0], g[1], g[2], g[3] = im.dot4(rows[0], rows[1], rows[2], rows[3], x)
			for i, row := range rows {
				want := refDot(row, x)
				abs := 0.0
				for d := range x {
					abs += math.Abs(float64(row[d]) * float64(x[d]))
				}
				if math.Abs(float64(g[i])-want) > tol(n, abs) {
					t.Fatalf("%s dot4 n=%d row %d: %g, want %g", im.name, n, i, g[i], want)
				}
				if got := im.dot(row, x); math.Abs(float64(got)-want) > tol(n, abs) {
					t.Fatalf("%s dot n=%d: %g, want %g", im.name, n, got, want)
				}
			}
			c, s := randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8))
			for d := range s {
				s[d] = 0.5 + s[d]*s[d]
			}
			r := randVec(rng, n, rng.IntN(8))
			got := im.dist(r, x, c, s)
			want := refDist(x, c, s)
			if math.Abs(float64(got)-want) > tol(3*n, want) {
				t.Fatalf("%s diffSqDist n=%d: %g, want %g", im.name, n, got, want)
			}
			for d := range r {
				if r[d] != x[d]-c[d] {
					t.Fatalf("%s diffSqDist n=%d: r[%d] = %g, want x − c = %g", im.name, n, d, r[d], x[d]-c[d])
				}
			}
		}
	}
}

// A NaN or an infinity anywhere in the input reaches the result, in every
// lane position.
func TestKernelsPropagateNaNInf(t *testing.T) {
	impls := map[string]func(a, x []float32) float32{"go": dotGo}
	dists := map[string]func(r, x, c, s []float32) float32{"go": diffSqDistGo}
	if simd {
		impls[simdName()] = dotSIMD
		dists[simdName()] = diffSqDistSIMD
	}
	const n = 53
	for name, dotf := range impls {
		for pos := 0; pos < n; pos++ {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
				a, x := make([]float32, n), make([]float32, n)
				for i := range a {
					a[i], x[i] = 1, 1
				}
				x[pos] = bad
				got := dotf(a, x)
				if math.IsNaN(float64(bad)) && !math.IsNaN(float64(got)) || math.IsInf(float64(bad), 1) && !math.IsInf(float64(got), 1) {
					t.Fatalf("%s dot with %g at %d: %g", name, bad, pos, got)
				}
				c, s, r := make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range s {
					s[i] = 1
				}
				q := dists[name](r, x, c, s)
				if math.IsNaN(float64(bad)) && !math.IsNaN(float64(q)) || math.IsInf(float64(bad), 1) && !math.IsInf(float64(q), 1) {
					t.Fatalf("%s diffSqDist with %g at %d: %g", name, bad, pos, q)
				}
			}
		}
		a4 := [4][]float32{}
		for i := range a4 {
			a4[i] = make([]float32, n)
			for d := range a4[i] {
				a4[i][d] = 1
			}
		}
		x := make([]float32, n)
		x[40] = float32(math.NaN())
		var g [4]float32
		if name == "go" {
			g[0], g[1], g[2], g[3] = dot4Go(a4[0], a4[1], a4[2], a4[3], x)
		} else {
			g[0], g[1], g[2], g[3] = dot4SIMD(a4[0], a4[1], a4[2], a4[3], x)
		}
		for i, v := range g {
			if !math.IsNaN(float64(v)) {
				t.Fatalf("%s dot4 row %d with a NaN in x: %g", name, i, v)
			}
		}
	}
}

// The half-weight kernels (vector where the CPU widens halves, and Go)
// against float64 on the widened values, lengths 0…67 and 1888, unaligned.
func TestHalfKernelsMatchFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type impl struct {
		name string
		dist func(u, x, c, s []float32, a, b, cc, e []uint16) (float32, [4]float32)
		dot4 func(a, b, c, e []uint16, x []float32) (float32, float32, float32, float32)
		dot  func(a []uint16, x []float32) float32
	}
	impls := []impl{{"go", distDot4HalfGo, dot4HalfGo, dotHalfGo}}
	if halfWeights {
		impls = append(impls, impl{simdName(), distDot4HalfSIMD, dot4HalfSIMD, dotHalfSIMD})
	}
	halves := func(n, off int) []uint16 {
		h := make([]uint16, n+off)
		for i := range h {
			h[i] = halfBits(float32(2*rng.Float64() - 1))
		}
		return h[off:]
	}
	lengths := []int{1888}
	for n := 0; n <= 67; n++ {
		lengths = append(lengths, n)
	}
	for _, im := range impls {
		for _, n := range lengths {
			x, c, s := randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8)), randVec(rng, n, rng.IntN(8))
			for d := range s {
				s[d] = 0.5 + s[d]*s[d]
			}
			rows := [4][]uint16{halves(n, rng.IntN(8)), halves(n, rng.IntN(8)), halves(n, rng.IntN(8)), halves(n, rng.IntN(8))}
			u := randVec(rng, n, rng.IntN(8))
			q, v := im.dist(u, x, c, s, rows[0], rows[1], rows[2], rows[3])
			var wantQ, absQ float64
			want, abs := [4]float64{}, [4]float64{}
			for d := 0; d < n; d++ {
				r := float64(x[d]) - float64(c[d])
				ud := r * float64(s[d])
				if math.Abs(float64(u[d])-ud) > 1e-6*math.Abs(ud)+1e-30 {
					t.Fatalf("%s n=%d: u[%d] = %g, want %g", im.name, n, d, u[d], ud)
				}
				wantQ += r * ud
				absQ += math.Abs(r * ud)
				for i := range rows {
					p := float64(halfFloat(rows[i][d])) * ud
					want[i] += p
					abs[i] += math.Abs(p)
				}
			}
			if math.Abs(float64(q)-wantQ) > tol(3*n, absQ) {
				t.Fatalf("%s distDot4Half n=%d: q %g, want %g", im.name, n, q, wantQ)
			}
			for i := range v {
				if math.Abs(float64(v[i])-want[i]) > tol(3*n, abs[i]) {
					t.Fatalf("%s distDot4Half n=%d row %d: %g, want %g", im.name, n, i, v[i], want[i])
				}
			}
			g := [4]float32{}
			g[0], g[1], g[2], g[3] = im.dot4(rows[0], rows[1], rows[2], rows[3], x)
			for i := range rows {
				ref, a := 0.0, 0.0
				for d := 0; d < n; d++ {
					p := float64(halfFloat(rows[i][d])) * float64(x[d])
					ref += p
					a += math.Abs(p)
				}
				if math.Abs(float64(g[i])-ref) > tol(n, a) {
					t.Fatalf("%s dot4Half n=%d row %d: %g, want %g", im.name, n, i, g[i], ref)
				}
				if got := im.dot(rows[i], x); math.Abs(float64(got)-ref) > tol(n, a) {
					t.Fatalf("%s dotHalf n=%d: %g, want %g", im.name, n, got, ref)
				}
			}
		}
	}
}
