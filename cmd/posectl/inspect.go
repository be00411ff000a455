package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
)

func runInspect(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the header as JSON")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("%w: want one model file, got %d arguments", errUsage, len(files))
	}
	path := files[0]
	m, err := gllim.ReadFile(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if *asJSON {
		p := m.Params
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"file": path, "bytes": st.Size(), "version": m.FileVersion(), "encoding": m.Encoding, "members": len(m.Members) + 1, "temperature": m.Temperature,
			"k": p.K, "d": p.D, "input_d": m.InputDim(), "lt": p.Lt, "lw": p.Lw, "covariance": p.Cov, "shared": p.Shared,
			"free_parameters": p.NumFree(), "outputs": m.Outputs, "features": m.Features,
			"calibration": m.Calibration, "conventions": m.Conventions, "training": m.Training,
		})
	}
	describe(stdout, path, st.Size(), m)
	return nil
}

// describe prints a model's header in words.
func describe(w io.Writer, path string, size int64, m *gllim.Model) {
	p := m.Params
	kind := "plain GLLiM (no latent part)"
	if p.Lw > 0 {
		kind = fmt.Sprintf("hybrid GLLiM with %d latent dimension(s)", p.Lw)
	}
	cov := "diagonal Σ_k"
	if p.Cov == gllim.Isotropic {
		cov = "isotropic Σ_k"
	}
	if p.Shared {
		cov += ", shared by all components"
	} else {
		cov += ", one per component"
	}
	members := len(m.Members) + 1
	fmt.Fprintf(w, "model       %s (%s), format version %d, %s weights, checksum ok\n", path, humanBytes(size), m.FileVersion(), encodingName(m.Encoding))
	fmt.Fprintf(w, "mixture     K = %d components, D = %d features → Lt = %d outputs; %s; %s\n", p.K, p.D, p.Lt, kind, cov)
	if m.Input != nil {
		fmt.Fprintf(w, "input       each face's %d feature values projected on %d principal directions of the training features before the mixture reads them\n", m.Input.In(), m.Input.P())
	}
	if members > 1 {
		fmt.Fprintf(w, "ensemble    %d models fitted from different seeds; predictions are their average\n", members)
	}
	if m.Temperature > 1 {
		fmt.Fprintf(w, "weights     the mixture's posterior weights tempered by T = %g\n", m.Temperature)
	}
	if xp, err := pose.ExpertOf(m); err == nil {
		answers := "every output"
		if xp.Outputs != nil {
			answers = strings.Join(xp.Outputs, ", ")
		}
		fmt.Fprintf(w, "expert      a profile expert: trained on faces with |yaw| ≥ %s mirrored to turn one way; answers (%s, weight %g) where its model finds |yaw| ≥ %g",
			m.Training.Settings[pose.ExpertProfile], answers, max(xp.Weight, 0), xp.Gate)
		if xp.ByDensity {
			fmt.Fprintf(w, ", or where it explains the features (or the mirrored ones) within %g nats of the model's log-density", xp.Margin)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "parameters  %d free (the BIC's count) per model, %d weights\n", p.NumFree(), members*(len(p.Pi)+len(p.C)+len(p.Gamma)+len(p.A)+len(p.B)+len(p.Sigma)))
	fmt.Fprintln(w, "outputs")
	for _, o := range m.Outputs {
		fmt.Fprintf(w, "  %-10s %-6s trained around %.3g, spread %.3g", o.Name, o.Unit, o.Mean, o.Scale)
		if o.StdScale > 0 {
			fmt.Fprintf(w, ", predictive σ ×%.3g (calibrated on held-out persons)", o.StdScale)
		}
		fmt.Fprintln(w)
	}
	describeFeatures(w, m.Features)
	describeBoxes(w, m)
	describeTraining(w, m.Training)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p.Pi {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	fmt.Fprintf(w, "weights     π_k from %.3g to %.3g\n", lo, hi)
}

// describeFeatures says what features the model reads.
func describeFeatures(w io.Writer, f gllim.FeatureRecipe) {
	fmt.Fprintf(w, "features    %s", orNone(f.Name))
	if f.Version != 0 {
		fmt.Fprintf(w, " v%d", f.Version)
	}
	var parts []string
	if f.Patch > 0 {
		parts = append(parts, fmt.Sprintf("%d×%d patch", f.Patch, f.Patch))
	}
	if f.Equalize {
		parts = append(parts, "histogram-equalised")
	}
	if len(f.Cells) > 0 {
		cs := make([]string, len(f.Cells))
		for i, c := range f.Cells {
			cs[i] = fmt.Sprint(c)
		}
		parts = append(parts, "cells of "+strings.Join(cs, ", ")+" px")
	}
	if f.Block > 0 {
		parts = append(parts, fmt.Sprintf("blocks of %d×%d cells", f.Block, f.Block))
	}
	if f.Bins > 0 {
		parts = append(parts, fmt.Sprintf("%d orientation bins", f.Bins))
	}
	if f.Norm != "" {
		parts = append(parts, f.Norm+" normalisation")
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
}

// describeBoxes says on what face boxes the model was trained.
func describeBoxes(w io.Writer, m *gllim.Model) {
	for _, c := range m.Conventions {
		fmt.Fprintf(w, "convention  %s: trained on its annotated squares moved by (%+.3f, %+.3f), size ×%.3f (from %d of %d faces detected)\n", c.Set, c.DX, c.DY, c.Scale, c.N, c.Faces)
	}
	if c := m.Calibration; c != nil && len(m.Conventions) > 0 && c.DX == 0 && c.DY == 0 && c.Scale == 1 {
		fmt.Fprintf(w, "calibration none: trained on %s boxes as they are\n", c.Detector)
	} else if c != nil {
		fmt.Fprintf(w, "calibration %s boxes: centre moved by (%+.3f, %+.3f) box sizes, size ×%.3f (learnt from %d detections)\n", c.Detector, c.DX, c.DY, c.Scale, c.N)
	} else {
		fmt.Fprintln(w, "calibration none")
	}
}

// describeTraining says how the model was trained.
func describeTraining(w io.Writer, t gllim.Training) {
	fmt.Fprintf(w, "training    %s", orNone(t.Tool))
	if t.Date != "" {
		fmt.Fprintf(w, " on %s", t.Date)
	}
	if t.N > 0 {
		fmt.Fprintf(w, ", %d samples", t.N)
	}
	if t.Iterations > 0 {
		fmt.Fprintf(w, ", %d EM iterations", t.Iterations)
	}
	fmt.Fprintln(w)
	if t.LogL != 0 || t.BIC != 0 {
		fmt.Fprintf(w, "            final log-likelihood %.6g, BIC %.6g\n", t.LogL, t.BIC)
	}
	for _, d := range t.Data {
		fmt.Fprintf(w, "  data      %s\n", d)
	}
	for _, k := range sortedKeys(t.Settings) {
		fmt.Fprintf(w, "  setting   %s = %s\n", k, t.Settings[k])
	}
}

func orNone(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func encodingName(e gllim.Encoding) string {
	switch e {
	case gllim.Half:
		return "half-precision (binary16, exact centres)"
	case gllim.Q8:
		return "8-bit (A as int8 on a whitened grid, Σ binary16, exact centres)"
	}
	return "float32"
}
