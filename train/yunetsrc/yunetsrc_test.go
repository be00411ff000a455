package yunetsrc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgepose/posed/infer/yunet"
	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

func source(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("POSED_LIBFACEDETECTION")
	if dir == "" {
		dir = filepath.Join(dataset.Root(), "..", "models", "libfacedetection")
	}
	b, err := os.ReadFile(filepath.Join(dir, "facedetectcnn-data.cpp"))
	if err != nil {
		datatest.Missing(t, "libfacedetection's source is not there (set POSED_LIBFACEDETECTION): %v", err)
	}
	return string(b)
}

// TestEmbeddedIsTheSource: the weights posed embeds are libfacedetection's,
// value for value.
func TestEmbeddedIsTheSource(t *testing.T) {
	w, err := Parse(source(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, err := yunet.Default().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("infer/yunet/weights/yunet.bin is not the conversion of facedetectcnn-data.cpp: run posectl yunet-import")
	}
}

// TestParseRefuses: a source that does not describe posed's network is
// refused, naming what is wrong.
func TestParseRefuses(t *testing.T) {
	src := source(t)
	for name, c := range map[string]struct{ src, want string }{
		"no table":      {src[:strings.Index(src, "ConvInfoStruct")], "no param_pConvInfo"},
		"short array":   {strings.Replace(src, "{0.00122f,", "{", 1), "holds 511 values, its declaration 512"},
		"other shape":   {strings.Replace(src, "{64, 1, false, true, false, bbox_head__multi_level_cls__0_pw", "{64, 2, false, true, false, bbox_head__multi_level_cls__0_pw", 1), "layer 29 is 64→2"},
		"missing array": {strings.Replace(src, "neck__lateral_convs__0_pw_bias}", "nowhere}", 1), "layer 23 names arrays"},
		"bad value":     {strings.Replace(src, "{0.00122f,", "{0.00x22f,", 1), "value 0"},
	} {
		if _, err := Parse(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, c.want)
		}
	}
}
