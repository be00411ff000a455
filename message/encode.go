package message

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Num is an optional number of a message: with the field option omitzero
// an unset Num is left out, without it it is null. It replaces *float64 so
// that a message can be filled without allocating.
type Num struct {
	V   float64
	Set bool
}

// Some is the number v, set.
func Some(v float64) Num { return Num{V: v, Set: true} }

// IsZero reports an unset number (encoding/json's omitzero).
func (n Num) IsZero() bool { return !n.Set }

// MarshalJSON writes the number, or null.
func (n Num) MarshalJSON() ([]byte, error) { return appendNum(nil, n), nil }

// UnmarshalJSON reads a number, or null (unset).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num{}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return errors.New("publish: not a number: " + string(b))
	}
	*n = Some(v)
	return nil
}

// Label is an optional name of a message: with omitzero it is left out
// unless On, and it is null unless Known.
type Label struct {
	Name      string
	Known, On bool
}

// IsZero reports a label that is not there (encoding/json's omitzero).
func (l Label) IsZero() bool { return !l.On }

// MarshalJSON writes the name, or null.
func (l Label) MarshalJSON() ([]byte, error) { return appendLabel(nil, l), nil }

// UnmarshalJSON reads a name, or null (there, but not known).
func (l *Label) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = Label{On: true}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*l = Label{Name: s, Known: true, On: true}
	return nil
}

func appendLabel(b []byte, l Label) []byte {
	if !l.Known {
		return append(b, "null"...)
	}
	return appendString(b, l.Name)
}

// The encoders below write exactly what encoding/json's Marshal writes for
// the same message (the tests hold them to it), into a buffer the caller
// reuses: the frame loop publishes without allocating.

// AppendPose appends m as JSON.
func AppendPose(b []byte, m *Pose) []byte {
	b = append(b, `{"schema":`...)
	b = strconv.AppendInt(b, int64(m.Schema), 10)
	b = append(b, `,"device":`...)
	b = appendString(b, m.Device)
	b = append(b, `,"camera":`...)
	b = appendString(b, m.Camera)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, `,"captured":`...)
	b = appendTime(b, m.Captured)
	b = append(b, `,"latency_ms":`...)
	b = appendFloat(b, m.LatencyMs)
	b = append(b, `,"width":`...)
	b = strconv.AppendInt(b, int64(m.Width), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(m.Height), 10)
	b = append(b, `,"faces":`...)
	if m.Faces == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range m.Faces {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFace(b, &m.Faces[i])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// AppendPrimary appends m as JSON.
func AppendPrimary(b []byte, m *Primary) []byte {
	b = append(b, `{"schema":`...)
	b = strconv.AppendInt(b, int64(m.Schema), 10)
	b = append(b, `,"device":`...)
	b = appendString(b, m.Device)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, `,"captured":`...)
	b = appendTime(b, m.Captured)
	b = append(b, `,"face":`...)
	if m.Face == nil {
		b = append(b, "null"...)
	} else {
		b = appendFace(b, m.Face)
	}
	return append(b, '}')
}

// appendFace appends f as JSON.
func appendFace(b []byte, f *Face) []byte {
	b = append(b, `{"track":`...)
	b = strconv.AppendUint(b, f.Track, 10)
	b = append(b, `,"box":[`...)
	for i, v := range f.Box {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, v)
	}
	b = append(b, `],"score":`...)
	b = appendFloat(b, f.Score)
	b = append(b, `,"view":`...)
	b = appendString(b, f.View)
	for _, o := range [...]struct {
		key string
		n   Num
	}{
		{`,"yaw":`, f.Yaw}, {`,"pitch":`, f.Pitch}, {`,"roll":`, f.Roll},
		{`,"yaw_std":`, f.YawStd}, {`,"pitch_std":`, f.PitchStd}, {`,"roll_std":`, f.RollStd},
		{`,"raw_yaw":`, f.RawYaw}, {`,"raw_pitch":`, f.RawPitch}, {`,"raw_roll":`, f.RawRoll},
	} {
		if o.n.Set {
			b = append(b, o.key...)
			b = appendFloat(b, o.n.V)
		}
	}
	if f.Landmarks != ([5][2]float64{}) {
		b = append(b, `,"landmarks":[`...)
		for i, p := range f.Landmarks {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = appendFloat(b, p[0])
			b = append(b, ',')
			b = appendFloat(b, p[1])
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if f.Target.On {
		b = append(b, `,"target":`...)
		b = appendLabel(b, f.Target)
	}
	if f.Dwell.Set {
		b = append(b, `,"dwell_s":`...)
		b = appendFloat(b, f.Dwell.V)
	}
	if f.Attention != "" {
		b = append(b, `,"attention":`...)
		b = appendString(b, f.Attention)
	}
	if f.AttentionReason != "" {
		b = append(b, `,"attention_reason":`...)
		b = appendString(b, f.AttentionReason)
	}
	if len(f.Zones) > 0 {
		b = append(b, `,"zones":[`...)
		for i, z := range f.Zones {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, z)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendNum appends n, or null.
func appendNum(b []byte, n Num) []byte {
	if !n.Set {
		return append(b, "null"...)
	}
	return appendFloat(b, n.V)
}

// appendFloat formats v as encoding/json does: the shortest decimal that
// reads back as v, in exponent form below 1e-6 and from 1e21 on. NaN and
// infinities, which JSON cannot hold, are written as null (json.Marshal
// would fail the whole message; the frame loop never makes them).
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	f := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	b = strconv.AppendFloat(b, v, f, -1, 64)
	if f == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros trimmed).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped as encoding/json escapes
// it by default: quotes, backslashes and control characters, the HTML
// characters <, > and &, U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Hundredths rounds v to two decimals, half away from zero: the precision
// of the published angles, boxes and scores.
func Hundredths(v float64) float64 { return math.Round(v*100) / 100 }

// Round rounds the face's box, score, angles, their σ and the dwell to
// hundredths (Hundredths), as published: the stages work on a face at
// full precision and the frame loop rounds the copy it publishes.
func (f *Face) Round() {
	for i := range f.Box {
		f.Box[i] = Hundredths(f.Box[i])
	}
	f.Score = Hundredths(f.Score)
	for i := range f.Landmarks {
		for j := range f.Landmarks[i] {
			f.Landmarks[i][j] = Hundredths(f.Landmarks[i][j])
		}
	}
	for _, n := range [...]*Num{&f.Yaw, &f.Pitch, &f.Roll, &f.YawStd, &f.PitchStd, &f.RollStd, &f.RawYaw, &f.RawPitch, &f.RawRoll, &f.Dwell} {
		if n.Set {
			n.V = Hundredths(n.V)
		}
	}
}
