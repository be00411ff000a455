package gllim

import "math"

// IEEE 754 binary16 ("half"): 1 sign bit, 5 exponent bits (bias 15), 10
// fraction bits. Normal numbers span 2⁻¹⁴ … 65504 with a relative step of
// 2⁻¹⁰ (rounding error ≤ 2⁻¹¹ ≈ 4.9e-4); below 2⁻¹⁴ the subnormals keep an
// absolute step of 2⁻²⁴. The model file's compact encoding stores weights
// this way, scaled per row so that they sit in the normal range.

// halfBits returns the binary16 nearest to f (ties to even); values beyond
// the largest half round to ±Inf, NaN stays NaN.
func halfBits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if frac != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp == 0 && frac == 0:
		return sign
	}
	// f = 1.frac · 2^(exp−127) for normal float32s (subnormal float32s are
	// far below half's range and round to zero below).
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	mant := frac | 0x800000 // 24 bits with the implicit one
	var shift uint
	if e <= 0 {
		// Subnormal half: value = m · 2⁻²⁴; shift the 24-bit mantissa so
		// that its units are 2⁻²⁴.
		shift = uint(14 - e)
		if shift > 24 {
			return sign
		}
		e = 0
	} else {
		shift = 13
	}
	m := mant >> shift
	rest := mant & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rest > half || (rest == half && m&1 == 1) {
		m++
	}
	if e == 0 {
		// m may have carried into the normal range: the bit pattern is
		// still right (exponent field 1, fraction 0).
		return sign | uint16(m)
	}
	// Normal: m holds 11 bits (implicit one at bit 10); a carry to bit 11
	// moves to the next exponent.
	if m&0x800 != 0 {
		m >>= 1
		e++
		if e >= 0x1f {
			return sign | 0x7c00
		}
	}
	return sign | uint16(e)<<10 | uint16(m&0x3ff)
}

// halfFloat returns the value of the binary16 h (exactly: every half is a
// float32).
func halfFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp == 0:
		// ±frac · 2⁻²⁴, exact in float32.
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
