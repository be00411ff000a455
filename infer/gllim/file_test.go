package gllim_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
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
// single model (file version 1) and an ensemble (version 2).
func TestSaveLoadIdenticalPredictions(t *testing.T) {
	for _, members := range []int{1, 3} {
		m, rng := ensemble(t, members, 5, 120, 3, 2, 11)
		m.Training.Settings = map[string]string{"k": "5"}
		path := filepath.Join(t.TempDir(), "m.gllim")
		if err := gllim.WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
		back, err := gllim.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if back.Outputs[2] != m.Outputs[2] || back.Features.Name != "synthetic" || back.Training.Settings["k"] != "5" {
			t.Errorf("header did not round-trip: %+v", back)
		}
		d1, _ := os.ReadFile(path)
		if v := binary.LittleEndian.Uint32(d1[8:]); len(back.Members) != members-1 || v != uint32(min(members, 2)) {
			t.Errorf("%d members written: %d read back, file version %d", members, len(back.Members)+1, v)
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
					t.Fatalf("%d members, sample %d output %d: in memory %v, loaded %v", members, i, j, a.Mean, b.Mean)
				}
			}
			if a.LogDensity != b.LogDensity {
				t.Fatalf("%d members, sample %d: log p %v vs %v", members, i, a.LogDensity, b.LogDensity)
			}
		}
		// Writing the loaded model again gives the same bytes.
		d2, err := gllim.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d1, d2) {
			t.Errorf("%d members: re-encoding a loaded model changed its bytes", members)
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
		{"a member more in the header", edit(`"members":3`, `"members":4`), gllim.ErrDimension, "(4 member(s))"},
		{"a member less in the header", edit(`"members":3`, `"members":2`), gllim.ErrDimension, "(2 member(s))"},
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
		{"version 3", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[8:], 3)
			return reseal(b)
		}, gllim.ErrVersion},
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

// ensembleBytes is a small two-member ensemble's file (version 2).
func ensembleBytes(t testing.TB) []byte {
	m, _ := ensemble(t, 2, 3, 16, 2, 1, 7)
	data, err := gllim.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func FuzzParse(f *testing.F) {
	_, good := smallModelBytes(f)
	f.Add(good)
	f.Add(ensembleBytes(f))
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
// version is 1 or 2 by the low bit of the input's version byte.
func FuzzParseSealed(f *testing.F) {
	_, good := smallModelBytes(f)
	f.Add(good)
	f.Add(ensembleBytes(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 28 || len(data) > 1<<16 {
			return
		}
		b := append([]byte(nil), data...)
		copy(b, "POSEGLLM")
		binary.LittleEndian.PutUint32(b[8:], 1+uint32(data[8]&1))
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
