package cpu

import "unsafe"

// The integer prefill GEMM (Kernels.QMatMat on AVX-512 VNNI) reads its token rows as "records":
// every token row of X prepared once per call, in the order the assembly tile reads it. Per block
// of 8 groups (512 inputs) a record holds, for each of its 4 pairs of groups, the pair's limbs in
// the mat-vec's layout (limbBytes: a, b, c limbs of the even and odd elements) followed by the
// pair's multiplier pattern (16 float32: lanes 0–7 the first group's limb scale, 8–15 the
// second's), and after the 4 pairs the block's 8 group sums of x as the limbs give it, padded with 8
// zeros (the bias term Σ_g bias_g·Σ_{i∈g} x̂_i, read as one 16-lane vector whose upper half meets
// zero biases; see limbSum).
const (
	recPairBytes  = limbBytes + 64 // one pair: limbs, then the multiplier pattern
	recSumOff     = 4 * recPairBytes
	recBlockBytes = recSumOff + 64 // one block of 8 groups: 4 pairs, then the sums
	recTile       = 4              // token rows per assembly tile (records padded to it)
	qmmVNNIRows   = 32             // output rows per pool item of the integer GEMM (even: tiles are row pairs)
	qmmVNNIAlign  = 64             // records start on a cache line
	limbShift     = 8              // the weight of one limb over the next, as a shift
)

// qmmLimbScale returns the factor between a group's limb scale dl (d/65536, prepareLimbs) and the
// unit of the integer sum a kernel forms from the first n limbs, Σ q·(256^(n−1)·a + … ): 65536/256^(n−1).
// Reading fewer limbs than were prepared truncates L = 65536·a + 256·b + c to its leading signed
// digits; as the digits are balanced (each in [−128, 127]) that rounds x to within about d/(2·256^(n−1)).
func qmmLimbScale(n int) float32 {
	s := float32(limbScale)
	for range n - 1 {
		s /= 256
	}
	return s
}

// limbRecords holds the records of up to a padded number of token rows for one input width.
type limbRecords struct {
	in, blocks int
	stride     int    // bytes per token row: blocks·recBlockBytes
	buf        []byte // backing store, over-allocated for alignment
	rec        []byte // [tokens, stride], 64-byte aligned
}

// ensure sizes r for t token rows (rounded up to recTile) of width in (a multiple of 512).
func (r *limbRecords) ensure(t, in int) {
	r.in, r.blocks = in, in/(8*GroupSize)
	r.stride = r.blocks * recBlockBytes
	need := (t + recTile - 1) / recTile * recTile * r.stride
	if len(r.buf) < need+qmmVNNIAlign {
		r.buf = make([]byte, need+qmmVNNIAlign)
	}
	off := 0
	if rem := addrOf(r.buf) % qmmVNNIAlign; rem != 0 {
		off = int(qmmVNNIAlign - rem)
	}
	r.rec = r.buf[off : off+need]
}

// fill writes token row t's record from x: [in], using v (a Vec of width in with the limb copy) as
// scratch, with the multiplier pattern for a kernel that reads n limbs.
func (r *limbRecords) fill(t int, x []float32, v *Vec, n int) {
	v.prepareLimbs(x)
	scale := qmmLimbScale(n)
	rec := r.rec[t*r.stride : (t+1)*r.stride]
	for b := range r.blocks {
		blk := rec[b*recBlockBytes : (b+1)*recBlockBytes]
		for p := range 4 {
			pair := 4*b + p
			dst := blk[p*recPairBytes : (p+1)*recPairBytes]
			copy(dst, int8Bytes(v.l8[pair*limbBytes:(pair+1)*limbBytes]))
			pat := float32View(dst[limbBytes:])
			for l := range 8 {
				pat[l] = v.dl[2*pair] * scale
				pat[8+l] = v.dl[2*pair+1] * scale
			}
		}
		sums := float32View(blk[recSumOff:])
		for j := range 8 {
			sums[j], sums[8+j] = limbSum(v, 8*b+j, n), 0
		}
	}
}

// limbSum returns group g's sum of x as the kernel reads x: Σ x̂ over the group, x̂ its first n limbs
// (the integer L_n = Σ_l 256^(n−1−l)·digit_l times the group's pattern value dl·qmmLimbScale(n)).
// The bias term then multiplies the same x̂ as the scale term, so the GEMM computes Σ w·x̂ exactly
// up to float rounding: with the exact Σx instead, the error is scale·Σ q·(x̂ − x), whose q ∈ [0, 15]
// do not centre on zero as the weights w = scale·q + bias do (on the 512-wide conformance model
// through the prefill plan, max |Δlogp| against ref 4.7e-2 with the exact sums, 1.4e-3 with these).
// |L_n| ≤ 64·(127·256+127) < 2^24 over a group, so the float32 product is exact.
func limbSum(v *Vec, g, n int) float32 {
	p, h := g/2, g%2
	blk := v.l8[p*limbBytes : (p+1)*limbBytes]
	var tot int32
	for l := range n {
		var d int32
		for _, e := range blk[128*l+32*h : 128*l+32*h+32] { // even elements
			d += int32(e)
		}
		for _, e := range blk[128*l+64+32*h : 128*l+64+32*h+32] { // odd elements
			d += int32(e)
		}
		tot = tot<<limbShift + d
	}
	return float32(tot) * (v.dl[g] * qmmLimbScale(n))
}

// zero clears token rows [t0, t1) (the padding of the last tile).
func (r *limbRecords) zero(t0, t1 int) {
	clear(r.rec[t0*r.stride : t1*r.stride])
}

// addrOf returns the address of b's first byte (for alignment).
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// int8Bytes views int8s as bytes.
func int8Bytes(x []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// bytesInt8 views bytes as int8s.
func bytesInt8(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// float32View views 4-byte-aligned bytes as float32s (the records are 64-byte aligned and every
// pattern and sum field sits at a multiple of 64 within them).
func float32View(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
