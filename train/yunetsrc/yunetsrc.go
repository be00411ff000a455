// Package yunetsrc reads libfacedetection's trained weights from its C++
// source (facedetectcnn-data.cpp: one float array per layer and the table
// param_pConvInfo naming each layer's shape and arrays) into
// infer/yunet's Weights, checking every layer against yunet.Arch.
package yunetsrc

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/edgepose/posed/infer/yunet"
)

var (
	// float NAME[dims] = {values};
	arrayRe = regexp.MustCompile(`(?s)float\s+([A-Za-z_][A-Za-z0-9_]*)\s*\[([0-9*\s]+)\]\s*=\s*\{([^}]*)\}\s*;`)
	// ConvInfoStruct param_pConvInfo[N] = { {in, out, dw, pw, bn, W, B}, ... };
	tableRe = regexp.MustCompile(`(?s)ConvInfoStruct\s+param_pConvInfo\s*\[\s*(\d+)\s*\]\s*=\s*\{(.*)\}\s*;`)
	rowRe   = regexp.MustCompile(`\{\s*(\d+)\s*,\s*(\d+)\s*,\s*(true|false)\s*,\s*(true|false)\s*,\s*(true|false)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}`)
)

// Parse reads the weights from the text of facedetectcnn-data.cpp.
func Parse(src string) (*yunet.Weights, error) {
	arrays := map[string][]float32{}
	for _, m := range arrayRe.FindAllStringSubmatch(src, -1) {
		name := m[1]
		size := 1
		for _, d := range strings.Split(m[2], "*") {
			n, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("yunetsrc: array %s: bad dimension %q", name, d)
			}
			size *= n
		}
		var vals []float32
		for _, s := range strings.Split(m[3], ",") {
			s = strings.TrimSuffix(strings.TrimSpace(s), "f")
			if s == "" {
				continue
			}
			v, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return nil, fmt.Errorf("yunetsrc: array %s: value %d: %v", name, len(vals), err)
			}
			vals = append(vals, float32(v))
		}
		if len(vals) != size {
			return nil, fmt.Errorf("yunetsrc: array %s holds %d values, its declaration %d", name, len(vals), size)
		}
		if _, dup := arrays[name]; dup {
			return nil, fmt.Errorf("yunetsrc: array %s defined twice", name)
		}
		arrays[name] = vals
	}
	t := tableRe.FindStringSubmatch(src)
	if t == nil {
		return nil, fmt.Errorf("yunetsrc: no param_pConvInfo table")
	}
	rows := rowRe.FindAllStringSubmatch(t[2], -1)
	if n, _ := strconv.Atoi(t[1]); n != yunet.NumLayers || len(rows) != yunet.NumLayers {
		return nil, fmt.Errorf("yunetsrc: the table declares %s layers and lists %d, want %d", t[1], len(rows), yunet.NumLayers)
	}
	w := &yunet.Weights{}
	for i, r := range rows {
		in, _ := strconv.Atoi(r[1])
		out, _ := strconv.Atoi(r[2])
		dw, pw := r[3] == "true", r[4] == "true"
		want := yunet.Arch[i]
		if in != want.In || out != want.Out || dw != want.Depthwise || pw == dw {
			return nil, fmt.Errorf("yunetsrc: layer %d is %d→%d depthwise=%v pointwise=%v, posed's network has %d→%d depthwise=%v",
				i, in, out, dw, pw, want.In, want.Out, want.Depthwise)
		}
		wt, ok := arrays[r[6]]
		b, okb := arrays[r[7]]
		if !ok || !okb {
			return nil, fmt.Errorf("yunetsrc: layer %d names arrays %s and %s, not both defined", i, r[6], r[7])
		}
		w.Layers[i] = yunet.LayerWeights{W: wt, B: b}
	}
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}
