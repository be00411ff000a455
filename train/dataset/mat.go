package dataset

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// A minimal reader of MATLAB level-5 MAT files: numeric matrices, plain or in
// compressed (zlib) elements, as AFLW2000-3D ships its labels. Other classes
// (cells, structs, sparse, complex) are skipped.

// ErrMAT is wrapped by every MAT parsing error.
var ErrMAT = errors.New("not a readable MAT v5 file")

// Matrix is a numeric MATLAB array: Dims (rows, columns, …) and its values in
// column-major order, converted to float64.
type Matrix struct {
	Dims []int
	Data []float64
}

// At returns element (i, j) of a 2-D matrix.
func (m Matrix) At(i, j int) float64 { return m.Data[j*m.Dims[0]+i] }

const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15

	matHeader    = 128
	maxInflated  = 64 << 20 // a decompressed element larger than this is refused
	maxMATValues = 16 << 20
)

// parseMAT returns the numeric matrices of a MAT v5 file by name.
func parseMAT(data []byte) (map[string]Matrix, error) {
	if len(data) < matHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 128-byte header", ErrMAT, len(data))
	}
	if !bytes.HasPrefix(data, []byte("MATLAB 5.0 MAT-file")) {
		return nil, fmt.Errorf("%w: no MATLAB 5.0 header", ErrMAT)
	}
	if string(data[126:128]) != "IM" {
		return nil, fmt.Errorf("%w: big-endian or unknown byte order %q", ErrMAT, data[126:128])
	}
	out := map[string]Matrix{}
	rest := data[matHeader:]
	for len(rest) > 0 {
		typ, body, next, err := element(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		if typ == miCOMPRESSED {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("%w: compressed element: %v", ErrMAT, err)
			}
			inflated, err := io.ReadAll(io.LimitReader(zr, maxInflated+1))
			if err != nil {
				return nil, fmt.Errorf("%w: compressed element: %v", ErrMAT, err)
			}
			if len(inflated) > maxInflated {
				return nil, fmt.Errorf("%w: compressed element inflates past %d bytes", ErrMAT, maxInflated)
			}
			typ, body, _, err = element(inflated)
			if err != nil {
				return nil, err
			}
		}
		if typ != miMATRIX {
			continue
		}
		name, m, ok, err := parseMatrix(body)
		if err != nil {
			return nil, err
		}
		if ok {
			out[name] = m
		}
	}
	return out, nil
}

// element splits one data element off b: its type, its data and what
// follows. Compressed elements are not padded; others are padded to 8 bytes
// (the last element of a decompressed stream may lack its padding).
func element(b []byte) (typ uint32, body, rest []byte, err error) {
	if len(b) < 8 {
		return 0, nil, nil, fmt.Errorf("%w: truncated element tag", ErrMAT)
	}
	t := binary.LittleEndian.Uint32(b)
	if t>>16 != 0 { // small data element: 2-byte size, 2-byte type, 4 bytes of data
		n := int(t >> 16)
		if n > 4 {
			return 0, nil, nil, fmt.Errorf("%w: small element of %d bytes", ErrMAT, n)
		}
		return t & 0xffff, b[4 : 4+n], b[8:], nil
	}
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if n > uint64(len(b)-8) {
		return 0, nil, nil, fmt.Errorf("%w: element of %d bytes, %d left", ErrMAT, n, len(b)-8)
	}
	end := 8 + int(n)
	if t != miCOMPRESSED {
		end = min(8+int((n+7)&^7), len(b))
	}
	return t, b[8 : 8+n], b[end:], nil
}

// parseMatrix decodes a miMATRIX body. ok is false for arrays it skips.
func parseMatrix(b []byte) (name string, m Matrix, ok bool, err error) {
	typ, flags, b, err := element(b)
	if err != nil || typ != miUINT32 || len(flags) < 8 {
		return "", m, false, fmt.Errorf("%w: matrix without array flags", ErrMAT)
	}
	class := binary.LittleEndian.Uint32(flags) & 0xff
	complexFlag := binary.LittleEndian.Uint32(flags)&0x800 != 0
	typ, dims, b, err := element(b)
	if err != nil || typ != miINT32 || len(dims)%4 != 0 || len(dims) == 0 {
		return "", m, false, fmt.Errorf("%w: matrix without dimensions", ErrMAT)
	}
	total := 1
	for i := 0; i < len(dims); i += 4 {
		d := int(int32(binary.LittleEndian.Uint32(dims[i:])))
		if d < 0 || d > maxMATValues {
			return "", m, false, fmt.Errorf("%w: dimension %d", ErrMAT, d)
		}
		m.Dims = append(m.Dims, d)
		total *= d
		if total > maxMATValues {
			return "", m, false, fmt.Errorf("%w: matrix of more than %d values", ErrMAT, maxMATValues)
		}
	}
	typ, nm, b, err := element(b)
	if err != nil || typ != miINT8 {
		return "", m, false, fmt.Errorf("%w: matrix without a name", ErrMAT)
	}
	name = string(nm)
	// Numeric classes are 6 (double) to 15 (uint64); skip the rest.
	if class < 6 || class > 15 || complexFlag {
		return name, m, false, nil
	}
	typ, re, _, err := element(b)
	if err != nil {
		return "", m, false, err
	}
	vals, err := numbers(typ, re)
	if err != nil {
		return "", m, false, fmt.Errorf("%w: %s: %v", ErrMAT, name, err)
	}
	if len(vals) != total {
		return "", m, false, fmt.Errorf("%w: %s has %d values for dimensions %v", ErrMAT, name, len(vals), m.Dims)
	}
	m.Data = vals
	return name, m, true, nil
}

// numbers converts the data of a numeric element to float64.
func numbers(typ uint32, b []byte) ([]float64, error) {
	size := map[uint32]int{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4, miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[typ]
	if size == 0 {
		return nil, fmt.Errorf("data type %d is not numeric", typ)
	}
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d bytes of %d-byte values", len(b), size)
	}
	out := make([]float64, len(b)/size)
	le := binary.LittleEndian
	for i := range out {
		p := b[i*size:]
		switch typ {
		case miINT8:
			out[i] = float64(int8(p[0]))
		case miUINT8:
			out[i] = float64(p[0])
		case miINT16:
			out[i] = float64(int16(le.Uint16(p)))
		case miUINT16:
			out[i] = float64(le.Uint16(p))
		case miINT32:
			out[i] = float64(int32(le.Uint32(p)))
		case miUINT32:
			out[i] = float64(le.Uint32(p))
		case miSINGLE:
			out[i] = float64(math.Float32frombits(le.Uint32(p)))
		case miDOUBLE:
			out[i] = math.Float64frombits(le.Uint64(p))
		case miINT64:
			out[i] = float64(int64(le.Uint64(p)))
		case miUINT64:
			out[i] = float64(le.Uint64(p))
		}
	}
	return out, nil
}
