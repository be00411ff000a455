package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/train"
)

func writeModel(t *testing.T) string {
	t.Helper()
	p := train.RandomParams(3, 40, 2, 1, rand.New(rand.NewPCG(1, 2)))
	m := &gllim.Model{
		Params:   p,
		Outputs:  []gllim.Output{{Name: "yaw", Unit: "deg", Mean: 1, Scale: 40}, {Name: "pitch", Unit: "deg", Mean: -2, Scale: 30}},
		Features: gllim.FeatureRecipe{Name: "phog", Version: 1, Patch: 64, Cells: []int{32, 16, 8}, Block: 2, Bins: 8, Equalize: true, Norm: "L2-Hys"},
		Training: gllim.Training{Tool: "posectl test", N: 500, Iterations: 12, LogL: -1234.5, BIC: 4321, Settings: map[string]string{"k": "3"}},
	}
	path := filepath.Join(t.TempDir(), "m.gllim")
	if err := gllim.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectDescribesModel(t *testing.T) {
	path := writeModel(t)
	var out bytes.Buffer
	if err := runInspect([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"K = 3 components", "D = 40 features", "Lt = 2 outputs", "1 latent dimension", "yaw", "pitch", "phog v1", "cells of 32, 16, 8 px", "12 EM iterations", "k = 3", "checksum ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if err := runInspect([]string{"-json", path}, &out); err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(out.Bytes(), &h); err != nil {
		t.Fatalf("-json output is not JSON: %v", err)
	}
	if h["k"] != 3.0 || h["d"] != 40.0 {
		t.Errorf("-json: k=%v d=%v", h["k"], h["d"])
	}
}

func TestInspectTruncatedSaysSo(t *testing.T) {
	path := writeModel(t)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	err := runInspect([]string{path}, &bytes.Buffer{})
	if !errors.Is(err, gllim.ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v: want a truncation error naming %s", err, path)
	}
	if err := runInspect(nil, &bytes.Buffer{}); !errors.Is(err, errUsage) {
		t.Errorf("no argument: %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// What posectl inspect says of the shipped model, as a user reads it
// (retraining the model changes it: go test -update rewrites the file).
func TestInspectDefaultGolden(t *testing.T) {
	var out bytes.Buffer
	if err := runInspect([]string{filepath.Join("..", "..", "models", "default.gllim")}, &out); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "inspect-default.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("posectl inspect models/default.gllim differs from %s (go test -update rewrites it if the change is meant):\n%s", path, out.String())
	}
}
