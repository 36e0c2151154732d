package cpu

import (
	"encoding/binary"
	"unsafe"
)

// The integer prefill GEMM (Kernels.QMatMat on AVX-512 VNNI) reads its token rows as "records":
// every token row of X prepared once per call, in the order the assembly tile reads it. Per block
// of 8 groups (512 inputs) a record holds, for each of its 4 pairs of groups, the pair's limbs in
// the mat-vec's layout (limbBytes: a, b, c limbs of the even and odd elements) followed by the
// pair's multiplier pattern (16 float32: lanes 0–7 the first group's limb scale, 8–15 the
// second's), and after the 4 pairs the block's 8 group sums of x as the limbs give it, padded with 8
// zeros (the bias term Σ_g bias_g·Σ_{i∈g} x̂_i, read as one 16-lane vector whose upper half meets
// zero biases; see recordSums).
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
	in, blocks int    // width; blocks of 8 groups (lane layout: steps)
	lanes      int    // 0: the 2-group tile's layout; 1 or 2: the lane GEMM's (rows a unit)
	stride     int    // bytes per token row: blocks·recBlockBytes (lane layout: steps·laneStepBytes)
	buf        []byte // backing store, over-allocated for alignment
	rec        []byte // [tokens, stride], 64-byte aligned
}

// ensure sizes r for t token rows (rounded up to recTile) of width in (a multiple of 512).
func (r *limbRecords) ensure(t, in int) {
	r.lanes = 0
	r.in, r.blocks = in, in/(8*GroupSize)
	r.stride = r.blocks * recBlockBytes
	r.alloc(t)
}

// padded returns t rounded up to the records the kernels read: whole tiles of recTile tokens, and
// in the lane layout also of laneQuadTokens.
func (r *limbRecords) padded(t int) int {
	n := recTile
	if r.lanes != 0 {
		n = recTile * laneQuadTokens
	}
	return (t + n - 1) / n * n
}

// alloc sizes the backing store for t token rows (r.padded(t)) of r.stride bytes.
func (r *limbRecords) alloc(t int) {
	need := r.padded(t) * r.stride
	if len(r.buf) < need+qmmVNNIAlign {
		r.buf = make([]byte, need+qmmVNNIAlign)
	}
	off := 0
	if rem := addrOf(r.buf) % qmmVNNIAlign; rem != 0 {
		off = int(qmmVNNIAlign - rem)
	}
	r.rec = r.buf[off : off+need]
}

// recLimbLayout is the records' limb layout: 4 pairs per block, each followed by its pattern.
func recLimbLayout() limbLayout { return limbLayout{4, recPairBytes, recBlockBytes} }

// fill writes token row t's record from x: [in], using v (a Vec of width in with the limb copy) as
// scratch, with the multiplier pattern and group sums for a kernel that reads n limbs. The limbs go
// straight into the record (Vec.limbsInto), then the patterns and group sums.
func (r *limbRecords) fill(t int, x []float32, v *Vec, n int) {
	rec := r.rec[t*r.stride : (t+1)*r.stride]
	v.limbsInto(bytesInt8(rec), recLimbLayout(), x)
	if !recordPatternsSIMD(rec, v.dl, r.blocks, qmmLimbScale(n), v.lc) {
		recordPatterns(rec, v.dl, r.blocks, qmmLimbScale(n))
	}
	r.sums(rec, v.dl, n)
}

// fillPortable is fill in plain Go (the path of builds and CPUs without the vector kernels).
func (r *limbRecords) fillPortable(rec []byte, x []float32, v *Vec, n int) {
	limbsPortable(v.dl, bytesInt8(rec), recLimbLayout(), x, 4*r.blocks)
	recordPatterns(rec, v.dl, r.blocks, qmmLimbScale(n))
	r.sums(rec, v.dl, n)
}

// sums writes every block's group sums of rec (recordSums).
func (r *limbRecords) sums(rec []byte, dl []float32, n int) {
	for b := range r.blocks {
		blk := rec[b*recBlockBytes : (b+1)*recBlockBytes]
		recordSums((*[16]float32)(float32View(blk[recSumOff:])), blk, dl[8*b:8*b+8], n, qmmLimbScale(n))
	}
}

// recordPatterns writes each pair's multiplier pattern of rec: [blocks·recBlockBytes] from dl:
// [8·blocks] (the groups' limb scales) times scale.
func recordPatterns(rec []byte, dl []float32, blocks int, scale float32) {
	for b := range blocks {
		blk := rec[b*recBlockBytes : (b+1)*recBlockBytes]
		for p := range 4 {
			pat := (*[16]float32)(float32View(blk[p*recPairBytes+limbBytes : (p+1)*recPairBytes]))
			lo, hi := dl[8*b+2*p]*scale, dl[8*b+2*p+1]*scale
			for l := range 8 {
				pat[l], pat[8+l] = lo, hi
			}
		}
	}
}

// recordSums writes blk's 8 group sums of x as the kernel reads x (its first n limbs, already in
// the record) to sums[0:8] and zeros to sums[8:16]: Σ x̂ over each group, the integer
// Σ_l 256^(n−1−l)·Σ digit_l times the group's pattern value dl·scale. The bias term then
// multiplies the same x̂ as the scale term, so the GEMM computes Σ w·x̂ up to float rounding: with
// the exact Σx, its error was scale·Σ q·(x̂ − x), whose q ∈ [0, 15] do not centre on zero as the
// weights w = scale·q + bias do (on the 512-wide conformance model through the prefill plan, max
// |Δlogp| against ref 4.7e-2 with the exact sums, 1.4e-3 with these). The digits are summed eight
// at a time as offset bytes in a uint64. With two limbs |Σ| ≤ 64·(127·256+127) < 2^24 and the
// product is exact; with three it is rounded once.
func recordSums(sums *[16]float32, blk []byte, dl []float32, n int, scale float32) {
	for j := range 8 {
		p, h := j/2, j%2
		var tot int32
		for l := range n {
			d := 0
			for _, off := range [2]int{p*recPairBytes + 128*l + 32*h, p*recPairBytes + 128*l + 64 + 32*h} {
				d += offsetByteSum(blk[off : off+32])
			}
			tot = tot<<limbShift + int32(d-64*128)
		}
		sums[j], sums[8+j] = float32(float64(tot)*float64(dl[j]*scale)), 0
	}
}

// offsetByteSum returns Σ (b[i] ^ 0x80) over 32 bytes (int8 digits as offset bytes, 128 + digit),
// eight at a time: the bytes' 16-bit pair sums accumulate in 4 lanes (≤ 4·2·255, no carry between
// lanes), which one multiply folds into the top lane.
func offsetByteSum(b []byte) int {
	const lo = 0x00FF00FF00FF00FF
	var acc uint64
	for i := 0; i < 32; i += 8 {
		w := binary.LittleEndian.Uint64(b[i:]) ^ 0x8080808080808080
		acc += w&lo + w>>8&lo
	}
	return int(acc * 0x0001000100010001 >> 48)
}

// zero clears token rows [t0, t1) (the padding of the last tile).
func (r *limbRecords) zero(t0, t1 int) {
	clear(r.rec[t0*r.stride : t1*r.stride])
}

// addrOf returns the address of b's first byte (for alignment).
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// bytesInt8 views bytes as int8s.
func bytesInt8(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// int8Bytes views int8s as bytes.
func int8Bytes(x []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// float32View views 4-byte-aligned bytes as float32s (the records are 64-byte aligned and every
// pattern and sum field sits at a multiple of 64 within them).
func float32View(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
