package cpu

import "math"

// Vec is an input vector prepared once for every quantized mat-vec that reads it (the same
// normalized hidden state feeds the q/k/v, router and all expert projections).
//
// Prepare fills, for x: [In]:
//   - x: the values as given;
//   - sum: [In/64] Σ x over each group, for the bias term of the fused dequantization;
//   - p4, p8: x permuted into the order in which the SIMD kernels unpack 4-bit and 8-bit words
//     (p8 only once an 8-bit matrix reads the Vec: see fillP8);
//   - p16: x per pair of groups in the order in which the 512-bit 4-bit kernel unpacks a pair's 64
//     packed bytes (see permute16; an odd last group is in the p4 order);
//   - q, d: x quantized to int16 per group of 64 (x ≈ d[g]·q), in the 4-bit unpack order, for the
//     Q16 kernel, and corr: [In/64] qMid·(Σx − d·Σq), the rounding error of the int16 copy
//     that a weight at the middle of the 4-bit range would see (see PrepareQ16);
//   - l8, dl: x per pair of groups as three int8 limbs, and the limbs' scale per group, for the
//     VNNI kernel (see prepareLimbs); nil in a Vec from a Kernels.NewVec whose kernels do not
//     read them.
//
// A Vec is owned by one goroutine; the kernels only read it.
type Vec struct {
	n     int
	x     []float32
	sum   []float32
	p4    []float32
	p16   []float32
	p8    []float32
	q     []int16
	d     []float32
	corr  []float32
	l8    []int8
	dl    []float32
	inv   []float64 // limbsSIMD's scratch: 65536/d per group
	lanes []float32 // limbsSIMD's scratch: 16 lanes of max|x| per group, padded with zeros to a multiple of 16 groups
	lc    *limbConsts
	hasQ  bool
	hasP8 bool // p8 holds x's 8-bit order (fillP8)
	// floatQ4: Prepare fills p4 and p16. Only a Vec of the VNNI kernels (Kernels.NewVec) whose
	// width is whole 8-group blocks goes without: those kernels read the limbs for every 4-bit
	// row of that width, and the orders cost a third of Prepare on the decode path's serial side.
	floatQ4 bool
}

// NewVec allocates a Vec for inputs of length n (a multiple of 64) that every kernel can read,
// the VNNI mat-vec's limbs included. [Kernels.NewVec] leaves them out where its kernels do not
// read them.
func NewVec(n int) *Vec { return newVec(n, true) }

// newVec allocates a Vec; limbs says whether it carries (and Prepare fills) the limb copy.
func newVec(n int, limbs bool) *Vec {
	g := n / GroupSize
	v := &Vec{
		n: n, x: make([]float32, n), sum: make([]float32, g),
		p4: make([]float32, n), p8: make([]float32, n), p16: make([]float32, n),
		q: make([]int16, n), d: make([]float32, g), corr: make([]float32, g),
		floatQ4: true,
	}
	if limbs {
		v.l8, v.dl = make([]int8, g/2*limbBytes), make([]float32, g)
		v.lc = newLimbConsts()
		v.inv, v.lanes = make([]float64, g), make([]float32, 16*((g+15)/16*16)) // whole rows of 16 groups
	}
	return v
}

// Len returns the input length.
func (v *Vec) Len() int { return v.n }

// Prepare loads x: [n] into v (everything except the int16 copy). It allocates nothing.
func (v *Vec) Prepare(x []float32) {
	if len(x) != v.n {
		panic("cpu: Vec.Prepare: length mismatch")
	}
	copy(v.x, x)
	v.hasQ, v.hasP8 = false, false
	groupSums(v.sum, x)
	if v.floatQ4 {
		for g := range v.sum {
			permute4(v.p4[g*GroupSize:(g+1)*GroupSize], x[g*GroupSize:(g+1)*GroupSize])
		}
	}
	if v.l8 != nil {
		v.prepareLimbs(x)
	}
	if !v.floatQ4 {
		return
	}
	pairs := len(v.sum) / 2
	for p := range pairs {
		permute16(v.p16[p*2*GroupSize:(p+1)*2*GroupSize], x[p*2*GroupSize:(p+1)*2*GroupSize])
	}
	if len(v.sum)%2 != 0 {
		copy(v.p16[pairs*2*GroupSize:], v.p4[pairs*2*GroupSize:])
	}
}

// fillP8 fills p8 from x if a Prepare since the last fill has not: only the router and the shared
// expert's gate (8-bit matrices) read it, and Prepare runs on decode's serial side for every input.
// Kernels call it before a dispatch (checkMV), on the goroutine that owns the Vec.
func (v *Vec) fillP8() {
	if v.hasP8 {
		return
	}
	for g := range v.sum {
		permute8(v.p8[g*GroupSize:(g+1)*GroupSize], v.x[g*GroupSize:(g+1)*GroupSize])
	}
	v.hasP8 = true
}

// groupSumsPortable writes Σ x over each group of 64 to sum, in order.
func groupSumsPortable(sum, x []float32) {
	for g := range sum {
		var s float32
		for _, e := range x[g*GroupSize : (g+1)*GroupSize] {
			s += e
		}
		sum[g] = s
	}
}

// qMid is the middle of the 4-bit weight range [0, 15] (see PrepareQ16).
const qMid = 7.5

// q16Max is the largest int16 magnitude PrepareQ16 uses: x ≈ d·q with |q| ≤ q16Max.
const q16Max = 32767

// PrepareQ16 also fills the int16 copy: per group, d = max|x|/32767 and q = round(x/d), stored as
// the 32 even-indexed elements followed by the 32 odd-indexed ones (the order of the low and high
// nibbles of the group's 32 packed bytes). The rounding error is at most d/2 = max|x|/65534 per
// element, a relative 1.5e-5 of the group's largest activation.
//
// The error a 4-bit row sees is Σ_i scale·q_i·e_i with e_i = x_i − d·q16_i. Writing q_i = qMid +
// (q_i − qMid), the qMid part is scale·qMid·Σe, the same for every row: corr holds qMid·Σe per group
// and the kernels add scale·corr, so only Σ scale·(q_i − qMid)·e_i is left — about half the error
// on uniformly spread 4-bit weights.
func (v *Vec) PrepareQ16(x []float32) {
	v.Prepare(x)
	for g := range v.d {
		xs := x[g*GroupSize : (g+1)*GroupSize]
		var amax float32
		for _, e := range xs {
			amax = max(amax, float32(math.Abs(float64(e))))
		}
		d := amax / q16Max
		v.d[g] = d
		var inv float64 // in float64 so that |x − d·q| ≤ d/2 holds exactly
		if d != 0 {
			inv = 1 / float64(d)
		}
		q := v.q[g*GroupSize : (g+1)*GroupSize]
		var e float64 // Σ (x − d·q16), exactly enough in float64
		for j := range 32 {
			q[j] = int16(max(-q16Max, min(q16Max, math.RoundToEven(float64(xs[2*j])*inv))))
			q[32+j] = int16(max(-q16Max, min(q16Max, math.RoundToEven(float64(xs[2*j+1])*inv))))
			e += float64(xs[2*j]) - float64(d)*float64(q[j]) + float64(xs[2*j+1]) - float64(d)*float64(q[32+j])
		}
		v.corr[g] = float32(qMid * e)
	}
	v.hasQ = true
}
