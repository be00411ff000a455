package yunet

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The network's 53 convolutions, in the order of libfacedetection's table
// (facedetectcnn-data.cpp, param_pConvInfo): a point-wise 1×1 convolution
// (Out×In weights) or a depth-wise 3×3 one (9×In weights, tap-major: tap
// 3·(dy+1)+(dx+1) then channel), each with Out biases; batch norm is
// folded into both. Layer 0 is the head convolution, whose 32 inputs are a
// 3×3 stride-2 window of a BGR picture (27 values and 5 zeros).
type Layer struct {
	In, Out   int
	Depthwise bool
}

// Arch is the layer shapes the forward pass (net.go) is written for; a
// weights file must match it exactly.
var Arch = func() [NumLayers]Layer {
	var a [NumLayers]Layer
	pw := func(in, out int) Layer { return Layer{In: in, Out: out} }
	dw := func(ch int) Layer { return Layer{In: ch, Out: ch, Depthwise: true} }
	a[0] = pw(32, 16)
	// Backbone: a point-wise then depth-wise pair (a "DP" unit) each.
	dp := []struct{ in, out int }{{16, 16}, {16, 16}, {16, 32}, {32, 32}, {32, 64},
		{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}}
	i := 1
	for _, u := range dp {
		a[i], a[i+1] = pw(u.in, u.out), dw(u.out)
		i += 2
	}
	// Neck: one DP unit per level (strides 8, 16, 32), 64 → 64.
	for ; i < clsLayer; i += 2 {
		a[i], a[i+1] = pw(64, 64), dw(64)
	}
	// Heads: class, box, objectness, 5 landmarks; one DP unit per level.
	for _, out := range []int{1, 4, 1, 10} {
		for range 3 {
			a[i], a[i+1] = pw(64, out), dw(out)
			i += 2
		}
	}
	return a
}()

// NumLayers is the number of convolutions.
const NumLayers = 53

// Weights are the network's parameters, one layer each (W and B as Arch
// says).
type Weights struct {
	Layers [NumLayers]LayerWeights
}

// LayerWeights are one convolution's weights and biases.
type LayerWeights struct {
	W, B []float32
}

// weightCount is the number of weights of a layer of shape l.
func (l Layer) weightCount() int {
	if l.Depthwise {
		return 9 * l.In
	}
	return l.In * l.Out
}

// Check reports the first layer whose weights do not have Arch's shape or
// hold a value that is not finite.
func (w *Weights) Check() error {
	for i, l := range Arch {
		lw := w.Layers[i]
		if len(lw.W) != l.weightCount() || len(lw.B) != l.Out {
			return fmt.Errorf("yunet: layer %d has %d weights and %d biases, want %d and %d", i, len(lw.W), len(lw.B), l.weightCount(), l.Out)
		}
		for _, v := range [][]float32{lw.W, lw.B} {
			for j, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return fmt.Errorf("yunet: layer %d: value %d is %v", i, j, x)
				}
			}
		}
	}
	return nil
}

// The weights file: magic, version, then per layer its In, Out and kind (0
// point-wise, 1 depth-wise) as uint32, then each layer's weights and
// biases as little-endian float32, then the CRC-32 (IEEE) of all that
// precedes it.
const (
	magic       = "POSEDCNN"
	fileVersion = 1
)

// MarshalBinary writes w in the weights file's format.
func (w *Weights) MarshalBinary() ([]byte, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(magic)
	put := func(v uint32) { _ = binary.Write(&b, binary.LittleEndian, v) }
	put(fileVersion)
	put(NumLayers)
	for _, l := range Arch {
		kind := uint32(0)
		if l.Depthwise {
			kind = 1
		}
		put(uint32(l.In))
		put(uint32(l.Out))
		put(kind)
	}
	for _, lw := range w.Layers {
		for _, v := range [][]float32{lw.W, lw.B} {
			for _, x := range v {
				put(math.Float32bits(x))
			}
		}
	}
	put(crc32.ChecksumIEEE(b.Bytes()))
	return b.Bytes(), nil
}

// ErrFormat is wrapped by every error of ParseWeights.
var ErrFormat = errors.New("yunet: not a weights file")

// ParseWeights reads a weights file, refusing one that is truncated,
// damaged (its checksum), of another version or for another network than
// Arch, or that holds a value that is not finite.
func ParseWeights(data []byte) (*Weights, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	header := len(magic) + 8 + 12*NumLayers
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, bad("no %q at the start", magic)
	}
	want := header + 4
	for _, l := range Arch {
		want += 4 * (l.weightCount() + l.Out)
	}
	if len(data) != want {
		return nil, bad("%d bytes, want %d", len(data), want)
	}
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(data[off:]) }
	if sum, got := crc32.ChecksumIEEE(data[:want-4]), u32(want-4); sum != got {
		return nil, bad("checksum %08x, the file says %08x: damaged", sum, got)
	}
	if v := u32(len(magic)); v != fileVersion {
		return nil, bad("version %d, this posed reads %d", v, fileVersion)
	}
	if n := u32(len(magic) + 4); n != NumLayers {
		return nil, bad("%d layers, want %d", n, NumLayers)
	}
	off := len(magic) + 8
	for i, l := range Arch {
		in, out, kind := u32(off), u32(off+4), u32(off+8)
		off += 12
		wantKind := uint32(0)
		if l.Depthwise {
			wantKind = 1
		}
		if in != uint32(l.In) || out != uint32(l.Out) || kind != wantKind {
			return nil, bad("layer %d is %d→%d kind %d, want %d→%d kind %d", i, in, out, kind, l.In, l.Out, wantKind)
		}
	}
	w := &Weights{}
	// One backing array for all the values: the file's size is checked.
	vals := make([]float32, (want-4-off)/4)
	for j := range vals {
		vals[j] = math.Float32frombits(u32(off + 4*j))
	}
	for i, l := range Arch {
		n := l.weightCount()
		w.Layers[i].W, vals = vals[:n:n], vals[n:]
		w.Layers[i].B, vals = vals[:l.Out:l.Out], vals[l.Out:]
	}
	if err := w.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return w, nil
}

//go:embed weights/yunet.bin
var embedded []byte

// Default returns the embedded weights: libfacedetection's, converted by
// `posectl yunet-import` (see weights/LICENSE).
func Default() *Weights {
	w, err := ParseWeights(embedded)
	if err != nil {
		panic(err) // the build embeds a file its tests read
	}
	return w
}
