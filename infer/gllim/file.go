package gllim

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/edgepose/posed/internal/regular"
)

// The *.gllim file, versions 1 to 4. All integers and floats are
// little-endian.
//
//	offset  size  field
//	0       8     magic "POSEGLLM"
//	8       4     format version (uint32)
//	12      8     total file length in bytes (uint64)
//	20      4     header length H (uint32)
//	24      H     header: JSON object (fileHeader), UTF-8
//	24+H    …     weights, one block per member (see below)
//	end−4   4     CRC-32C (Castagnoli) of every byte before it
//
// Version 1 holds one model, version 2 an ensemble of "members" (≥ 2),
// both as float32: π (K), c^t (K·Lt), Γ^t (K·Lt·Lt), A (K·D·L), b (K·D),
// Σ diagonal (K·D). Version 3 holds one or more members ("members" ≥ 1)
// in the header's "encoding":
//
//   - "float32": as versions 1 and 2;
//   - "half" (compact): π, c^t, Γ^t as float32; the component centres
//     c*_k = A^t_k c^t_k + b_k (K·D) as float32; then per member K float32
//     scales of A followed by A (K·D·L) as binary16, and K scales of Σ
//     followed by Σ (K·D) as binary16, each value being its component's
//     scale times the stored half. b_k = c*_k − A^t_k c^t_k is recovered
//     at load. Keeping the centres exact is what keeps the mixture's
//     weights: a face's distance to c*_k decides them, and a half-precision
//     b_k moved some faces' predictions by up to 1.6° on real faces, where
//     exact centres leave them within 0.04°.
//   - "q8" (smallest): π, c^t, Γ^t, the centres and Σ as in "half"; then
//     per member K·L float32 powers of two s_kj followed by A (K·D·L) as
//     int8, A_k[d,j] = q · s_kj · √Σ_k[d], rounded to binary16 at load
//     (q8.go). About a third of the float32 file.
//
// Version 4 is version 3 with an input projection (Model.Input): the
// header's "input" gives its length In ("in"), the mixture's D being the
// projection's P, and after the members come μ (In float32) and W
// (D × In float32, row after row). A model without one is written as
// version 3, which builds before version 4 read.
//
// The total length comes first so that a truncated file is told apart from a
// corrupted one; the checksum is verified before the header is trusted, and
// the header's sizes are checked against the bytes present before anything
// of that size is allocated. A new file is written as version 3; versions 1
// and 2 can still be written (without the header fields they lack) for
// daemons built before version 3.

// FormatVersion is the newest model file version this package writes and
// reads; it reads every version from 1. A model without an input
// projection is written as version 3 (defaultVersion).
const FormatVersion = 4

// defaultVersion is the version a model without an input projection is
// written as: the newest that builds before version 4 read too.
const defaultVersion = 3

// Encoding is how a version-3 file stores the weights.
type Encoding string

const (
	// Float32 stores every weight as float32 (the default).
	Float32 Encoding = "float32"
	// Half stores A and Σ as binary16 with a float32 scale per component,
	// and the component centres exactly as float32: about half the size.
	Half Encoding = "half"
	// Q8 stores the centres and Σ as Half does and A as 8-bit integers
	// scaled per component, latent dimension and feature (q8.go): about a
	// third of the float32 size, with a larger rounding than Half's.
	Q8 Encoding = "q8"
)

// encodings are the encodings this build writes and reads.
var encodings = []Encoding{Float32, Half, Q8}

// Known reports whether this build writes and reads encoding e.
func (e Encoding) Known() bool { return slices.Contains(encodings, e) }

// Encodings lists the encodings this build writes and reads (for a
// message naming them).
func Encodings() []Encoding { return slices.Clone(encodings) }

const (
	magic      = "POSEGLLM"
	prefixLen  = 24
	maxHeader  = 1 << 20
	maxFileLen = 1 << 31
	// Bounds on the header's dimensions, far above any model of this method
	// (K ≈ 50, D = 1888, L ≤ 10) and low enough that sizes cannot overflow.
	maxK, maxD, maxL = 1 << 14, 1 << 20, 64
	maxMembers       = 64
)

// Sentinel errors of the loader; test with errors.Is.
var (
	ErrNotModel  = errors.New("not a posed model file")
	ErrVersion   = errors.New("unsupported model file version")
	ErrTruncated = errors.New("model file is truncated")
	ErrCorrupt   = errors.New("model file is corrupted")
	ErrDimension = errors.New("model dimensions are inconsistent")
	ErrInvalid   = errors.New("model parameters are invalid")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type fileHeader struct {
	K          int             `json:"k"`
	D          int             `json:"d"`
	Lt         int             `json:"lt"`
	Lw         int             `json:"lw"`
	Members    int             `json:"members,omitempty"`  // versions 2 and 3: models in the ensemble
	Encoding   Encoding        `json:"encoding,omitempty"` // version 3
	Covariance Covariance      `json:"covariance"`
	Shared     bool            `json:"shared"`
	Outputs    []Output        `json:"outputs"`
	Features   FeatureRecipe   `json:"features"`
	Calib      *BoxCalibration `json:"calibration,omitempty"`
	Convs      []BoxConvention `json:"conventions,omitempty"` // version 3
	Temp       float64         `json:"temperature,omitempty"` // version 3
	Input      *inputHeader    `json:"input,omitempty"`       // version 4
	Training   Training        `json:"training"`
}

// inputHeader describes a version-4 file's input projection.
type inputHeader struct {
	In int `json:"in"` // the feature vectors' length
}

// FileVersion is the format version m was read from (for a model made in
// memory, the version Marshal writes it as: 4 with an input projection, 3
// without).
func (m *Model) FileVersion() int {
	if m.fileVersion == 0 {
		return m.newestVersion()
	}
	return m.fileVersion
}

// newestVersion is the version Marshal writes m as by default.
func (m *Model) newestVersion() int {
	if m.Input != nil {
		return 4
	}
	return defaultVersion
}

// MarshalOptions choose the file version and the weights' encoding.
type MarshalOptions struct {
	// Version is 3 (the default; 4 for a model with an input projection,
	// which only version 4 holds), or 1 or 2 for daemons built before
	// version 3: 1 for a single model, 2 for an ensemble, float32 only, and
	// without the box conventions.
	Version  int
	Encoding Encoding // versions 3 and 4: Float32 (default), Half or Q8
}

// Marshal encodes m as a version-3 file in m.Encoding (Float32 if unset).
func Marshal(m *Model) ([]byte, error) {
	return MarshalWith(m, MarshalOptions{Encoding: m.Encoding})
}

// MarshalWith encodes m as o says.
func MarshalWith(m *Model, o MarshalOptions) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	members := m.Ensemble()
	if len(members) > maxMembers {
		return nil, fmt.Errorf("gllim: %d ensemble members, a model file holds at most %d", len(members), maxMembers)
	}
	if o.Version == 0 {
		o.Version = m.newestVersion()
	}
	if m.Input != nil && o.Version != 4 {
		return nil, fmt.Errorf("gllim: the model reads its features through an input projection, which only file version 4 holds, not %d", o.Version)
	}
	if m.Input == nil && o.Version == 4 {
		return nil, fmt.Errorf("gllim: file version 4 holds a model with an input projection, and this one has none: write it as version 3")
	}
	if o.Encoding == "" {
		o.Encoding = Float32
	}
	p := m.Params
	h := fileHeader{
		K: p.K, D: p.D, Lt: p.Lt, Lw: p.Lw, Covariance: p.Cov, Shared: p.Shared,
		Outputs: m.Outputs, Features: m.Features, Calib: m.Calibration, Training: m.Training,
	}
	switch {
	case o.Version >= 3 && o.Version <= 4 && o.Encoding.Known():
		h.Members, h.Encoding, h.Convs, h.Temp = len(members), o.Encoding, m.Conventions, m.Temperature
		if m.Input != nil {
			h.Input = &inputHeader{In: m.Input.In()}
		}
	case o.Version >= 3 && o.Version <= 4:
		return nil, fmt.Errorf("gllim: encoding %q is not one of %q", o.Encoding, encodings)
	case o.Encoding != Float32:
		return nil, fmt.Errorf("gllim: file version %d stores float32 weights only, not %s", o.Version, o.Encoding)
	case m.Temperature != 0 && m.Temperature != 1:
		return nil, fmt.Errorf("gllim: file version %d has no temperature (the model's is %g)", o.Version, m.Temperature)
	case o.Version == 1 && len(members) == 1:
	case o.Version == 2 && len(members) > 1:
		h.Members = len(members)
	case o.Version == 1 || o.Version == 2:
		return nil, fmt.Errorf("gllim: file version %d cannot hold %d member(s): version 1 holds one model, version 2 an ensemble", o.Version, len(members))
	default:
		return nil, fmt.Errorf("gllim: file version %d: this build writes versions 1 to %d", o.Version, FormatVersion)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("gllim: encoding header: %w", err)
	}
	weights := 0
	for range members {
		weights += memberBytes(p.K, p.D, p.Lt, p.Lw, o.Encoding)
	}
	if m.Input != nil {
		weights += inputBytes(m.Input.In(), p.D)
	}
	total := prefixLen + len(hdr) + weights + 4
	buf := make([]byte, prefixLen, total)
	copy(buf, magic)
	binary.LittleEndian.PutUint32(buf[8:], uint32(o.Version))
	binary.LittleEndian.PutUint64(buf[12:], uint64(total))
	binary.LittleEndian.PutUint32(buf[20:], uint32(len(hdr)))
	buf = append(buf, hdr...)
	for _, q := range members {
		buf = appendMember(buf, q, o.Encoding)
	}
	if m.Input != nil {
		buf = appendF32(buf, m.Input.Mean)
		buf = appendF32(buf, m.Input.Basis)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), nil
}

// inputBytes is the size of an input projection of in values onto d.
func inputBytes(in, d int) int { return 4 * (in + d*in) }

// memberBytes is the size of one member's weights in encoding enc.
func memberBytes(k, d, lt, lw int, enc Encoding) int {
	l := lt + lw
	small := 4 * (k + k*lt + k*lt*lt)
	switch enc {
	case Half:
		// centres, 2·K scales, A and Σ as halves
		return small + 4*k*d + 8*k + 2*(k*d*l+k*d)
	case Q8:
		// centres, Σ's K scales and halves, A's K·L scales and bytes
		return small + 4*k*d + 4*k + 2*k*d + 4*k*l + k*d*l
	}
	return small + 4*(k*d*l+2*k*d)
}

func appendF32(buf []byte, v []float64) []byte {
	for _, x := range v {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(x)))
	}
	return buf
}

// appendMember appends the weights of q in encoding enc.
func appendMember(buf []byte, q *Params, enc Encoding) []byte {
	buf = appendF32(buf, q.Pi)
	buf = appendF32(buf, q.C)
	buf = appendF32(buf, q.Gamma)
	switch enc {
	case Half:
		buf = appendF32(buf, centres(q))
		buf = appendHalves(buf, q.A, q.K)
		return appendHalves(buf, q.Sigma, q.K)
	case Q8:
		buf = appendF32(buf, centres(q))
		buf = appendHalves(buf, q.Sigma, q.K)
		return appendQ8(buf, q)
	}
	buf = appendF32(buf, q.A)
	buf = appendF32(buf, q.B)
	return appendF32(buf, q.Sigma)
}

// centres returns c*_k = A^t_k c^t_k + b_k for every component (K·D): the
// mean of y given component k.
func centres(q *Params) []float64 {
	l := q.L()
	out := make([]float64, q.K*q.D)
	for k := 0; k < q.K; k++ {
		a, b, c := q.Ak(k), q.Bk(k), q.Ck(k)
		for d := 0; d < q.D; d++ {
			v := b[d]
			for j := 0; j < q.Lt; j++ {
				v += a[d*l+j] * c[j]
			}
			out[k*q.D+d] = v
		}
	}
	return out
}

// halfScale is the power of two by which a block of values whose largest
// magnitude is big is divided before it is stored as binary16.
func halfScale(big float64) float64 {
	if !(big > 0) {
		return 1
	}
	_, e := math.Frexp(big) // big = f·2^e, f ∈ [0.5, 1)
	scale := math.Ldexp(1, e-15)
	// Where the largest value rounds up to 2¹⁵, the file would read back as
	// a block whose largest is 2^e, which this rule scales one step coarser:
	// take that step now, so that writing a loaded model again gives the
	// same bytes.
	if halfFloat(halfBits(float32(big/scale))) >= 1<<15 {
		scale *= 2
	}
	return scale
}

// blockHalfScale is halfScale of the block's largest magnitude.
func blockHalfScale(block []float64) float64 {
	big := 0.0
	for _, x := range block {
		big = math.Max(big, math.Abs(x))
	}
	return halfScale(big)
}

// appendHalves appends v, cut into rows equal blocks (one per component),
// as each block's float32 scale followed by its values divided by the
// scale as binary16. The scale is the power of two that puts the block's
// largest magnitude in [2¹⁴, 2¹⁵) (or at 2¹⁴ where it would round to 2¹⁵):
// every value then keeps half's full relative precision down to 2⁻²⁸ of
// the largest.
func appendHalves(buf []byte, v []float64, rows int) []byte {
	n := len(v) / rows
	scales := make([]float64, rows)
	for r := range scales {
		scales[r] = blockHalfScale(v[r*n : (r+1)*n])
	}
	buf = appendF32(buf, scales)
	for r, s := range scales {
		for _, x := range v[r*n : (r+1)*n] {
			buf = binary.LittleEndian.AppendUint16(buf, halfBits(float32(x/s)))
		}
	}
	return buf
}

// WriteFile writes m to path atomically: a temporary file in the same
// directory, synced, then renamed over path. A failed write leaves any
// earlier file at path as it was.
func WriteFile(path string, m *Model) error {
	return WriteFileWith(path, m, MarshalOptions{Encoding: m.Encoding})
}

// WriteFileWith is WriteFile with the file version and encoding of o.
func WriteFileWith(path string, m *Model, o MarshalOptions) error {
	data, err := MarshalWith(m, o)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gllim: %w", err)
	}
	defer os.Remove(tmp.Name())              // no-op once renamed
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		tmp.Close()
		return fmt.Errorf("gllim: writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("gllim: writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("gllim: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("gllim: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gllim: %w", err)
	}
	return nil
}

// ReadFile loads the model file at path. Errors name the file and wrap one of
// the sentinel errors.
func ReadFile(path string) (*Model, error) {
	f, err := regular.Open(path) // a FIFO in a model's place would hang posed
	if err != nil {
		return nil, fmt.Errorf("gllim: %w", err)
	}
	defer f.Close()
	// Read into a buffer of the file's size: io.ReadAll would grow one by
	// doubling and leave twice the model's size of garbage behind, which
	// shows in the daemon's peak memory.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gllim: %w", err)
	}
	if st.Size() > maxFileLen {
		return nil, fmt.Errorf("gllim: %s: %w: %d bytes, more than a model file can hold", path, ErrCorrupt, st.Size())
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("gllim: reading %s: %w", path, err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse decodes a model file held in memory. It never panics and never
// allocates more than the file's own size suggests: any input that is not
// a valid model file of versions 1 to 4 gives an error wrapping ErrNotModel,
// ErrVersion, ErrTruncated, ErrCorrupt, ErrDimension or ErrInvalid.
func Parse(data []byte) (*Model, error) {
	if len(data) < len(magic) {
		if bytes.HasPrefix([]byte(magic), data) {
			return nil, fmt.Errorf("gllim: %w: %d bytes, less than the %d-byte prefix", ErrTruncated, len(data), prefixLen)
		}
		return nil, fmt.Errorf("gllim: %w: %d bytes", ErrNotModel, len(data))
	}
	if string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("gllim: %w: magic %q, want %q", ErrNotModel, data[:len(magic)], magic)
	}
	if len(data) < prefixLen {
		return nil, fmt.Errorf("gllim: %w: %d bytes, less than the %d-byte prefix", ErrTruncated, len(data), prefixLen)
	}
	version := binary.LittleEndian.Uint32(data[8:])
	if version < 1 || version > FormatVersion {
		return nil, fmt.Errorf("gllim: %w: file is version %d, this build reads versions 1 to %d", ErrVersion, version, FormatVersion)
	}
	total := binary.LittleEndian.Uint64(data[12:])
	hlen := uint64(binary.LittleEndian.Uint32(data[20:]))
	switch {
	case total > maxFileLen || total < prefixLen+4:
		return nil, fmt.Errorf("gllim: %w: recorded length %d is impossible", ErrCorrupt, total)
	case uint64(len(data)) < total:
		return nil, fmt.Errorf("gllim: %w: %d bytes, the file says it has %d", ErrTruncated, len(data), total)
	case uint64(len(data)) > total:
		return nil, fmt.Errorf("gllim: %w: %d bytes after the recorded end at %d", ErrCorrupt, uint64(len(data))-total, total)
	}
	body := data[:total-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[total-4:]); got != want {
		return nil, fmt.Errorf("gllim: %w: checksum %08x, recorded %08x", ErrCorrupt, got, want)
	}
	if hlen > maxHeader || prefixLen+hlen > uint64(len(body)) {
		return nil, fmt.Errorf("gllim: %w: header length %d does not fit in %d bytes", ErrCorrupt, hlen, len(body))
	}
	var h fileHeader
	dec := json.NewDecoder(bytes.NewReader(body[prefixLen : prefixLen+hlen]))
	dec.DisallowUnknownFields() // a field this build does not know could change the features
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("gllim: %w: header: %v", ErrCorrupt, err)
	}
	if h.K < 1 || h.K > maxK || h.D < 1 || h.D > maxD || h.Lt < 1 || h.Lw < 0 || h.Lt+h.Lw > maxL {
		return nil, fmt.Errorf("gllim: %w: K=%d D=%d Lt=%d Lw=%d out of range (1 ≤ K ≤ %d, 1 ≤ D ≤ %d, Lt ≥ 1, Lw ≥ 0, Lt+Lw ≤ %d)",
			ErrDimension, h.K, h.D, h.Lt, h.Lw, maxK, maxD, maxL)
	}
	members, enc := 1, Float32
	switch {
	case version == 1 && h.Members != 0:
		return nil, fmt.Errorf("gllim: %w: a version-1 file has no ensemble, the header says %d members", ErrCorrupt, h.Members)
	case version == 2 && (h.Members < 2 || h.Members > maxMembers):
		return nil, fmt.Errorf("gllim: %w: %d ensemble members (2 to %d)", ErrDimension, h.Members, maxMembers)
	case version < 3 && (h.Encoding != "" || len(h.Convs) > 0 || h.Temp != 0):
		return nil, fmt.Errorf("gllim: %w: a version-%d file has no encoding, box conventions or temperature", ErrCorrupt, version)
	case version < 4 && h.Input != nil:
		return nil, fmt.Errorf("gllim: %w: a version-%d file has no input projection", ErrCorrupt, version)
	case version == 4 && h.Input == nil:
		return nil, fmt.Errorf("gllim: %w: a version-4 file without its input projection", ErrCorrupt)
	case version == 4 && (h.Input.In < 1 || h.Input.In > maxD):
		return nil, fmt.Errorf("gllim: %w: input projection of %d values (1 to %d)", ErrDimension, h.Input.In, maxD)
	case version == 2:
		members = h.Members
	case version >= 3 && (h.Members < 1 || h.Members > maxMembers):
		return nil, fmt.Errorf("gllim: %w: %d ensemble members (1 to %d)", ErrDimension, h.Members, maxMembers)
	case version >= 3 && !h.Encoding.Known():
		return nil, fmt.Errorf("gllim: %w: weights encoded as %q, this build reads %q", ErrCorrupt, h.Encoding, encodings)
	case version >= 3:
		members, enc = h.Members, h.Encoding
	}
	// Compare the sizes the header claims with the bytes present before
	// allocating anything of those sizes (in uint64: they cannot overflow
	// within the bounds above).
	payload := body[prefixLen+hlen:]
	per := uint64(memberBytes(h.K, h.D, h.Lt, h.Lw, enc))
	var inBytes uint64
	if h.Input != nil {
		inBytes = 4 * (uint64(h.Input.In) + uint64(h.D)*uint64(h.Input.In))
	}
	if uint64(len(payload)) != per*uint64(members)+inBytes {
		return nil, fmt.Errorf("gllim: %w: header says K=%d D=%d Lt=%d Lw=%d (%d member(s), %s)%s, which needs %d bytes of weights, the file holds %d",
			ErrDimension, h.K, h.D, h.Lt, h.Lw, members, enc, inputSays(h.Input), per*uint64(members)+inBytes, len(payload))
	}
	ps := make([]*Params, members)
	for i := range ps {
		p := NewParams(h.K, h.D, h.Lt, h.Lw)
		p.Cov, p.Shared = h.Covariance, h.Shared
		readMember(p, payload[uint64(i)*per:uint64(i+1)*per], enc)
		ps[i] = p
	}
	m := &Model{Params: ps[0], Outputs: h.Outputs, Features: h.Features, Calibration: h.Calib, Conventions: h.Convs,
		Training: h.Training, Temperature: h.Temp, Encoding: enc, fileVersion: int(version)}
	if h.Input != nil {
		b := payload[per*uint64(members):]
		in := &Projection{Mean: make([]float64, h.Input.In), Basis: make([]float64, h.D*h.Input.In)}
		for _, dst := range [][]float64{in.Mean, in.Basis} {
			for i := range dst {
				dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
				b = b[4:]
			}
		}
		m.Input = in
	}
	if members > 1 {
		m.Members = ps[1:]
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("gllim: %w: %v", ErrInvalid, err)
	}
	return m, nil
}

// inputSays describes an input projection's header for an error.
func inputSays(h *inputHeader) string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf(" and an input of %d values", h.In)
}

// readMember decodes one member's weights (exactly memberBytes long).
func readMember(p *Params, b []byte, enc Encoding) {
	f32 := func(dst []float64) {
		for i := range dst {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
			b = b[4:]
		}
	}
	f32(p.Pi)
	f32(p.C)
	f32(p.Gamma)
	if enc == Float32 {
		f32(p.A)
		f32(p.B)
		f32(p.Sigma)
		return
	}
	cs := p.B // the centres first, b_k from them below
	f32(cs)
	halves := func(dst []float64) {
		scales := make([]float64, p.K)
		f32(scales)
		n := len(dst) / p.K
		for i := range dst {
			dst[i] = scales[i/n] * float64(halfFloat(binary.LittleEndian.Uint16(b)))
			b = b[2:]
		}
	}
	switch enc {
	case Half:
		halves(p.A)
		halves(p.Sigma)
	case Q8:
		halves(p.Sigma)
		scales := make([]float64, p.K*p.L())
		f32(scales)
		readQ8(p, scales, b)
	}
	// b_k = c*_k − A^t_k c^t_k.
	l := p.L()
	for k := 0; k < p.K; k++ {
		a, bk, c := p.Ak(k), p.Bk(k), p.Ck(k)
		for d := range bk {
			for j := 0; j < p.Lt; j++ {
				bk[d] -= a[d*l+j] * c[j]
			}
		}
	}
}
