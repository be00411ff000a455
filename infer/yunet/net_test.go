package yunet

import (
	"bytes"
	"errors"
	"image"
	"math"
	"testing"

	"github.com/edgepose/posed/train/dataset"
	"github.com/edgepose/posed/train/dataset/datatest"
)

// blob64 is a feature map in float64: rows × cols cells of ch channels.
type blob64 struct {
	rows, cols, ch int
	v              []float64
}

func newBlob64(rows, cols, ch int) *blob64 {
	return &blob64{rows, cols, ch, make([]float64, rows*cols*ch)}
}

func (b *blob64) at(r, c, k int) float64 {
	if r < 0 || c < 0 || r >= b.rows || c >= b.cols {
		return 0
	}
	return b.v[(r*b.cols+c)*b.ch+k]
}

// The float64 reference: the network as libfacedetection's C++ runs it,
// written plainly from its description, on the full BGR input (the grey
// value three times) and the file's weights as they are (no folding, no
// transposition, no vector kernel).
func reference64(w *Weights, img *image.Gray) [3][4]*blob64 {
	W, H := img.Rect.Dx(), img.Rect.Dy()
	rows, cols := (H+31)/32*32/2, (W+31)/32*32/2
	// The 3×3 stride-2 windows as 32 channels: (tap, colour), 5 zeros.
	x := newBlob64(rows, cols, 32)
	for r := range rows {
		for c := range cols {
			for fy := -1; fy <= 1; fy++ {
				for fx := -1; fx <= 1; fx++ {
					sy, sx := 2*r+fy, 2*c+fx
					if sy < 0 || sx < 0 || sy >= H || sx >= W {
						continue
					}
					g := float64(img.GrayAt(img.Rect.Min.X+sx, img.Rect.Min.Y+sy).Y)
					for col := range 3 {
						x.v[(r*cols+c)*32+((fy+1)*3+fx+1)*3+col] = g
					}
				}
			}
		}
	}
	conv := func(in *blob64, i int, relu bool) *blob64 {
		l, lw := Arch[i], w.Layers[i]
		out := newBlob64(in.rows, in.cols, l.Out)
		for r := range in.rows {
			for c := range in.cols {
				for o := range l.Out {
					s := float64(lw.B[o])
					if l.Depthwise {
						for tap := range 9 {
							s += in.at(r+tap/3-1, c+tap%3-1, o) * float64(lw.W[tap*l.In+o])
						}
					} else {
						for k := range l.In {
							s += in.at(r, c, k) * float64(lw.W[o*l.In+k])
						}
					}
					if relu {
						s = math.Max(s, 0)
					}
					out.v[(r*in.cols+c)*l.Out+o] = s
				}
			}
		}
		return out
	}
	dp := func(in *blob64, i int, relu bool) *blob64 { return conv(conv(in, i, false), i+1, relu) }
	unit := func(in *blob64, i int) *blob64 { return dp(dp(in, i, true), i+2, true) }
	pool := func(in *blob64) *blob64 {
		out := newBlob64(in.rows/2, in.cols/2, in.ch)
		for r := range out.rows {
			for c := range out.cols {
				for k := range in.ch {
					out.v[(r*out.cols+c)*in.ch+k] = math.Max(math.Max(in.at(2*r, 2*c, k), in.at(2*r, 2*c+1, k)),
						math.Max(in.at(2*r+1, 2*c, k), in.at(2*r+1, 2*c+1, k)))
				}
			}
		}
		return out
	}
	upAdd := func(coarse, fine *blob64) *blob64 {
		out := newBlob64(fine.rows, fine.cols, fine.ch)
		for r := range fine.rows {
			for c := range fine.cols {
				for k := range fine.ch {
					out.v[(r*fine.cols+c)*fine.ch+k] = fine.at(r, c, k) + coarse.at(r/2, c/2, k)
				}
			}
		}
		return out
	}
	x = conv(x, 0, true)
	x = pool(dp(x, 1, true))
	x = unit(unit(x, 3), 7)
	fb1 := unit(pool(x), 11)
	fb2 := unit(pool(fb1), 15)
	fb3 := unit(pool(fb2), 19)
	fb3 = dp(fb3, 27, true)
	fb2 = dp(upAdd(fb3, fb2), 25, true)
	fb1 = dp(upAdd(fb2, fb1), 23, true)
	var out [3][4]*blob64
	for l, fb := range []*blob64{fb1, fb2, fb3} {
		for k, first := range []int{29, 35, 41, 47} {
			out[l][k] = dp(fb, first+2*l, false)
		}
	}
	return out
}

// TestForward64: every head output of every level, on a real face (an
// AFLW2000 photograph cut to an odd size), matches the float64 reference
// within float32's rounding over the network's depth.
func TestForward64(t *testing.T) {
	img, err := dataset.LoadGray(datatest.File(t, "aflw2000", "images", "image00004.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	crop := img.SubImage(image.Rect(100, 90, 100+221, 90+250)).(*image.Gray)
	want := reference64(Default(), crop)
	for _, vec := range []bool{false, true} {
		prev := useVectorKernels(vec)
		var buf Buffers
		New(Default()).Forward(&buf, crop, crop.Rect)
		useVectorKernels(prev)
		for l := range 3 {
			at := 0
			for k := range 4 {
				w := want[l][k]
				if len(buf.out[l]) != w.rows*w.cols*headChannels {
					t.Fatalf("level %d: %d values, want %d cells of %d", l, len(buf.out[l]), w.rows*w.cols, headChannels)
				}
				var scale float64
				for _, v := range w.v {
					scale = math.Max(scale, math.Abs(v))
				}
				for i, v := range w.v {
					cell, ch := i/w.ch, i%w.ch
					got := buf.out[l][cell*headChannels+at+ch]
					if d := math.Abs(float64(got) - v); d > 1e-4*scale+1e-5 {
						t.Fatalf("vector kernels %v, level %d head %d value %d: %g, float64 %g (scale %g)", vec, l, k, i, got, v, scale)
					}
				}
				at += w.ch
			}
		}
	}
}

// TestKernels: the vector kernels (where the CPU has them) and the Go ones
// agree with a float64 sum on every shape the network runs, with channel
// counts that are and are not multiples of the vector width.
func TestKernels(t *testing.T) {
	r := uint32(1)
	rnd := func() float32 { r = r*1664525 + 1013904223; return float32(int32(r>>8)%2000) / 1000 }
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rnd()
		}
		return v
	}
	for _, vec := range []bool{false, true} {
		prev := useVectorKernels(vec)
		for _, s := range [][2]int{{16, 16}, {16, 32}, {32, 64}, {64, 64}, {64, 1}, {64, 4}, {64, 10}, {3, 8}} {
			in, out, n := s[0], s[1], 37
			src, wt, b := fill(n*in), fill(in*out), fill(out)
			dst := make([]float32, n*out)
			relu := out != 16 // both ways, over the shapes
			pointwise(dst, src, in, out, wt, b, relu)
			for p := range n {
				for o := range out {
					want := float64(b[o])
					for c := range in {
						want += float64(src[p*in+c]) * float64(wt[c*out+o])
					}
					if relu {
						want = math.Max(want, 0)
					}
					if d := math.Abs(float64(dst[p*out+o]) - want); d > 1e-4*(1+math.Abs(want)) {
						t.Fatalf("vector %v, pointwise %d→%d, cell %d out %d: %g, float64 %g", vec, in, out, p, o, dst[p*out+o], want)
					}
				}
			}
		}
		// The vector kernel takes the border too, on copies of its cells
		// with zeros beside them: 72 channels are more than those copies
		// hold (maxSideChannels), and the last shape's rows are wider than
		// its row of zeros (zeroRow): the Go kernel takes those.
		for _, s := range [][3]int{{5, 7, 1}, {5, 7, 4}, {5, 7, 8}, {5, 7, 16}, {5, 7, 64}, {3, 4, 16}, {3, 3, 8}, {4, 5, maxSideChannels + 8}, {4, len(zeroRow)/64 + 2, 64}} {
			for _, relu := range []bool{false, true} {
				rows, cols, ch := s[0], s[1], s[2]
				src, w, b := fill(rows*cols*ch), fill(9*ch), fill(ch)
				dst := make([]float32, rows*cols*ch)
				depthwise(dst, src, rows, cols, ch, w, b, relu)
				for y := range rows {
					for x := range cols {
						for c := range ch {
							want := float64(b[c])
							for tap := range 9 {
								sy, sx := y+tap/3-1, x+tap%3-1
								if sy >= 0 && sx >= 0 && sy < rows && sx < cols {
									want += float64(src[(sy*cols+sx)*ch+c]) * float64(w[tap*ch+c])
								}
							}
							if relu {
								want = math.Max(want, 0)
							}
							if d := math.Abs(float64(dst[(y*cols+x)*ch+c]) - want); d > 1e-4*(1+math.Abs(want)) {
								t.Fatalf("vector %v, depthwise %d channels relu %v at (%d,%d,%d): %g, float64 %g", vec, ch, relu, y, x, c, dst[(y*cols+x)*ch+c], want)
							}
						}
					}
				}
			}
		}
		for _, ch := range []int{8, 16, 64, 4} {
			rows, cols := 6, 10
			src := fill(rows * cols * ch)
			dst := make([]float32, rows/2*cols/2*ch)
			maxPool(dst, src, rows, cols, ch)
			for y := range rows / 2 {
				for x := range cols / 2 {
					for c := range ch {
						want := math.Inf(-1)
						for _, d := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
							want = math.Max(want, float64(src[((2*y+d[0])*cols+2*x+d[1])*ch+c]))
						}
						if got := float64(dst[(y*cols/2+x)*ch+c]); got != want {
							t.Fatalf("vector %v, max pool %d channels at (%d,%d,%d): %g, want %g", vec, ch, y, x, c, got, want)
						}
					}
				}
			}
		}
		useVectorKernels(prev)
	}
}

// TestParseWeights: the embedded file reads back as it was written, and a
// truncated, damaged, foreign or non-finite file is refused with an error
// that says what is wrong.
func TestParseWeights(t *testing.T) {
	w, err := ParseWeights(embedded)
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.MarshalBinary()
	if err != nil || !bytes.Equal(again, embedded) {
		t.Fatalf("the weights do not write back as read (err %v)", err)
	}
	corrupt := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(embedded)) }
	nan := Default()
	nan.Layers[7].W[3] = float32(math.NaN())
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":     {nil, "no \"POSEDCNN\""},
		"truncated": {embedded[:len(embedded)/2], "bytes, want"},
		"flipped":   {corrupt(func(b []byte) []byte { b[5000] ^= 1; return b }), "damaged"},
		"a cascade": {corrupt(func(b []byte) []byte { copy(b, "pico\x00\x00\x00\x00"); return b }), "no \"POSEDCNN\""},
	} {
		_, err := ParseWeights(c.data)
		if err == nil || !errors.Is(err, ErrFormat) || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: err %v, want one saying %q", name, err, c.want)
		}
	}
	if _, err := nan.MarshalBinary(); err == nil {
		t.Error("a NaN weight was written")
	}
}

// FuzzParseWeights: no input makes the reader panic or accept what its
// checks refuse.
func FuzzParseWeights(f *testing.F) {
	f.Add(embedded)
	f.Add(embedded[:100])
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWeights(data)
		if err == nil {
			if err := w.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
