package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Rows drawn along known directions with known spreads give those
// directions back, largest spread first, orthonormal, each signed by its
// largest component; the mean is the rows' mean; ProjectRows is
// Projection.Apply row by row.
func TestPrincipalProjection(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d = 4000, 12
	// Three directions: e0+e1 (σ 5), 0.8 e3 − 0.6 e2 (σ 3), −e5 (σ 2);
	// noise σ 0.1.
	dirs := [][]float64{make([]float64, d), make([]float64, d), make([]float64, d)}
	dirs[0][0], dirs[0][1] = 1/math.Sqrt2, 1/math.Sqrt2
	dirs[1][2], dirs[1][3] = -0.6, 0.8 // its largest component, e3's, is positive
	dirs[2][5] = -1                    // signed back to +e5
	spread := []float64{5, 3, 2}
	mean := make([]float64, d)
	for j := range mean {
		mean[j] = float64(j) - 4
	}
	y := mat.NewDense(n, d, nil)
	for r := range n {
		row := y.RawRowView(r)
		copy(row, mean)
		for k, u := range dirs {
			a := spread[k] * rng.NormFloat64()
			for j := range row {
				row[j] += a * u[j]
			}
		}
		for j := range row {
			row[j] += 0.1 * rng.NormFloat64()
		}
	}
	pr, err := PrincipalProjection(y, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{dirs[0], dirs[1], make([]float64, d)}
	want[2][5] = 1
	for i := range 3 {
		w := pr.Basis[i*d : (i+1)*d]
		for j := range d {
			if math.Abs(w[j]-want[i][j]) > 0.02 {
				t.Fatalf("direction %d: %v, want %v", i, w, want[i])
			}
		}
		for k := range 3 {
			dot := 0.0
			for j := range d {
				dot += w[j] * pr.Basis[k*d+j]
			}
			if e := map[bool]float64{true: 1, false: 0}[i == k]; math.Abs(dot-e) > 1e-9 {
				t.Errorf("directions %d·%d = %g", i, k, dot)
			}
		}
	}
	for j := range d {
		if math.Abs(pr.Mean[j]-mean[j]) > 0.3 {
			t.Errorf("mean %d: %g, want %g", j, pr.Mean[j], mean[j])
		}
	}
	z := ProjectRows(y, pr)
	for r := 0; r < n; r += 97 {
		ref := pr.Apply(y.RawRowView(r))
		for i, v := range ref {
			if math.Abs(z.At(r, i)-v) > 1e-9 {
				t.Fatalf("row %d, direction %d: %g, Apply %g", r, i, z.At(r, i), v)
			}
		}
	}
	for _, p := range []int{0, d + 1} {
		if _, err := PrincipalProjection(y, p); err == nil {
			t.Errorf("%d directions of %d values accepted", p, d)
		}
	}
}
