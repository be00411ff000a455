package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// The K-sweep plot is well-formed SVG with one line per series.
func TestSweepSVG(t *testing.T) {
	var b bytes.Buffer
	writeSweepSVG(&b, []float64{1, 5, 10, 50}, []float64{-1e6, -2e6, -2.5e6, -2.4e6},
		map[string][]float64{"yaw": {20, 12, 10, 8}, "pitch": {18, 11, 9, 8.5}})
	dec := xml.NewDecoder(&b)
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
			for _, a := range se.Attr {
				if a.Name.Local == "points" && strings.Count(a.Value, ",") != 4 {
					t.Errorf("polyline with points %q, want 4", a.Value)
				}
			}
		}
	}
	if lines != 3 {
		t.Errorf("%d polylines, want 3 (BIC, yaw, pitch)", lines)
	}
}
