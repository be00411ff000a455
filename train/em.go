// Package train fits hybrid GLLiM models by expectation-maximisation, in
// float64 (Deleforge, Forbes, Horaud 2015; Drouard et al. 2017, Appendix;
// docs/method.md §3). It is the offline half of posed: the daemon
// links only package infer/gllim.
//
// The work of one iteration is four dense matrix products over all
// components at once (two in the E-step, two in the M-step), each of about
// N·D·K·(L+1) multiply-adds; everything else is O(N·K·L²) or O(K·D·L²).
// No D×D matrix is ever formed: Gaussian densities with covariance
// Σ_k + A^w_k A^wᵀ_k use the Woodbury identity and the matrix determinant
// lemma.
package train

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/edgepose/posed/infer/gllim"
)

// Config sets up a fit. The zero value of a field means its default.
type Config struct {
	K  int // components (≥ 1)
	Lw int // latent dimensions (0: plain GLLiM)

	Cov    gllim.Covariance // constraint on Σ_k; default gllim.Diagonal
	Shared bool             // one Σ for every component

	MaxIter int     // EM iterations per start; default 100
	Tol     float64 // stop when the log-likelihood gain is below Tol·|logL|; default 1e-6
	Starts  int     // independent starts, the best log-likelihood is kept; default 1
	Seed    uint64  // seeds every random choice

	// VarFloor is the floor on σ_kd as a fraction of the data's variance in
	// dimension d (a bare absolute floor would depend on the features' scale).
	// Default 1e-3.
	VarFloor float64
	// GammaFloor is the floor on the eigenvalues of Γ^t_k, in standardised
	// units of t (variance 1). Default 1e-3.
	GammaFloor float64
	// Ridge is added to the t block of the L×L matrix solved for A_k. It
	// keeps A_k defined when a component's targets do not span R^Lt (a
	// component owning a single pose); like jittering the targets with
	// variance Ridge. Default 1e-6.
	Ridge float64
	// InitPCs is the number of principal components of y appended to the
	// standardised t for the k-means that initialises the responsibilities.
	InitPCs int
	// MinCount is the smallest Σ_n r_nk a component may keep; below it the
	// component is re-seeded by splitting the largest one. Default L+2.
	MinCount float64

	// Progress, when set, is called after every EM iteration.
	Progress func(Progress)
}

// Progress reports one EM iteration.
type Progress struct {
	Start, Starts int     // this start (from 0) and how many there are
	Iter          int     // iteration within the start, from 1
	LogL          float64 // log-likelihood before this iteration's M-step, natural units
	Reseeded      int     // components re-seeded in this iteration
	Elapsed       time.Duration
}

// Result is a fitted model.
type Result struct {
	// Params has t in standardised units (t − TMean)/TScale and y in the
	// units it was given in.
	Params       *gllim.Params
	TMean        []float64
	TScale       []float64
	LogL         float64   // final log-likelihood of (t, y), natural units of t
	BIC          float64   // −2·LogL + NumFree·log N
	Iterations   int       // iterations of the kept start
	History      []float64 // log-likelihood at each iteration of the kept start
	Reseeds      int       // components re-seeded during the kept start
	Start        int       // index of the kept start
	StartLogL    []float64 // final log-likelihood of every start
	N            int
	Elapsed      time.Duration
	NonMonotone  int // iterations (without re-seeding) whose logL fell by more than rounding
	ConvergedTol bool
}

// Model wraps the result as a gllim.Model with the given output names and
// units (one each per column of t).
func (r *Result) Model(names, units []string) *gllim.Model {
	outs := make([]gllim.Output, len(r.TMean))
	for i := range outs {
		outs[i] = gllim.Output{Mean: r.TMean[i], Scale: r.TScale[i]}
		if i < len(names) {
			outs[i].Name = names[i]
		}
		if i < len(units) {
			outs[i].Unit = units[i]
		}
	}
	return &gllim.Model{
		Params:  r.Params.Clone(),
		Outputs: outs,
		Training: gllim.Training{
			N: r.N, Iterations: r.Iterations, LogL: r.LogL, BIC: r.BIC,
		},
	}
}

// ErrData is returned for training data that cannot be fitted.
var ErrData = errors.New("train: unusable training data")

func (c Config) withDefaults() Config {
	if c.Cov == "" {
		c.Cov = gllim.Diagonal
	}
	if c.MaxIter == 0 {
		c.MaxIter = 100
	}
	if c.Tol == 0 {
		c.Tol = 1e-6
	}
	if c.Starts == 0 {
		c.Starts = 1
	}
	if c.VarFloor == 0 {
		c.VarFloor = 1e-3
	}
	if c.GammaFloor == 0 {
		c.GammaFloor = 1e-3
	}
	if c.Ridge == 0 {
		c.Ridge = 1e-6
	}
	return c
}

// fit runs EM for a hybrid GLLiM on N samples (a single model: the first
// of FitEnsemble's): t is N×Lt (observed outputs),
// y is N×D (features). Neither is modified.
func fit(t, y *mat.Dense, cfg Config) (*Result, error) {
	rs, err := FitEnsemble(t, y, cfg, 1)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// check validates a fit's data and settings and fills in the defaults.
func check(t, y *mat.Dense, cfg Config) (Config, error) {
	cfg = cfg.withDefaults()
	n, lt := t.Dims()
	ny, d := y.Dims()
	switch {
	case n != ny:
		return cfg, fmt.Errorf("%w: %d targets but %d feature vectors", ErrData, n, ny)
	case cfg.K < 1:
		return cfg, fmt.Errorf("train: K = %d: need at least one component", cfg.K)
	case cfg.Lw < 0:
		return cfg, fmt.Errorf("train: Lw = %d is negative", cfg.Lw)
	case cfg.Cov != gllim.Diagonal && cfg.Cov != gllim.Isotropic:
		return cfg, fmt.Errorf("train: covariance %q is not %q or %q", cfg.Cov, gllim.Diagonal, gllim.Isotropic)
	case cfg.InitPCs < 0 || cfg.InitPCs > d:
		return cfg, fmt.Errorf("train: InitPCs = %d not in [0, D=%d]", cfg.InitPCs, d)
	case n < 2*cfg.K:
		return cfg, fmt.Errorf("%w: %d samples for K = %d components (need at least 2 per component)", ErrData, n, cfg.K)
	}
	for _, m := range []struct {
		name string
		x    *mat.Dense
	}{{"t", t}, {"y", y}} {
		r, c := m.x.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				if v := m.x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
					return cfg, fmt.Errorf("%w: %s[%d][%d] is %v", ErrData, m.name, i, j, v)
				}
			}
		}
	}
	if cfg.MinCount == 0 {
		cfg.MinCount = float64(lt + cfg.Lw + 2)
	}
	return cfg, nil
}

// FitEnsemble fits members models to the same data from seeds cfg.Seed,
// cfg.Seed+1, …: EM's local optima differ by seed, and an ensemble averages
// them. The members share the standardised data and its squares (one
// N×D pair in memory, not one per member) and Fit's checks; their EM
// iterations cannot be shared without making them the same model. The
// first result is what Fit would return.
func FitEnsemble(t, y *mat.Dense, cfg Config, members int) ([]*Result, error) {
	if members < 1 {
		return nil, fmt.Errorf("train: %d ensemble members: want at least 1", members)
	}
	cfg, err := check(t, y, cfg)
	if err != nil {
		return nil, err
	}
	e := newEM(t, y, cfg)
	var out []*Result
	for i := 0; i < members; i++ {
		e.cfg.Seed = cfg.Seed + uint64(i)
		out = append(out, e.fit(time.Now()))
	}
	return out, nil
}

// fit runs every start from e.cfg.Seed and returns the best.
func (e *em) fit(start time.Time) *Result {
	cfg := e.cfg
	res := &Result{TMean: e.tMean, TScale: e.tScale, N: e.N, Start: -1}
	var best *gllim.Params
	for s := 0; s < cfg.Starts; s++ {
		run := e.run(s, start)
		res.StartLogL = append(res.StartLogL, run.logL)
		if best == nil || run.logL > res.LogL {
			best = e.p.Clone() // a copy: the next start overwrites e.p
			res.LogL, res.Iterations, res.History = run.logL, run.iter, run.history
			res.Reseeds, res.Start, res.NonMonotone, res.ConvergedTol = run.reseeds, s, run.nonMonotone, run.converged
		}
	}
	// Undo the centring of y: y = A x + b + yMean.
	for k := 0; k < best.K; k++ {
		bk := best.Bk(k)
		for j := range bk {
			bk[j] += e.yMean[j]
		}
	}
	res.Params = best
	res.BIC = -2*res.LogL + float64(best.NumFree())*math.Log(float64(e.N))
	res.Elapsed = time.Since(start)
	return res
}

// em holds the data and the buffers of one fit.
type em struct {
	cfg                  Config
	N, D, K, Lt, Lw, L   int
	t                    []float64  // N×Lt, standardised
	y, y2                *mat.Dense // N×D: centred features and their squares
	tMean, tScale, yMean []float64
	floor                []float64 // D: VarFloor · Var(y_d)
	logJac               float64   // Σ_l log TScale_l: standardised → natural log-likelihood

	p *gllim.Params // current parameters (standardised t, centred y)

	// E-step
	w, s   *mat.Dense // D×K(L+1): Σ_k⁻¹[A_k b_k];  D×K: Σ_k⁻¹ diagonals
	yw, ys *mat.Dense // N×K(L+1), N×K
	r      []float64  // K×N: log r_nk, then r_nk
	muW    []float64  // K×N×Lw: μ^w_nk
	sw     []float64  // K×Lw×Lw: S^w_k
	nk     []float64  // K: Σ_n r_nk

	// M-step
	q, rt  *mat.Dense // K(L+1)×N: [ρ ; ρ∘x]_k;  K×N: ρ
	pq, p2 *mat.Dense // K(L+1)×D, K×D
	res    []float64  // K×D: residual variances before the constraints
}

func newEM(t, y *mat.Dense, cfg Config) *em {
	n, lt := t.Dims()
	_, d := y.Dims()
	e := &em{cfg: cfg, N: n, D: d, K: cfg.K, Lt: lt, Lw: cfg.Lw, L: lt + cfg.Lw}
	e.tMean, e.tScale = make([]float64, lt), make([]float64, lt)
	e.t = make([]float64, n*lt)
	for j := 0; j < lt; j++ {
		mean, sq := 0.0, 0.0
		for i := 0; i < n; i++ {
			mean += t.At(i, j)
		}
		mean /= float64(n)
		for i := 0; i < n; i++ {
			v := t.At(i, j) - mean
			sq += v * v
		}
		sd := math.Sqrt(sq / float64(n))
		if sd == 0 {
			sd = 1
		}
		e.tMean[j], e.tScale[j] = mean, sd
		e.logJac += math.Log(sd)
		for i := 0; i < n; i++ {
			e.t[i*lt+j] = (t.At(i, j) - mean) / sd
		}
	}
	e.y = mat.DenseCopyOf(y)
	e.y2 = mat.NewDense(n, d, nil)
	e.yMean = make([]float64, d)
	e.floor = make([]float64, d)
	yr := e.y.RawMatrix()
	for i := 0; i < n; i++ {
		row := yr.Data[i*yr.Stride : i*yr.Stride+d]
		for j, v := range row {
			e.yMean[j] += v
		}
	}
	for j := range e.yMean {
		e.yMean[j] /= float64(n)
	}
	y2r := e.y2.RawMatrix()
	for i := 0; i < n; i++ {
		row := yr.Data[i*yr.Stride : i*yr.Stride+d]
		row2 := y2r.Data[i*y2r.Stride : i*y2r.Stride+d]
		for j := range row {
			row[j] -= e.yMean[j]
			row2[j] = row[j] * row[j]
			e.floor[j] += row2[j]
		}
	}
	for j := range e.floor {
		v := e.floor[j] / float64(n)
		if v == 0 {
			v = 1 // a constant feature: any positive floor will do
		}
		e.floor[j] = cfg.VarFloor * v
	}
	K, L := e.K, e.L
	e.p = gllim.NewParams(K, d, lt, cfg.Lw)
	e.p.Cov, e.p.Shared = cfg.Cov, cfg.Shared
	e.w = mat.NewDense(d, K*(L+1), nil)
	e.s = mat.NewDense(d, K, nil)
	e.yw = mat.NewDense(n, K*(L+1), nil)
	e.ys = mat.NewDense(n, K, nil)
	e.r = make([]float64, K*n)
	e.muW = make([]float64, K*n*cfg.Lw)
	e.sw = make([]float64, K*cfg.Lw*cfg.Lw)
	e.nk = make([]float64, K)
	e.q = mat.NewDense(K*(L+1), n, nil)
	e.rt = mat.NewDense(K, n, nil)
	e.pq = mat.NewDense(K*(L+1), d, nil)
	e.p2 = mat.NewDense(K, d, nil)
	e.res = make([]float64, K*d)
	return e
}

type runResult struct {
	logL        float64
	iter        int
	history     []float64
	reseeds     int
	nonMonotone int
	converged   bool
}

// run performs one start: initialisation, then EM until convergence or
// MaxIter. It leaves the fitted parameters in e.p.
func (e *em) run(s int, t0 time.Time) runResult {
	e.initialise(e.cfg.Seed + uint64(s)*0x9e3779b97f4a7c15)
	var out runResult
	prev := math.Inf(-1)
	for it := 1; it <= e.cfg.MaxIter; it++ {
		logL := e.eStep() - float64(e.N)*e.logJac
		reseeded := e.reseed()
		e.mStep(e.Lw)
		out.history = append(out.history, logL)
		out.iter, out.logL = it, logL
		out.reseeds += reseeded
		if e.cfg.Progress != nil {
			e.cfg.Progress(Progress{Start: s, Starts: e.cfg.Starts, Iter: it, LogL: logL, Reseeded: reseeded, Elapsed: time.Since(t0)})
		}
		// The first iteration has no predecessor to compare with (prev is
		// −Inf, and −Inf gains must not count as convergence).
		if it > 1 && !math.IsInf(prev, -1) {
			gain := logL - prev
			if gain < -1e-8*math.Abs(logL) {
				out.nonMonotone++
			}
			if reseeded == 0 && math.Abs(gain) < e.cfg.Tol*math.Abs(logL) {
				out.converged = true
				break
			}
		}
		prev = logL
		if reseeded > 0 {
			prev = math.Inf(-1)
		}
	}
	// One more E-step gives the log-likelihood of the parameters returned.
	out.logL = e.eStep() - float64(e.N)*e.logJac
	return out
}

// logLikelihood returns the log-likelihood of (t, y) under p, whose t is in
// the standardised units (t − tMean)/tScale, in natural units of t.
func logLikelihood(p *gllim.Params, tMean, tScale []float64, t, y *mat.Dense) float64 {
	cfg := Config{K: p.K, Lw: p.Lw, Cov: p.Cov, Shared: p.Shared}.withDefaults()
	e := newEM(t, y, cfg)
	n, lt := t.Dims()
	e.logJac = 0
	for j := 0; j < lt; j++ {
		e.tMean[j], e.tScale[j] = tMean[j], tScale[j]
		e.logJac += math.Log(tScale[j])
		for i := 0; i < n; i++ {
			e.t[i*lt+j] = (t.At(i, j) - tMean[j]) / tScale[j]
		}
	}
	e.p = p.Clone()
	for k := 0; k < p.K; k++ {
		bk := e.p.Bk(k)
		for j := range bk {
			bk[j] -= e.yMean[j]
		}
	}
	return e.eStep() - float64(n)*e.logJac
}
