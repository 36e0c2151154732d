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

// limbLayout is where a limb copy puts each pair of groups' limbBytes: pair p at byte
// (p/blockPairs)·blockStride + (p%blockPairs)·pairStride. Vec.l8 holds the pairs back to back
// (vecLimbLayout); the integer GEMM's records interleave them with other fields (recLimbLayout).
type limbLayout struct{ blockPairs, pairStride, blockStride int }

// at returns pair p's byte offset.
func (l limbLayout) at(p int) int { return p/l.blockPairs*l.blockStride + p%l.blockPairs*l.pairStride }

// vecLimbLayout is Vec.l8's layout.
func vecLimbLayout() limbLayout { return limbLayout{1, limbBytes, limbBytes} }

// prepareLimbs fills v.l8 and v.dl from x: [n]. Each paired group gets d = max|x|/127 and three int8
// limbs per element: L = round(65536·x/d) ∈ [−127·65536, 127·65536] written as 65536·a + 256·b + c
// with a, b, c ∈ [−128, 127], so that |x − (d/65536)·L| ≤ d/131072, about
// 6e-8 of the group's largest |x| (float32's own rounding is 6e-8 of each value). dl holds
// d/65536 per group, the factor that turns the integer sums into Σ x·q. An odd last group has no
// limbs (the VNNI kernel runs only rows of whole 8-group blocks).
func (v *Vec) prepareLimbs(x []float32) {
	v.limbsInto(v.l8, vecLimbLayout(), x)
}

// limbsInto is prepareLimbs writing the limbs to dst in layout lay (v.dl as always).
func (v *Vec) limbsInto(dst []int8, lay limbLayout, x []float32) {
	if !limbsSIMD(v, dst, lay, x) {
		limbsPortable(v.dl, dst, lay, x, len(v.sum)/2)
	}
}

// limbsPortable is prepareLimbs in plain Go, for pairs pairs of groups: limbs into dst in layout
// lay, scales into dl.
func limbsPortable(dl []float32, dst []int8, lay limbLayout, x []float32, pairs int) {
	for p := range pairs {
		blk := dst[lay.at(p) : lay.at(p)+limbBytes]
		for h := range 2 {
			g := 2*p + h
			xs := x[g*GroupSize : (g+1)*GroupSize]
			var amax float32
			for _, e := range xs {
				amax = max(amax, float32(math.Abs(float64(e))))
			}
			var inv float64
			dl[g], inv = limbScaleOf(float64(amax))
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

// limbConsts are the vector limb preparation's constants (limbsSIMD), held by a Vec that has limbs
// (newLimbConsts), loaded from memory as archsimd has no vector constants; recordPatternsSIMD reads
// them too.
type limbConsts struct {
	abs       [16]uint32 // the float32 sign bit cleared
	even, odd [16]uint32 // VPERMI2PS indices of the even and odd elements of two vectors
	bias      [16]int32  // 0x808080: limbWords' digit offset
	ab, c     [64]uint8  // limbs32's byte indices: the a then the b digits of 32 words, the c digits
	// red[k]: maxPair's indices at level k, w = 8>>k partials per group: lo[i] =
	// (i/w)·2w + i%w, the first half of each group's partials in a‖b; hi = lo + w, the second.
	red [4][2][16]uint32
	// pat[p]: the indices of pair p's multiplier pattern in its block's 8 group scales: lanes
	// 0–7 the pair's first group, 8–15 its second (recordPatternsSIMD).
	pat     [4][16]uint32
	c127    [8]float64
	c65536  [8]float64
	one     [8]uint32
	dlScale [8]float32 // 1/limbScale
}

func newLimbConsts() *limbConsts {
	c := new(limbConsts)
	for i := range 16 {
		c.abs[i] = 0x7FFFFFFF
		c.even[i], c.odd[i] = uint32(2*i), uint32(2*i+1)
		c.bias[i] = 0x808080
		for k := range 4 {
			w := 8 >> k
			c.red[k][0][i] = uint32(i/w*2*w + i%w)
			c.red[k][1][i] = c.red[k][0][i] + uint32(w)
		}
		for p := range 4 {
			c.pat[p][i] = uint32(2*p + i/8)
		}
	}
	for i := range 32 { // word i of w0‖w1 starts at byte 4i
		c.ab[i], c.ab[32+i], c.c[i] = uint8(4*i+2), uint8(4*i+1), uint8(4*i)
	}
	for i := range 8 {
		c.c127[i], c.c65536[i], c.one[i], c.dlScale[i] = 127, limbScale, 1, 1.0/limbScale
	}
	return c
}
