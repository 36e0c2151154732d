package cpu

import "math"

// limbBytes is the size of one pair of groups in Vec.l8: six 64-byte blocks, a_even, a_odd, b_even,
// b_odd, c_even, c_odd; in each, bytes 0–31 belong to the pair's first group (its elements 2j or
// 2j+1 for j = 0…31, the order of the low and high nibbles of the group's 32 packed bytes) and bytes
// 32–63 to its second.
const limbBytes = 6 * 64

// limbScale is the weight of the last limb: x ≈ d·(a + b/256 + c/65536) = (d/limbScale)·L with the
// integer L = 65536·a + 256·b + c.
const limbScale = 65536

// prepareLimbs fills v.l8 and v.dl from x: [n]. Each paired group gets d = max|x|/127 and three int8
// limbs per element: L = round(65536·x/d) ∈ [−127·65536, 127·65536] written as 65536·a + 256·b + c
// with a, b, c ∈ [−128, 127], so that |x − (d/65536)·L| ≤ d/131072, about
// 6e-8 of the group's largest |x| (float32's own rounding is 6e-8 of each value). dl holds
// d/65536 per group, the factor that turns the integer sums into Σ x·q. An odd last group has no
// limbs (the VNNI kernel runs only rows of whole 8-group blocks).
func (v *Vec) prepareLimbs(x []float32) {
	if !limbsSIMD(v, x) {
		v.limbsPortable(x)
	}
}

// limbsPortable is prepareLimbs in plain Go.
func (v *Vec) limbsPortable(x []float32) {
	for p := range len(v.sum) / 2 {
		blk := v.l8[p*limbBytes : (p+1)*limbBytes]
		for h := range 2 {
			g := 2*p + h
			xs := x[g*GroupSize : (g+1)*GroupSize]
			var amax float32
			for _, e := range xs {
				amax = max(amax, float32(math.Abs(float64(e))))
			}
			var inv float64
			v.dl[g], inv = limbScaleOf(float64(amax))
			// The even elements go to the _even blocks (bytes 32h…32h+31 of a, b and c: offsets 0,
			// 128, 256), the odd ones 64 bytes on.
			out := blk[32*h : 32*h+352]
			for j := range 32 {
				a, b, c := limbs(roundInt(float64(xs[2*j]) * inv))
				out[j], out[j+128], out[j+256] = a, b, c
				a, b, c = limbs(roundInt(float64(xs[2*j+1]) * inv))
				out[j+64], out[j+192], out[j+320] = a, b, c
			}
		}
	}
}

// limbScaleOf returns, for a group whose largest |x| is amax, d/65536 and 65536/d, where d is the
// float32 no smaller than amax/127 nearest to it: |x/d| ≤ 127 and d/65536 is exact.
func limbScaleOf(amax float64) (dl float32, inv float64) {
	d32 := float32(amax / 127)
	if float64(d32)*127 < amax {
		d32 = math.Nextafter32(d32, float32(math.Inf(1)))
	}
	if d32 != 0 {
		inv = limbScale / float64(d32)
	}
	return d32 / limbScale, inv
}

// roundInt rounds t (|t| < 2^31) to the nearest integer, ties to even: adding and subtracting
// 1.5·2^52 leaves t rounded in float64's current (round-to-nearest-even) mode.
func roundInt(t float64) int32 {
	const shift = 1.5 * (1 << 52)
	return int32((t + shift) - shift)
}

// limbs splits L ∈ [−127·65536, 127·65536] into 65536·a + 256·b + c with int8 digits: c and b
// are the low bytes read as signed (each step leaves a multiple of 256), and |a| ≤ 127 follows from
// the range of L.
func limbs(L int32) (a, b, c int8) {
	c = int8(L)
	L = (L - int32(c)) >> 8
	b = int8(L)
	return int8((L - int32(b)) >> 8), b, c
}
