package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	d := make([]float64, r*c)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return mat.NewDense(r, c, d)
}

// The blocked kernel computes what gonum's product does, to rounding, for
// shapes on and off its 6×8 tile, its 256-deep slices and its 96-row and
// 2048-column blocks, on one core and on several.
func TestMulMatchesGonum(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2+FMA kernel on this machine: mul is gonum's product")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][3]int{{1, 1, 1}, {6, 1, 8}, {7, 3, 9}, {13, 257, 17}, {96, 256, 8}, {97, 513, 45}, {450, 700, 30}, {30, 600, 2050}, {200, 40, 3}} {
		m, k, n := s[0], s[1], s[2]
		a, b := randDense(rng, m, k), randDense(rng, k, n)
		var want mat.Dense
		want.Mul(a, b)
		for _, procs := range []int{1, 2, 3} {
			prev := runtime.GOMAXPROCS(procs)
			got := mat.NewDense(m, n, nil)
			got.Set(0, 0, math.NaN()) // mul must overwrite, not accumulate
			mul(got, a, b)
			runtime.GOMAXPROCS(prev)
			worst := 0.0
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					// A sum of k products of unit normals, of size ≈ √k, each sum
					// rounded k times (ε·k·√k at worst): compare per √k with slack.
					worst = math.Max(worst, math.Abs(got.At(i, j)-want.At(i, j))/math.Sqrt(float64(k)))
				}
			}
			if worst > 1e-13 {
				t.Errorf("%d×%d·%d×%d on %d cores: differs from gonum by %.3g (per √k)", m, k, k, n, procs, worst)
			}
		}
	}
	// A view into a larger matrix (stride ≠ columns) works as well.
	big := randDense(rng, 40, 50)
	a := big.Slice(3, 33, 5, 45).(*mat.Dense)
	b := randDense(rng, 40, 11)
	got := mat.NewDense(30, 11, nil)
	mul(got, a, b)
	var want mat.Dense
	want.Mul(a, b)
	if !mat.EqualApprox(got, &want, 1e-12) {
		t.Error("strided operand: differs from gonum")
	}
}

// The result does not depend on the number of cores, bit for bit.
func TestMulDeterministic(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2+FMA kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := randDense(rng, 301, 777), randDense(rng, 777, 59)
	one, two := mat.NewDense(301, 59, nil), mat.NewDense(301, 59, nil)
	prev := runtime.GOMAXPROCS(1)
	mul(one, a, b)
	runtime.GOMAXPROCS(4)
	mul(two, a, b)
	runtime.GOMAXPROCS(prev)
	if !mat.Equal(one, two) {
		t.Error("1 and 4 cores give different products")
	}
}

// BenchmarkGEMM times the E-step's largest product at the size of a
// training fold (N = 15000 faces, D = 1888, K(L+1) = 450): the kernel
// against gonum's product.
func BenchmarkGEMM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, w := randDense(rng, 15000, 1888), randDense(rng, 1888, 450)
	c := mat.NewDense(15000, 450, nil)
	flops := 2 * 15000 * 1888 * 450.0
	for _, k := range []struct {
		name string
		on   bool
	}{{"kernel", true}, {"gonum", false}} {
		b.Run(k.name, func(b *testing.B) {
			if k.on && !haveKernel {
				b.Skip("no kernel")
			}
			useKernel = k.on
			defer func() { useKernel = haveKernel }()
			for i := 0; i < b.N; i++ {
				mul(c, x, w)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
