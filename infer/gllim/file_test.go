package gllim_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
)

func smallModelBytes(t testing.TB) (*gllim.Model, []byte) {
	t.Helper()
	m, _ := testModel(t, 3, 16, 2, 1, 7)
	m.Calibration = &gllim.BoxCalibration{Detector: "pigo", DX: 0.01, DY: 0.1, Scale: 0.78, N: 100}
	m.Training = gllim.Training{Tool: "test", Data: []string{"synthetic"}, N: 100, Date: "2026-11-22T00:00:00Z", LogL: -123.5, BIC: 300}
	data, err := gllim.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, data
}

// ensemble returns testModel with n−1 further members of the same size.
func ensemble(t testing.TB, n, k, d, lt, lw int, seed uint64) (*gllim.Model, *rand.Rand) {
	m, rng := testModel(t, k, d, lt, lw, seed)
	for i := 1; i < n; i++ {
		q, _ := testModel(t, k, d, lt, lw, seed+uint64(i)*1000)
		m.Members = append(m.Members, q.Params)
	}
	return m, rng
}

// Save → load gives identical predictions and the same description, for a
// single model and an ensemble, in the float32 encoding of version 3 and in
// the versions 1 and 2 that older daemons read.
func TestSaveLoadIdenticalPredictions(t *testing.T) {
	for _, c := range []struct {
		members, version int
	}{{1, 3}, {3, 3}, {1, 1}, {3, 2}} {
		m, rng := ensemble(t, c.members, 5, 120, 3, 2, 11)
		m.Training.Settings = map[string]string{"k": "5"}
		if c.version == 3 {
			m.Conventions = []gllim.BoxConvention{{Set: "synthetic", DX: 0.01, DY: -0.2, Scale: 1.3, N: 40, Faces: 50}}
		}
		d1, err := gllim.MarshalWith(m, gllim.MarshalOptions{Version: c.version})
		if err != nil {
			t.Fatal(err)
		}
		back, err := gllim.Parse(d1)
		if err != nil {
			t.Fatal(err)
		}
		if back.Outputs[2] != m.Outputs[2] || back.Features.Name != "synthetic" || back.Training.Settings["k"] != "5" || len(back.Conventions) != len(m.Conventions) {
			t.Errorf("header did not round-trip: %+v", back)
		}
		if v := binary.LittleEndian.Uint32(d1[8:]); len(back.Members) != c.members-1 || v != uint32(c.version) || back.FileVersion() != c.version {
			t.Errorf("%d members written as version %d: %d read back, file version %d", c.members, c.version, len(back.Members)+1, v)
		}
		f1, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		f2, err := gllim.NewForward(back)
		if err != nil {
			t.Fatal(err)
		}
		_, _, ys, _ := train.Sample(m.Params, 50, rng)
		p1, p2 := f1.NewPredictor(), f2.NewPredictor()
		a, b := f1.NewPrediction(), f2.NewPrediction()
		y := make([]float32, 120)
		for i := 0; i < 50; i++ {
			for j, v := range ys.RawRowView(i) {
				y[j] = float32(v)
			}
			p1.Predict(&a, y)
			p2.Predict(&b, y)
			for j := range a.Mean {
				if a.Mean[j] != b.Mean[j] || a.Cov[j] != b.Cov[j] {
					t.Fatalf("%d members, sample %d output %d: in memory %v, loaded %v", c.members, i, j, a.Mean, b.Mean)
				}
			}
			if a.LogDensity != b.LogDensity {
				t.Fatalf("%d members, sample %d: log p %v vs %v", c.members, i, a.LogDensity, b.LogDensity)
			}
		}
		// Writing the loaded model again gives the same bytes.
		d2, err := gllim.MarshalWith(back, gllim.MarshalOptions{Version: back.FileVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d1, d2) {
			t.Errorf("%d members, version %d: re-encoding a loaded model changed its bytes", c.members, c.version)
		}
	}
	m, _ := ensemble(t, 2, 3, 16, 2, 1, 7)
	for _, o := range []gllim.MarshalOptions{{Version: 1}, {Version: 2, Encoding: gllim.Half}, {Version: 2, Encoding: gllim.Q8}, {Version: 4}, {Encoding: "int4"}} {
		if _, err := gllim.MarshalWith(m, o); err == nil {
			t.Errorf("%+v: a two-member ensemble was written", o)
		}
	}
}

// encodeTwoMembers writes the two-member m in encoding enc, checks that
// the file is at most maxRatio of the float32 one's size, and reads it
// back.
func encodeTwoMembers(t *testing.T, m *gllim.Model, enc gllim.Encoding, maxRatio float64) ([]byte, *gllim.Model) {
	t.Helper()
	full, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: gllim.Float32})
	if err != nil {
		t.Fatal(err)
	}
	data, err := gllim.MarshalWith(m, gllim.MarshalOptions{Encoding: enc})
	if err != nil {
		t.Fatal(err)
	}
	if r := float64(len(data)) / float64(len(full)); r > maxRatio {
		t.Errorf("%s encoding is %.3f of the float32 file's size, want ≤ %g", enc, r, maxRatio)
	}
	back, err := gllim.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Encoding != enc || len(back.Members) != 1 {
		t.Errorf("read back as %q with %d members", back.Encoding, len(back.Members)+1)
	}
	return data, back
}

// worstMeanGap is the largest difference between the predicted means of
// m and back on n samples of m, in standardised units.
func worstMeanGap(t *testing.T, m, back *gllim.Model, rng *rand.Rand, n int) float64 {
	t.Helper()
	f1, err := gllim.NewForward(m)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := gllim.NewForward(back)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ys, _ := train.Sample(m.Params, n, rng)
	p1, p2 := f1.NewPredictor(), f2.NewPredictor()
	a, b := f1.NewPrediction(), f2.NewPrediction()
	y := make([]float32, m.Params.D)
	worst := 0.0
	for i := 0; i < n; i++ {
		for j, v := range ys.RawRowView(i) {
			y[j] = float32(v)
		}
		p1.Predict(&a, y)
		p2.Predict(&b, y)
		for j := range a.Mean {
			worst = math.Max(worst, math.Abs(a.Mean[j]-b.Mean[j])/m.Outputs[j].Scale)
		}
	}
	return worst
}

// sigmaWithinHalf fails unless member i's Σ read back (q) is within
// binary16's rounding of the written one (p).
func sigmaWithinHalf(t *testing.T, i int, p, q *gllim.Params) {
	t.Helper()
	for j := range p.Sigma {
		if math.Abs(q.Sigma[j]-p.Sigma[j]) > 1e-3*p.Sigma[j] {
			t.Fatalf("member %d Σ[%d] = %g read back as %g", i, j, p.Sigma[j], q.Sigma[j])
		}
	}
}

// The compact encoding halves the file and keeps predictions within a
// small fraction of the float32 file's: its components' centres are exact,
// A and Σ are binary16 with a scale per component (≤ 2⁻¹¹ relative). Here
// on samples of the model itself; models/default.gllim is checked on real
// faces in package pose.
func TestHalfEncoding(t *testing.T) {
	m, rng := ensemble(t, 2, 5, 300, 3, 2, 13)
	// Exact centres (D float32) + A and Σ as halves (D·L + D) + scales,
	// against D·L + 2D float32: 16/28 of the weights for L = 5.
	m.Encoding = gllim.Half
	half, back := encodeTwoMembers(t, m, gllim.Half, 0.58)
	// Every weight within half's rounding of its value.
	for i, q := range back.Ensemble() {
		p := m.Ensemble()[i]
		for j := range p.A {
			if math.Abs(q.A[j]-p.A[j]) > 1e-3*math.Abs(p.A[j])+1e-9 {
				t.Fatalf("member %d A[%d] = %g read back as %g", i, j, p.A[j], q.A[j])
			}
		}
		sigmaWithinHalf(t, i, p, q)
	}
	worst := worstMeanGap(t, m, back, rng, 200)
	t.Logf("half vs float32: worst difference %.2g standardised units", worst)
	if worst > 2e-3 {
		t.Errorf("half-encoded model differs by %.3g standardised units, want ≤ 2e-3", worst)
	}
	// Re-encoding the loaded model gives the same bytes.
	if again, err := gllim.Marshal(back); err != nil || !bytes.Equal(again, half) {
		t.Errorf("re-encoding a loaded half model: %v, same bytes %v", err, bytes.Equal(again, half))
	}
	// A truncated compact file says so.
	if _, err := gllim.Parse(half[:len(half)-3]); !errors.Is(err, gllim.ErrTruncated) {
		t.Errorf("truncated half file: %v", err)
	}
}

// The q8 encoding stores A as int8 on a grid of each column's whitened
// values (A_k[d,j]/√Σ_k[d]): a third of the float32 file, every weight
// within half a step of its value, predictions near the float32 file's,
// and a loaded file written again gives the same bytes. The bound on real
// faces is checked in package headpose (EncodingError).
func TestQ8Encoding(t *testing.T) {
	m, rng := ensemble(t, 2, 5, 300, 3, 2, 13)
	// Centres (4 bytes) + Σ (2) + A (L = 5 bytes) per feature against
	// 4·(L + 2) for float32: 11/28 of the weights.
	q8, back := encodeTwoMembers(t, m, gllim.Q8, 0.41)
	// Each whitened weight within half a grid step (plus binary16's
	// rounding) of its value; the step is at most 1/63.75 of its column's
	// largest whitened value.
	for i, q := range back.Ensemble() {
		p := m.Ensemble()[i]
		l := p.L()
		for k := 0; k < p.K; k++ {
			a, qa, sig := p.Ak(k), q.Ak(k), q.SigmaK(k)
			for j := 0; j < l; j++ {
				big := 0.0
				for d := 0; d < p.D; d++ {
					big = math.Max(big, math.Abs(a[d*l+j])/math.Sqrt(sig[d]))
				}
				for d := 0; d < p.D; d++ {
					r := math.Sqrt(sig[d])
					if e := math.Abs(qa[d*l+j]-a[d*l+j]) / r; e > big/63.75/2*1.01+1e-3*math.Abs(a[d*l+j])/r {
						t.Fatalf("member %d component %d A[%d,%d] = %g read back as %g: %.3g whitened, column's largest %.3g", i, k, d, j, a[d*l+j], qa[d*l+j], e, big)
					}
				}
			}
		}
		sigmaWithinHalf(t, i, p, q)
	}
	worst := worstMeanGap(t, m, back, rng, 200)
	t.Logf("q8 vs float32: worst difference %.2g standardised units", worst)
	if worst > 2e-2 {
		t.Errorf("q8-encoded model differs by %.3g standardised units, want ≤ 2e-2", worst)
	}
	// Re-encoding the loaded model gives the same bytes.
	if again, err := gllim.MarshalWith(back, gllim.MarshalOptions{Encoding: gllim.Q8}); err != nil || !bytes.Equal(again, q8) {
		t.Errorf("re-encoding a loaded q8 model: %v, same bytes %v", err, bytes.Equal(again, q8))
	}
	if _, err := gllim.Parse(q8[:len(q8)-3]); !errors.Is(err, gllim.ErrTruncated) {
		t.Errorf("truncated q8 file: %v", err)
	}
	// A scale that is not finite gives weights Validate refuses.
	hlen := int(binary.LittleEndian.Uint32(q8[20:]))
	p := m.Params
	l := p.L()
	at := 24 + hlen + 4*(p.K+p.K*p.Lt+p.K*p.Lt*p.Lt) + 4*p.K*p.D + 4*p.K + 2*p.K*p.D
	bad := append([]byte(nil), q8...)
	binary.LittleEndian.PutUint32(bad[at+4*l:], math.Float32bits(float32(math.Inf(1))))
	if _, err := gllim.Parse(reseal(bad)); !errors.Is(err, gllim.ErrInvalid) {
		t.Errorf("q8 file with an infinite scale: %v, want ErrInvalid", err)
	}
}

// A small file whose header claims a huge model is refused before anything
// of the claimed size is allocated: K=4096, D=2²⁰ would be 34 GB of
// float64 weights.
func TestParseHugeClaimsAllocateNothing(t *testing.T) {
	_, good := smallModelBytes(t)
	hlen := int(binary.LittleEndian.Uint32(good[20:]))
	hdr := string(good[24 : 24+hlen])
	for _, c := range []struct{ from, to string }{
		{`"k":3,"d":16`, `"k":4096,"d":1048576`},
		{`"members":1`, `"members":64`},
		{`"k":3,"d":16,"lt":2,"lw":1`, `"k":16384,"d":1048576,"lt":2,"lw":62`},
	} {
		h := strings.Replace(hdr, c.from, c.to, 1)
		if h == hdr {
			t.Fatalf("header %s has no %s", hdr, c.from)
		}
		b := append(append(append([]byte(nil), good[:24]...), h...), good[24+hlen:]...)
		binary.LittleEndian.PutUint32(b[20:], uint32(len(h)))
		binary.LittleEndian.PutUint64(b[12:], uint64(len(b)))
		b = reseal(b)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := gllim.Parse(b)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, gllim.ErrDimension) {
			t.Errorf("%s: %v, want a dimension error", c.to, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: parsing allocated %d bytes", c.to, grew)
		}
	}
}

// An ensemble file whose header and weights disagree on the members, or
// whose members differ in size, is refused with the reason.
func TestParseEnsembleErrors(t *testing.T) {
	m, _ := ensemble(t, 3, 3, 16, 2, 1, 7)
	good, err := gllim.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	hlen := int(binary.LittleEndian.Uint32(good[20:]))
	edit := func(from, to string) []byte {
		b := append([]byte(nil), good...)
		h := bytes.Replace(b[24:24+hlen], []byte(from), []byte(to), 1)
		copy(b[24:], h)
		return reseal(b)
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
		says string
	}{
		{"a member more in the header", edit(`"members":3`, `"members":4`), gllim.ErrDimension, "(4 member(s)"},
		{"a member less in the header", edit(`"members":3`, `"members":2`), gllim.ErrDimension, "(2 member(s)"},
		{"version 1 with members", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 1)
			return reseal(b)
		}(), gllim.ErrCorrupt, "version-1 file has no ensemble"},
		{"truncated last member", good[:len(good)-500], gllim.ErrTruncated, "truncated"},
	} {
		_, err := gllim.Parse(c.data)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	// Members of another size cannot be written.
	q, _ := testModel(t, 4, 16, 2, 1, 8)
	m.Members[1] = q.Params
	if _, err := gllim.Marshal(m); err == nil || !strings.Contains(err.Error(), "ensemble member 3 is K=4") {
		t.Errorf("mismatched member: %v", err)
	}
}

// reseal rewrites the checksum so that a deliberate edit reaches the checks
// behind it.
func reseal(b []byte) []byte {
	n := len(b)
	binary.LittleEndian.PutUint32(b[n-4:], crc32.Checksum(b[:n-4], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestParseErrors(t *testing.T) {
	_, good := smallModelBytes(t)
	hlen := int(binary.LittleEndian.Uint32(good[20:]))
	cases := []struct {
		name string
		data func() []byte
		want error
	}{
		{"empty", func() []byte { return nil }, gllim.ErrTruncated},
		{"png", func() []byte { return []byte("\x89PNG\r\n\x1a\n0000000000000000000000") }, gllim.ErrNotModel},
		{"truncated prefix", func() []byte { return good[:15] }, gllim.ErrTruncated},
		{"truncated header", func() []byte { return good[:30] }, gllim.ErrTruncated},
		{"truncated weights", func() []byte { return good[:len(good)-100] }, gllim.ErrTruncated},
		{"missing checksum", func() []byte { return good[:len(good)-1] }, gllim.ErrTruncated},
		{"trailing bytes", func() []byte { return append(append([]byte(nil), good...), 0) }, gllim.ErrCorrupt},
		{"bit flip in weights", func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)-40] ^= 0x10
			return b
		}, gllim.ErrCorrupt},
		{"bit flip in header", func() []byte {
			b := append([]byte(nil), good...)
			b[30] ^= 0x01
			return b
		}, gllim.ErrCorrupt},
		{"version 5", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 5)
			return reseal(b)
		}, gllim.ErrVersion},
		{"version 4 without its input projection", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 4)
			return reseal(b)
		}, gllim.ErrCorrupt},
		{"version 1 with a version-3 header", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 1)
			return reseal(b)
		}, gllim.ErrCorrupt},
		{"unknown encoding", func() []byte {
			b := append([]byte(nil), good...)
			h := bytes.Replace(b[24:24+hlen], []byte(`"float32"`), []byte(`"float33"`), 1)
			copy(b[24:], h)
			return reseal(b)
		}, gllim.ErrCorrupt},
		{"version 2 without members", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 2)
			return reseal(b)
		}, gllim.ErrDimension},
		{"header says D=17", func() []byte {
			b := append([]byte(nil), good...)
			h := bytes.Replace(b[24:24+hlen], []byte(`"d":16`), []byte(`"d":17`), 1)
			copy(b[24:], h)
			return reseal(b)
		}, gllim.ErrDimension},
		{"header says K=0", func() []byte {
			b := append([]byte(nil), good...)
			h := bytes.Replace(b[24:24+hlen], []byte(`"k":3`), []byte(`"k":0`), 1)
			copy(b[24:], h)
			return reseal(b)
		}, gllim.ErrDimension},
		{"unknown header field", func() []byte {
			b := append([]byte(nil), good...)
			h := bytes.Replace(b[24:24+hlen], []byte(`"shared"`), []byte(`"sharex"`), 1)
			copy(b[24:], h)
			return reseal(b)
		}, gllim.ErrCorrupt},
		{"negative variance", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[len(b)-8:], 0xbf800000) // −1.0f, the last σ
			return reseal(b)
		}, gllim.ErrInvalid},
	}
	for _, c := range cases {
		_, err := gllim.Parse(c.data())
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
	// Every truncation is reported as one.
	for n := 0; n < len(good); n += 7 {
		if _, err := gllim.Parse(good[:n]); !errors.Is(err, gllim.ErrTruncated) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(good), err)
		}
	}
}

func TestReadFileNamesFile(t *testing.T) {
	_, good := smallModelBytes(t)
	path := filepath.Join(t.TempDir(), "cut.gllim")
	if err := os.WriteFile(path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gllim.ReadFile(path)
	if !errors.Is(err, gllim.ErrTruncated) || !bytes.Contains([]byte(err.Error()), []byte("cut.gllim")) {
		t.Errorf("error %q does not name the file and say it is truncated", err)
	}
}

// A failed write leaves the previous model in place.
func TestWriteFileKeepsOldOnFailure(t *testing.T) {
	m, good := smallModelBytes(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gllim")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := *m
	bad.Outputs = nil // invalid: fails before anything is written
	if err := gllim.WriteFile(path, &bad); err == nil {
		t.Fatal("invalid model written")
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, good) {
		t.Error("failed write changed the existing file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// seedFiles are small model files of every version and encoding.
func seedFiles(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range []struct {
		members int
		o       gllim.MarshalOptions
	}{{1, gllim.MarshalOptions{}}, {2, gllim.MarshalOptions{}}, {2, gllim.MarshalOptions{Encoding: gllim.Half}},
		{2, gllim.MarshalOptions{Encoding: gllim.Q8}}, {1, gllim.MarshalOptions{Version: 1}}, {2, gllim.MarshalOptions{Version: 2}}} {
		m, _ := ensemble(t, c.members, 3, 16, 2, 1, 7)
		data, err := gllim.MarshalWith(m, c.o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func FuzzParse(f *testing.F) {
	_, good := smallModelBytes(f)
	for _, s := range seedFiles(f) {
		f.Add(s)
	}
	f.Add(good[:len(good)/2])
	f.Add(good[:30])
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		m, err := gllim.Parse(data)
		if err != nil {
			if m != nil {
				t.Fatal("model returned with an error")
			}
			return
		}
		// Anything that parses must be usable.
		if _, err := gllim.NewForward(m); err != nil {
			t.Fatalf("parsed model has no forward model: %v", err)
		}
	})
}

// FuzzParseSealed fixes the length and checksum of each input before parsing,
// so the fuzzer reaches the header and dimension checks behind them. The
// version is 1, 2 or 3 by the input's version byte. Seeds include headers
// that claim huge sizes and member counts.
func FuzzParseSealed(f *testing.F) {
	for _, s := range seedFiles(f) {
		f.Add(s)
		hlen := int(binary.LittleEndian.Uint32(s[20:]))
		for _, huge := range [][2]string{{`"k":3,"d":16`, `"k":4096,"d":1048576`}, {`"members":2`, `"members":64`}, {`"lw":1`, `"lw":62`}} {
			h := strings.Replace(string(s[24:24+hlen]), huge[0], huge[1], 1)
			b := append(append(append([]byte(nil), s[:24]...), h...), s[24+hlen:]...)
			binary.LittleEndian.PutUint32(b[20:], uint32(len(h)))
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 28 || len(data) > 1<<16 {
			return
		}
		b := append([]byte(nil), data...)
		copy(b, "POSEGLLM")
		binary.LittleEndian.PutUint32(b[8:], 1+uint32(data[8]%3))
		binary.LittleEndian.PutUint64(b[12:], uint64(len(b)))
		m, err := gllim.Parse(reseal(b))
		if err != nil {
			return
		}
		if _, err := gllim.NewForward(m); err != nil {
			t.Fatalf("parsed model has no forward model: %v", err)
		}
	})
}

// A calibrated uncertainty survives the file; a negative one is refused.
func TestStdScaleRoundTripAndValidation(t *testing.T) {
	m, _ := smallModelBytes(t)
	m.Outputs[0].StdScale = 6.5
	data, err := gllim.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := gllim.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Outputs[0].Uncertainty(); got != 6.5 {
		t.Errorf("std scale read back as %g", got)
	}
	if got := back.Outputs[1].Uncertainty(); got != 1 {
		t.Errorf("an uncalibrated output's factor is %g, want 1", got)
	}
	m.Outputs[0].StdScale = -1
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "std scale") {
		t.Errorf("negative std scale: %v", err)
	}
}

// A model's description keeps what callers read after the forward model
// is built — outputs, temperature, calibration, each member's sizes — and
// none of the weights, so that they can be collected; the model itself is
// left whole.
func TestDescriptionDropsWeights(t *testing.T) {
	m, _ := ensemble(t, 3, 5, 40, 3, 2, 21)
	m.Temperature = 8
	m.Calibration = &gllim.BoxCalibration{Detector: "pigo", Scale: 1.1, N: 3}
	d := m.Description()
	if len(d.Members) != 2 || d.Params.K != 5 || d.Params.D != 40 || d.Params.Lt != 3 || d.Params.Lw != 2 || d.Members[1].K != 5 {
		t.Errorf("description's sizes: %+v, %d further members", d.Params, len(d.Members))
	}
	if d.Temperature != 8 || d.Calibration != m.Calibration || len(d.Outputs) != 3 || d.Outputs[1] != m.Outputs[1] {
		t.Errorf("description lost the model's metadata: %+v", d)
	}
	for i, p := range d.Ensemble() {
		if p.A != nil || p.B != nil || p.Sigma != nil || p.Pi != nil || p.C != nil || p.Gamma != nil {
			t.Errorf("member %d of the description still holds weights", i+1)
		}
	}
	if err := m.Validate(); err != nil || len(m.Params.A) != 5*40*5 {
		t.Errorf("the model was changed: %v, %d values of A", err, len(m.Params.A))
	}
}

// ReadFile opens through regular.Open (whose test covers a FIFO, which
// would hang posed): a folder in a model's place is refused, named.
func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := gllim.ReadFile(dir); err == nil || !strings.Contains(err.Error(), dir+" is not a regular file (a directory)") {
		t.Errorf("a folder: %v", err)
	}
}
