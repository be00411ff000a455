package train

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkEMIteration times one EM iteration (E-step, re-seeding check,
// M-step) at N = 10,000, D = 1888, K = 50, Lt = 5, Lw = 4, beside the four
// dense matrix products it needs, timed alone in the same run:
//
//	E-step  Y (N×D) · W (D×K(L+1))     and  (Y∘Y) (N×D) · S (D×K)
//	M-step  Q (K(L+1)×N) · Y (N×D)     and  R (K×N) · (Y∘Y) (N×D)
//
// 2·N·D·K·(L+2) = 20.8 G multiply-adds. x-gemm is the iteration's time over
// the products'; gonum-gemm times the same products with gonum's general
// product, which the AVX2 kernel (gemm_amd64.s) replaces.
func BenchmarkEMIteration(b *testing.B) {
	const N, D, K, Lt, Lw = 10000, 1888, 50, 5, 4
	rng := rand.New(rand.NewPCG(1, 2))
	truth := RandomParams(K, D, Lt, Lw, rng)
	t, _, y, _ := Sample(truth, N, rng)
	cfg := Config{K: K, Lw: Lw}.withDefaults()
	cfg.MinCount = float64(Lt + Lw + 2)
	e := newEM(t, y, cfg)
	e.initialise(1)
	e.eStep()
	e.mStep(Lw)
	madds := 2 * float64(N) * D * K * (Lt + Lw + 2)
	var gemm float64
	products := func() {
		mul(e.yw, e.y, e.w)
		mul(e.ys, e.y2, e.s)
		mul(e.pq, e.q, e.y)
		mul(e.p2, e.rt, e.y2)
	}
	b.Run("gonum-gemm", func(b *testing.B) {
		useKernel = false
		defer func() { useKernel = haveKernel }()
		for b.Loop() {
			products()
		}
		b.ReportMetric(madds/(b.Elapsed().Seconds()/float64(b.N))/1e9, "Gmadd/s")
	})
	b.Run("gemm-floor", func(b *testing.B) {
		for b.Loop() {
			products()
		}
		gemm = b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(madds/gemm/1e9, "Gmadd/s")
	})
	b.Run("iteration", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.eStep()
			e.reseed()
			e.mStep(Lw)
		}
		s := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(s, "s/iter")
		if gemm > 0 {
			b.ReportMetric(s/gemm, "x-gemm")
		}
	})
}
