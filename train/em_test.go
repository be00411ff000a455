package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"

	"github.com/edgepose/posed/infer/gllim"
)

// rmsError returns the root-mean-square error, over samples and the Lt
// outputs, of the predictions of p (t in units (t − mean)/scale) on (t, y).
func rmsError(t *testing.T, p *gllim.Params, mean, scale []float64, tt, y *mat.Dense) float64 {
	t.Helper()
	f, err := NewForward64(p)
	if err != nil {
		t.Fatal(err)
	}
	n, lt := tt.Dims()
	s := 0.0
	for i := 0; i < n; i++ {
		x, _ := f.Predict(y.RawRowView(i))
		for j := 0; j < lt; j++ {
			v := mean[j] + scale[j]*x[j] - tt.At(i, j)
			s += v * v
		}
	}
	return math.Sqrt(s / float64(n*lt))
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// EM on data drawn from a known hybrid GLLiM recovers it: its held-out error
// is within 1.2× that of the true model, its log-likelihood never falls, and
// modelling the latent part (Lw = 2) predicts better than ignoring it.
func TestEMRecoversKnownModel(t *testing.T) {
	const (
		K, D, Lt, Lw = 5, 50, 2, 2
		nTrain       = 3000
		nTest        = 1000
		maxRatio     = 1.2
	)
	rng := rand.New(rand.NewPCG(1, 2))
	truth := RandomParams(K, D, Lt, Lw, rng)
	ttr, _, ytr, _ := Sample(truth, nTrain, rng)
	tte, _, yte, _ := Sample(truth, nTest, rng)
	base := rmsError(t, truth, make([]float64, Lt), ones(Lt), tte, yte)

	res, err := fit(ttr, ytr, Config{K: K, Lw: Lw, Starts: 3, Seed: 7, MaxIter: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := rmsError(t, res.Params, res.TMean, res.TScale, tte, yte)
	t.Logf("true model RMSE %.4f, EM (Lw=2) %.4f, ratio %.3f, %d iterations, logL %.1f, starts %v",
		base, got, got/base, res.Iterations, res.LogL, res.StartLogL)
	if got > maxRatio*base {
		t.Errorf("EM model RMSE %.4f > %.1f × true model's %.4f", got, maxRatio, base)
	}
	for i := 1; i < len(res.History); i++ {
		if d := res.History[i] - res.History[i-1]; d < -1e-9*math.Abs(res.History[i]) {
			t.Errorf("log-likelihood fell at iteration %d: %.9g → %.9g", i+1, res.History[i-1], res.History[i])
		}
	}
	if res.Reseeds != 0 || res.NonMonotone != 0 {
		t.Errorf("reseeds %d, non-monotone iterations %d on well-posed data", res.Reseeds, res.NonMonotone)
	}
	if res.Iterations < 3 {
		t.Errorf("stopped after %d iterations: a convergence test against −Inf?", res.Iterations)
	}
	// The kept parameters are those of the best start, not a later one.
	best := math.Inf(-1)
	for _, l := range res.StartLogL {
		best = math.Max(best, l)
	}
	if res.LogL != best {
		t.Errorf("kept logL %.6f, best start has %.6f", res.LogL, best)
	}
	if l := logLikelihood(res.Params, res.TMean, res.TScale, ttr, ytr); math.Abs(l-res.LogL) > 1e-9*math.Abs(l) {
		t.Errorf("log-likelihood of the returned parameters %.9g, reported %.9g", l, res.LogL)
	}
	// The truth's likelihood is an upper bound the fit should come close to.
	lTrue := logLikelihood(truth, make([]float64, Lt), ones(Lt), ttr, ytr)
	t.Logf("logL: truth %.1f, fit %.1f", lTrue, res.LogL)

	res0, err := fit(ttr, ytr, Config{K: K, Lw: 0, Starts: 3, Seed: 7, MaxIter: 200})
	if err != nil {
		t.Fatal(err)
	}
	got0 := rmsError(t, res0.Params, res0.TMean, res0.TScale, tte, yte)
	t.Logf("Lw=0 RMSE %.4f vs Lw=2 %.4f", got0, got)
	if got >= got0 {
		t.Errorf("Lw=2 RMSE %.4f is not below Lw=0's %.4f on data with a 2-D latent part", got, got0)
	}
}

// The E-step's Woodbury / determinant-lemma densities equal a dense float64
// computation with the D×D covariance Σ_k + A^w_k A^wᵀ_k.
func TestEStepMatchesDenseDensities(t *testing.T) {
	const (
		K, D, Lt, Lw, N = 3, 12, 2, 2, 40
		relTol          = 1e-9
	)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, cov := range []struct {
		cov    gllim.Covariance
		shared bool
	}{{gllim.Diagonal, false}, {gllim.Isotropic, false}, {gllim.Diagonal, true}} {
		p := RandomParams(K, D, Lt, Lw, rng)
		p.Cov, p.Shared = cov.cov, cov.shared
		tt, _, y, _ := Sample(p, N, rng)
		got := logLikelihood(p, make([]float64, Lt), ones(Lt), tt, y)

		// Dense reference.
		L := Lt + Lw
		want := 0.0
		lp := make([]float64, K)
		for n := 0; n < N; n++ {
			for k := 0; k < K; k++ {
				A := mat.NewDense(D, L, p.Ak(k))
				aw := A.Slice(0, D, Lt, L)
				var cv mat.Dense
				cv.Mul(aw, aw.T())
				cs := mat.NewSymDense(D, nil)
				for i := 0; i < D; i++ {
					for j := 0; j < D; j++ {
						v := cv.At(i, j)
						if i == j {
							v += p.SigmaK(k)[i]
						}
						cs.SetSym(i, j, v)
					}
				}
				mu := make([]float64, D)
				for d := 0; d < D; d++ {
					mu[d] = p.Bk(k)[d]
					for l := 0; l < Lt; l++ {
						mu[d] += A.At(d, l) * tt.At(n, l)
					}
				}
				ny, ok := distmv.NewNormal(mu, cs, nil)
				if !ok {
					t.Fatal("reference covariance not PD")
				}
				nt, ok := distmv.NewNormal(p.Ck(k), mat.NewSymDense(Lt, append([]float64(nil), p.GammaK(k)...)), nil)
				if !ok {
					t.Fatal("Γ not PD")
				}
				lp[k] = math.Log(p.Pi[k]) + nt.LogProb(tt.RawRowView(n)) + ny.LogProb(y.RawRowView(n))
			}
			m := math.Inf(-1)
			for _, v := range lp {
				m = math.Max(m, v)
			}
			s := 0.0
			for _, v := range lp {
				s += math.Exp(v - m)
			}
			want += m + math.Log(s)
		}
		if math.Abs(got-want) > relTol*math.Abs(want) {
			t.Errorf("%s shared=%v: Woodbury logL %.15g, dense %.15g (rel %.2g)", cov.cov, cov.shared, got, want, math.Abs(got-want)/math.Abs(want))
		}
	}
}

// The BIC parameter count, by hand: K = 2, D = 3, Lt = 1, Lw = 1 (L = 2).
// Per component A 3·2 = 6, b 3, c^t 1, Γ^t 1 (+ Σ); π adds K − 1 = 1.
func TestNumFreeByHand(t *testing.T) {
	p := gllim.NewParams(2, 3, 1, 1)
	cases := []struct {
		cov    gllim.Covariance
		shared bool
		want   int
	}{
		{gllim.Diagonal, false, 1 + 2*(6+3+1+1+3)},   // 29
		{gllim.Isotropic, false, 1 + 2*(6+3+1+1+1)},  // 25
		{gllim.Diagonal, true, 1 + 2*(6+3+1+1) + 3},  // 26
		{gllim.Isotropic, true, 1 + 2*(6+3+1+1) + 1}, // 24
	}
	for _, c := range cases {
		p.Cov, p.Shared = c.cov, c.shared
		if got := p.NumFree(); got != c.want {
			t.Errorf("%s shared=%v: %d parameters, want %d", c.cov, c.shared, got, c.want)
		}
	}
	// And the BIC of a fit uses it.
	rng := rand.New(rand.NewPCG(5, 6))
	truth := RandomParams(2, 3, 1, 1, rng)
	tt, _, y, _ := Sample(truth, 200, rng)
	res, err := fit(tt, y, Config{K: 2, Lw: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := -2*res.LogL + 29*math.Log(200); math.Abs(res.BIC-want) > 1e-9*math.Abs(want) {
		t.Errorf("BIC %.6f, want %.6f", res.BIC, want)
	}
}

// The same seed gives the same model bit for bit, on one core or two.
func TestFitDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	truth := RandomParams(4, 30, 2, 1, rng)
	tt, _, y, _ := Sample(truth, 800, rng)
	cfg := Config{K: 4, Lw: 1, Seed: 42, MaxIter: 20, Starts: 2, InitPCs: 2}
	a, err := fit(tt, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fit(tt, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	c, err := fit(tt, y, cfg)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Result{"second run": b, "one core": c} {
		if r.LogL != a.LogL {
			t.Errorf("%s: logL %.17g, first run %.17g", name, r.LogL, a.LogL)
		}
		for i := range a.Params.A {
			if r.Params.A[i] != a.Params.A[i] {
				t.Errorf("%s: A[%d] differs: %g vs %g", name, i, r.Params.A[i], a.Params.A[i])
				break
			}
		}
	}
}

// An ensemble's members, fitted on shared data, are the models Fit gives
// from their seeds, bit for bit; they differ from one another.
func TestFitEnsembleMembersAreSeededFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 19))
	truth := RandomParams(4, 30, 2, 1, rng)
	tt, _, y, _ := Sample(truth, 600, rng)
	cfg := Config{K: 4, Lw: 1, Seed: 7, MaxIter: 15}
	rs, err := FitEnsemble(tt, y, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		c := cfg
		c.Seed += uint64(i)
		one, err := fit(tt, y, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.LogL != one.LogL || !slices.Equal(r.Params.A, one.Params.A) || !slices.Equal(r.Params.B, one.Params.B) {
			t.Errorf("member %d: logL %.17g, Fit from seed %d gives %.17g", i+1, r.LogL, c.Seed, one.LogL)
		}
	}
	if slices.Equal(rs[0].Params.A, rs[1].Params.A) {
		t.Error("members 1 and 2 are the same model")
	}
	if _, err := FitEnsemble(tt, y, cfg, 0); err == nil {
		t.Error("an ensemble of 0 members was fitted")
	}
}

// Isotropic and shared covariances are honoured, and EM under each
// constraint still never lowers the log-likelihood.
func TestCovarianceConstraints(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	truth := RandomParams(3, 20, 2, 1, rng)
	tt, _, y, _ := Sample(truth, 900, rng)
	for _, c := range []struct {
		cov    gllim.Covariance
		shared bool
	}{{gllim.Isotropic, false}, {gllim.Diagonal, true}, {gllim.Isotropic, true}} {
		res, err := fit(tt, y, Config{K: 3, Lw: 1, Cov: c.cov, Shared: c.shared, Seed: 3, MaxIter: 60})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Params
		for k := 0; k < p.K; k++ {
			for d := 0; d < p.D; d++ {
				if c.cov == gllim.Isotropic && p.SigmaK(k)[d] != p.SigmaK(k)[0] {
					t.Fatalf("%s shared=%v: σ_%d varies across dimensions", c.cov, c.shared, k)
				}
				if c.shared && p.SigmaK(k)[d] != p.SigmaK(0)[d] {
					t.Fatalf("%s shared=%v: σ differs between components 0 and %d", c.cov, c.shared, k)
				}
			}
		}
		for i := 1; i < len(res.History); i++ {
			if d := res.History[i] - res.History[i-1]; d < -1e-9*math.Abs(res.History[i]) {
				t.Errorf("%s shared=%v: logL fell at iteration %d by %.3g", c.cov, c.shared, i+1, -d)
			}
		}
		if p.Shared != c.shared || p.Cov != c.cov {
			t.Errorf("result records cov %s shared %v", p.Cov, p.Shared)
		}
	}
}

// A component that loses its samples is re-seeded, every sample's
// responsibilities still sum to one and the fit goes on.
func TestReseedCollapsedComponent(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	truth := RandomParams(3, 10, 2, 0, rng)
	tt, _, y, _ := Sample(truth, 600, rng)
	cfg := Config{K: 3}.withDefaults()
	cfg.MinCount = 4
	e := newEM(tt, y, cfg)
	e.initialise(1)
	e.eStep()
	// Collapse component 2 into component 0, leaving it a little mass
	// (below MinCount), which must not be lost when it is re-seeded.
	keep := 2 / e.nk[2]
	for n := 0; n < e.N; n++ {
		moved := e.r[2*e.N+n] * (1 - keep)
		e.r[n] += moved
		e.r[2*e.N+n] -= moved
	}
	e.nk[0] += e.nk[2] - 2
	e.nk[2] = 2
	if got := e.reseed(); got != 1 {
		t.Fatalf("re-seeded %d components, want 1", got)
	}
	for n := 0; n < e.N; n++ {
		s := 0.0
		for k := 0; k < e.K; k++ {
			s += e.r[k*e.N+n]
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("sample %d: responsibilities sum to %g", n, s)
		}
	}
	if e.nk[2] < cfg.MinCount {
		t.Errorf("re-seeded component has N_k = %g", e.nk[2])
	}
	total := 0.0
	for k := 0; k < e.K; k++ {
		total += e.nk[k]
	}
	if math.Abs(total-float64(e.N)) > 1e-9*float64(e.N) {
		t.Errorf("N_k sum to %g, want N = %d", total, e.N)
	}
	e.mStep(0)
	if err := e.p.Validate(); err != nil {
		t.Errorf("parameters after re-seeding: %v", err)
	}
}

// Large D: |Σ_k| underflows float64 (0.01^2000), the log-domain code does not.
func TestLargeDimensionLogDomain(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	p := RandomParams(2, 2000, 1, 1, rng)
	for i := range p.Sigma {
		p.Sigma[i] = 0.01
	}
	tt, _, y, _ := Sample(p, 60, rng)
	res, err := fit(tt, y, Config{K: 2, Lw: 1, Seed: 1, MaxIter: 10})
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(res.LogL) || math.IsInf(res.LogL, 0) {
		t.Fatalf("logL = %v", res.LogL)
	}
}

func TestFitRejectsBadInput(t *testing.T) {
	tt := mat.NewDense(10, 1, nil)
	y := mat.NewDense(9, 3, nil)
	if _, err := fit(tt, y, Config{K: 2}); err == nil {
		t.Error("mismatched rows accepted")
	}
	y = mat.NewDense(10, 3, nil)
	y.Set(3, 2, math.NaN())
	if _, err := fit(tt, y, Config{K: 2}); err == nil {
		t.Error("NaN feature accepted")
	}
	if _, err := fit(tt, mat.NewDense(10, 3, nil), Config{K: 6}); err == nil {
		t.Error("K = 6 with 10 samples accepted")
	}
}

// floorEigen floors the eigenvalues of Γ^t, and stays sane on a covariance
// that is zero up to rounding: the faces of one Pointing'04 pose share their
// labels exactly, and such a component's Γ^t came out with subnormal
// entries on which the eigensolver's reconstruction reached 1e120 (an EM on
// AFLW2000 k-fold then died inverting it).
func TestFloorEigenOnDegenerateCovariance(t *testing.T) {
	const n, floor = 6, 1e-3
	cases := map[string][]float64{
		// The covariance EM met (t = yaw, pitch, roll, dx, dy, ds): every
		// face at pitch −90°, yaw 0, roll 0, moved boxes. The old floor
		// reconstructed it with entries of 1e121.
		"pitch −90°": {
			2.5106864102796055e-276, 7.926136545460399e-276, 0, -1.9414532180502766e-277, -3.2622811458320976e-277, -1.0013121010672133e-276,
			7.926136545460399e-276, 3.552713678800501e-14, 0, 9.71445146547012e-17, -3.885780586188048e-16, -7.216449660063518e-16,
			0, 0, 0, 0, 0, 0,
			-1.9414532180502766e-277, 9.71445146547012e-17, 0, 0.7644677075026489, -0.13184727467755103, -0.013490904282648025,
			-3.2622811458320976e-277, -3.885780586188048e-16, 0, -0.13184727467755103, 1.0897267661445902, 0.11071970420195026,
			-1.0013121010672133e-276, -7.216449660063518e-16, 0, -0.013490904282648025, 0.11071970420195026, 0.658493033729706,
		},
		"subnormal": {
			0, 4.6e-153, 0, -1.8e-155, -3.0e-155, -9.2e-155,
			4.6e-153, 1e-300, 0, 9e-310, -3.5e-310, -6.6e-310,
			0, 0, 0, 4.3e-311, -2.2e-311, 0,
			-1.8e-155, 9e-310, 4.3e-311, 7e-311, -1.2e-311, -1.2e-312,
			-3.0e-155, -3.5e-310, -2.2e-311, -1.2e-311, 1e-310, 1e-311,
			-9.2e-155, -6.6e-310, 0, -1.2e-312, 1e-311, 6e-311,
		},
		"rank one": func() []float64 {
			a := make([]float64, n*n)
			x := []float64{0, 1, 0, 0.5, -0.2, 0.1}
			for i := range n {
				for j := range n {
					a[i*n+j] = x[i] * x[j]
				}
			}
			return a
		}(),
	}
	for name, a := range cases {
		g := append([]float64(nil), a...)
		floorEigen(g, n, floor)
		var c mat.Cholesky
		if !c.Factorize(mat.NewSymDense(n, append([]float64(nil), g...))) {
			t.Errorf("%s: floored matrix is not positive definite: %v", name, g)
			continue
		}
		var eig mat.EigenSym
		eig.Factorize(mat.NewSymDense(n, g), false)
		vals := eig.Values(nil)
		if vals[0] < floor*(1-1e-9) || vals[n-1] > 2 {
			t.Errorf("%s: eigenvalues %v, want within [%g, 2]", name, vals, floor)
		}
		var inv mat.SymDense
		if err := c.InverseTo(&inv); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
