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
)

// The *.gllim file, versions 1 and 2. All integers and floats are
// little-endian.
//
//	offset  size  field
//	0       8     magic "POSEGLLM"
//	8       4     format version (uint32): 1, or 2 for an ensemble
//	12      8     total file length in bytes (uint64)
//	20      4     header length H (uint32)
//	24      H     header: JSON object (fileHeader), UTF-8
//	24+H    4·n   float32 payload, in order: π (K), c^t (K·Lt), Γ^t (K·Lt·Lt),
//	              A (K·D·L), b (K·D), Σ diagonal (K·D); version 2 repeats
//	              this block for each of the header's "members"
//	end−4   4     CRC-32C (Castagnoli) of every byte before it
//
// The total length comes first so that a truncated file is told apart from a
// corrupted one; the checksum is verified before the header is trusted. A
// single model is written as version 1, so that builds that know no
// ensembles still read it.

// FormatVersion is the newest model file version this package writes and
// reads; it reads every version from 1.
const FormatVersion = 2

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
	Members    int             `json:"members,omitempty"` // version 2: models in the ensemble
	Covariance Covariance      `json:"covariance"`
	Shared     bool            `json:"shared"`
	Outputs    []Output        `json:"outputs"`
	Features   FeatureRecipe   `json:"features"`
	Calib      *BoxCalibration `json:"calibration,omitempty"`
	Convs      []BoxConvention `json:"conventions,omitempty"`
	Training   Training        `json:"training"`
}

// FileVersion is the format version m is written in: 1 for a single
// model, 2 for an ensemble.
func (m *Model) FileVersion() int {
	if len(m.Members) > 0 {
		return 2
	}
	return 1
}

// Marshal encodes m as a model file: version 1 for a single model,
// version 2 for an ensemble. The weights are stored as float32.
func Marshal(m *Model) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.Members)+1 > maxMembers {
		return nil, fmt.Errorf("gllim: %d ensemble members, a model file holds at most %d", len(m.Members)+1, maxMembers)
	}
	p := m.Params
	h := fileHeader{
		K: p.K, D: p.D, Lt: p.Lt, Lw: p.Lw, Covariance: p.Cov, Shared: p.Shared,
		Outputs: m.Outputs, Features: m.Features, Calib: m.Calibration, Convs: m.Conventions, Training: m.Training,
	}
	version := uint32(m.FileVersion())
	if len(m.Members) > 0 {
		h.Members = len(m.Members) + 1
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("gllim: encoding header: %w", err)
	}
	var arrays [][]float64
	for _, q := range m.Ensemble() {
		arrays = append(arrays, q.Pi, q.C, q.Gamma, q.A, q.B, q.Sigma)
	}
	n := 0
	for _, a := range arrays {
		n += len(a)
	}
	total := prefixLen + len(hdr) + 4*n + 4
	buf := make([]byte, total)
	copy(buf, magic)
	binary.LittleEndian.PutUint32(buf[8:], version)
	binary.LittleEndian.PutUint64(buf[12:], uint64(total))
	binary.LittleEndian.PutUint32(buf[20:], uint32(len(hdr)))
	copy(buf[prefixLen:], hdr)
	off := prefixLen + len(hdr)
	for _, a := range arrays {
		for _, v := range a {
			binary.LittleEndian.PutUint32(buf[off:], math.Float32bits(float32(v)))
			off += 4
		}
	}
	binary.LittleEndian.PutUint32(buf[off:], crc32.Checksum(buf[:off], castagnoli))
	return buf, nil
}

// WriteFile writes m to path atomically: a temporary file in the same
// directory, synced, then renamed over path. A failed write leaves any
// earlier file at path as it was.
func WriteFile(path string, m *Model) error {
	data, err := Marshal(m)
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
	f, err := os.Open(path)
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

// Parse decodes a model file held in memory. It never panics: any input that
// is not a valid version-1 or version-2 model file gives an error wrapping ErrNotModel,
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
	members := 1
	switch {
	case version == 1 && h.Members != 0:
		return nil, fmt.Errorf("gllim: %w: a version-1 file has no ensemble, the header says %d members", ErrCorrupt, h.Members)
	case version == 2 && (h.Members < 2 || h.Members > maxMembers):
		return nil, fmt.Errorf("gllim: %w: %d ensemble members (2 to %d)", ErrDimension, h.Members, maxMembers)
	case version == 2:
		members = h.Members
	}
	ps := make([]*Params, members)
	var arrays [][]float64
	for i := range ps {
		p := NewParams(h.K, h.D, h.Lt, h.Lw)
		p.Cov, p.Shared = h.Covariance, h.Shared
		arrays = append(arrays, p.Pi, p.C, p.Gamma, p.A, p.B, p.Sigma)
		ps[i] = p
	}
	n := uint64(0)
	for _, a := range arrays {
		n += uint64(len(a))
	}
	payload := body[prefixLen+hlen:]
	if uint64(len(payload)) != 4*n {
		return nil, fmt.Errorf("gllim: %w: header says K=%d D=%d Lt=%d Lw=%d (%d member(s)), which needs %d weights, the file holds %d bytes of weights",
			ErrDimension, h.K, h.D, h.Lt, h.Lw, members, n, len(payload))
	}
	off := 0
	for _, a := range arrays {
		for i := range a {
			a[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(payload[off:])))
			off += 4
		}
	}
	m := &Model{Params: ps[0], Outputs: h.Outputs, Features: h.Features, Calibration: h.Calib, Conventions: h.Convs, Training: h.Training}
	if members > 1 {
		m.Members = ps[1:]
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("gllim: %w: %v", ErrInvalid, err)
	}
	return m, nil
}
