package safetensors

import "math"

// The conversions between float32 and the 16-bit float dtypes (BF16, F16), written once for the
// loader, the engines and the checkpoint writers.

// BF16ToFloat32 widens a bfloat16 bit pattern to float32 (exact).
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Float32ToBF16 rounds f to bfloat16 with round-to-nearest-even; NaN stays a quiet NaN.
func Float32ToBF16(f float32) uint16 {
	bits := math.Float32bits(f)
	if f != f {
		return uint16(bits>>16) | 0x0040
	}
	bias := uint32(0x7fff) + (bits>>16)&1
	return uint16((bits + bias) >> 16)
}

// F16ToFloat32 widens an IEEE half bit pattern to float32 (exact, subnormals included).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0: // zero or subnormal: mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToF16 rounds f to IEEE half with round-to-nearest-even (overflow gives ±Inf).
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	full, shift := mant, uint(13)
	if e <= 0 { // half subnormal: value = m * 2^-24 with m = full >> (14-e)
		if e < -10 {
			return sign
		}
		full, shift, e = mant|0x800000, uint(14-e), 0
	}
	r := full >> shift
	rem := full & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++
	}
	// A mantissa carry rolls into the exponent, which is the right answer (up to Inf).
	return sign | (uint16(e)<<10 + uint16(r))
}
