//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"

	"github.com/lily-engine/lily/internal/safetensors"
)

// groupTable holds one row's per-group scales (row 0) and biases (row 1) as float32, padded for
// bcast and for dequantRow4x512's 16-wide load at the last pair.
type groupTable [2][MaxIn/GroupSize + 16]float32

// dequantRowSIMD writes row o of m dequantized (scale·q + bias, float32) into dst in unpack order
// (permute4/permute8 order within each group). The scalar scale conversion runs first, in clean
// YMM state.
func dequantRowSIMD(dst []float32, m *QMat, o int, tb *groupTable) {
	groups, rb := m.Groups(), m.RowBytes()
	archsimd.ClearAVXUpperBits()
	for g := range groups {
		tb[0][g] = safetensors.BF16ToFloat32(m.Scales[o*groups+g])
		tb[1][g] = safetensors.BF16ToFloat32(m.Biases[o*groups+g])
	}
	row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
	pd := unsafe.Pointer(unsafe.SliceData(dst[:m.In]))
	if m.Bits == 4 {
		mask, c4 := archsimd.BroadcastUint32x8(0xF), archsimd.BroadcastUint32x8(4)
		for g := range groups {
			s, b := bcast(unsafe.Pointer(&tb[0][g])), bcast(unsafe.Pointer(&tb[1][g]))
			q := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*32)))
			d := unsafe.Add(pd, 4*g*GroupSize)
			for k := range 8 {
				q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(s, b).Store((*[8]float32)(unsafe.Add(d, 32*k)))
				q = q.ShiftRight(c4)
			}
		}
		return
	}
	mask, c8 := archsimd.BroadcastUint32x8(0xFF), archsimd.BroadcastUint32x8(8)
	for g := range groups {
		s, b := bcast(unsafe.Pointer(&tb[0][g])), bcast(unsafe.Pointer(&tb[1][g]))
		for h := range 2 {
			q := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*64+32*h)))
			d := unsafe.Add(pd, 4*(g*GroupSize+32*h))
			for k := range 4 {
				q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(s, b).Store((*[8]float32)(unsafe.Add(d, 32*k)))
				q = q.ShiftRight(c8)
			}
		}
	}
}

// dequantRow4x512 is dequantRowSIMD for a 4-bit row with 512-bit vectors, a pair of groups per
// 64-byte load as in qmv4Row512: nibble k of each word is looked up in the table 0…15 (VPERMPS
// reads the low 4 bits of the word shifted down by 4k), then one FMA with the pair's scales and
// biases (each spread over its group's 8 lanes) gives both groups' 8 values for that k, stored as
// two 8-lane halves at their places in the unpack order. An odd last group runs dequantRowSIMD's
// 256-bit loop.
func dequantRow4x512(dst []float32, m *QMat, o int, tb *groupTable, pc *perm512) {
	groups, rb := m.Groups(), m.RowBytes()
	archsimd.ClearAVXUpperBits()
	for g := range groups {
		tb[0][g] = safetensors.BF16ToFloat32(m.Scales[o*groups+g])
		tb[1][g] = safetensors.BF16ToFloat32(m.Biases[o*groups+g])
	}
	row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
	pd := unsafe.Pointer(unsafe.SliceData(dst[:m.In]))
	tbl, pair := archsimd.LoadFloat32x16(&pc.tbl), archsimd.LoadUint32x16(&pc.pair)
	c4 := archsimd.BroadcastUint32x16(4)
	g := 0
	for ; g+2 <= groups; g += 2 {
		s := f32x16(unsafe.Pointer(&tb[0][g])).Permute(pair)
		b := f32x16(unsafe.Pointer(&tb[1][g])).Permute(pair)
		q := archsimd.LoadUint32x16((*[16]uint32)(unsafe.Add(row, g*32)))
		d0 := unsafe.Add(pd, 4*g*GroupSize)
		d1 := unsafe.Add(d0, 4*GroupSize)
		for k := range 8 {
			v := tbl.Permute(q).MulAdd(s, b)
			v.GetLo().Store((*[8]float32)(unsafe.Add(d0, 32*k)))
			v.GetHi().Store((*[8]float32)(unsafe.Add(d1, 32*k)))
			q = q.ShiftRight(c4)
		}
	}
	if g < groups {
		mask, c4 := archsimd.BroadcastUint32x8(0xF), archsimd.BroadcastUint32x8(4)
		s, b := bcast(unsafe.Pointer(&tb[0][g])), bcast(unsafe.Pointer(&tb[1][g]))
		q := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*32)))
		d := unsafe.Add(pd, 4*g*GroupSize)
		for k := range 8 {
			q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(s, b).Store((*[8]float32)(unsafe.Add(d, 32*k)))
			q = q.ShiftRight(c4)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// qmmRowsSIMD computes rows [lo, hi) of Y: [T, Out] = X: [T, In] · Wᵀ, X in unpack order.
// Thread mapping: one worker per range of 4-row blocks. Per block: dequantize the 4 rows into buf
// (4 × In float32, L1/L2-resident), then a 4-row × 2-token register tile (8 accumulators, 6 loads
// per 8 FMAs) runs over In for each pair of tokens; the 8 sums leave as one vector.
func qmmRowsSIMD(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int) {
	qmmRowBlocks(y, m, x, t, buf, lo, hi, tile4x2, false)
}

// qmmRowsSIMD512 is qmmRowsSIMD with the 512-bit register tile (tile4x2x512) and, for 4-bit
// matrices, the 512-bit dequantization (dequantRow4x512).
func qmmRowsSIMD512(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int) {
	qmmRowBlocks(y, m, x, t, buf, lo, hi, tile4x2x512, true)
}

// qmmRowBlocks is the row-block mat-mat with the given 4-row × 2-token tile.
func qmmRowBlocks(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int,
	tile func(pw unsafe.Pointer, in int, x0, x1 unsafe.Pointer, y0, y1 *[4]float32), wide bool) {
	in, out := m.In, m.Out
	px := unsafe.Pointer(unsafe.SliceData(x))
	var tb groupTable
	pc := newPerm512()
	if wide && in%16 == 0 && t >= 4 && len(buf) >= qmmWideRows*in && archsimd.X86.AVX512() {
		lo = qmmWideBlocks(y, m, x, t, buf, lo, hi, &tb, &pc)
	}
	for o0 := lo; o0 < hi; o0 += qmmRowBlock {
		n := min(qmmRowBlock, hi-o0)
		dequantRows(buf, m, o0, n, wide, &tb, &pc)
		tt := 0
		if n == qmmRowBlock {
			pw := unsafe.Pointer(unsafe.SliceData(buf[:4*in]))
			for ; tt+2 <= t; tt += 2 {
				tile(pw, in, unsafe.Add(px, 4*tt*in), unsafe.Add(px, 4*(tt+1)*in),
					(*[4]float32)(y[tt*out+o0:]), (*[4]float32)(y[(tt+1)*out+o0:]))
			}
		}
		dotRows(y, out, o0, n, buf, x, in, tt, t)
	}
	archsimd.ClearAVXUpperBits()
}

// dequantRows writes rows [o0, o0+n) of m into buf, dequantized in the order X is permuted to
// (the 512-bit 4-bit unpack where wide).
func dequantRows(buf []float32, m *QMat, o0, n int, wide bool, tb *groupTable, pc *perm512) {
	in := m.In
	for j := range n {
		if wide && m.Bits == 4 {
			dequantRow4x512(buf[j*in:(j+1)*in], m, o0+j, tb, pc)
		} else {
			dequantRowSIMD(buf[j*in:(j+1)*in], m, o0+j, tb)
		}
	}
}

// dotRows computes Y's rows [o0, o0+n) for tokens [t0, t) by dot products with the n dequantized
// rows in buf (the tokens no tile took).
func dotRows(y []float32, out, o0, n int, buf, x []float32, in, t0, t int) {
	for tt := t0; tt < t; tt++ {
		for j := range n {
			y[tt*out+o0+j] = dotSIMD(buf[j*in:(j+1)*in], x[tt*in:(tt+1)*in])
		}
	}
}

// qmmWideRows is how many rows qmmWideBlocks dequantizes together: each pass of the token rows
// then feeds 16 rows (4 key quads of scoreQuads), where a 4-row block reads every token row once
// per 4 rows (BenchmarkQMatMat/q8_256x2048_router).
const qmmWideRows = 16

// qmmWideBlocks runs qmmRowBlocks' whole blocks of qmmWideRows rows from lo: each dequantized into
// buf, then every 4 token rows against them in the attention score tile (scoreQuads: per 16
// dimensions 8 loads for 16 FMAs, where tile4x2x512 spends 6 for 8), straight into Y, and the last
// t mod 4 tokens by dot products. It returns the first row it left.
func qmmWideBlocks(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int, tb *groupTable, pc *perm512) int {
	in, out := m.In, m.Out
	for ; lo+qmmWideRows <= hi; lo += qmmWideRows {
		dequantRows(buf, m, lo, qmmWideRows, true, tb, pc)
		tt := 0
		for ; tt+4 <= t; tt += 4 {
			scoreQuads(&y[tt*out+lo], 4*out, &x[tt*in], 4*in, &buf[0], 4*in, in, qmmWideRows/4)
		}
		dotRows(y, out, lo, qmmWideRows, buf, x, in, tt, t)
	}
	return lo
}

// tile4x2 computes y0[r] = Σ_i w_r[i]·x0[i] and y1[r] = Σ_i w_r[i]·x1[i] for the 4 dequantized rows
// w_r = pw[r·in:] (in a multiple of 8): 8 accumulators, 6 loads per 8 FMAs. It is a separate small
// function so that the compiler keeps every accumulator in a register.
func tile4x2(pw unsafe.Pointer, in int, x0, x1 unsafe.Pointer, y0, y1 *[4]float32) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	for i := 0; i < 4*in; i += 32 {
		a, b := f32x8(unsafe.Add(x0, i)), f32x8(unsafe.Add(x1, i))
		w := f32x8(unsafe.Add(pw, i))
		c00, c01 = w.MulAdd(a, c00), w.MulAdd(b, c01)
		w = f32x8(unsafe.Add(pw, 4*in+i))
		c10, c11 = w.MulAdd(a, c10), w.MulAdd(b, c11)
		w = f32x8(unsafe.Add(pw, 8*in+i))
		c20, c21 = w.MulAdd(a, c20), w.MulAdd(b, c21)
		w = f32x8(unsafe.Add(pw, 12*in+i))
		c30, c31 = w.MulAdd(a, c30), w.MulAdd(b, c31)
	}
	r := [8]archsimd.Float32x8{}
	r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7] = c00, c10, c20, c30, c01, c11, c21, c31
	s := reduce8(&r)
	s.GetLo().Store(y0)
	s.GetHi().Store(y1)
}

// tile4x2x512 is tile4x2 with 16-lane vectors (AVX-512; in a multiple of 64): two 512-bit FMAs a
// cycle against the two 256-bit ones tile4x2 gets, from the same 6 loads per 8 FMAs. The loop runs
// four 16-element steps per pass (written out: Go does not unroll) over running pointers: Go's FMA
// writes its first multiplicand, so every step costs register copies besides the FMAs, and the
// accumulators move back to their registers at the end of each pass; with one step per pass the
// front end, not the FMA ports, would be the limit (BenchmarkQMatMat). The 16-lane accumulators
// fold to 8 lanes before the reduction.
func tile4x2x512(pw unsafe.Pointer, in int, x0, x1 unsafe.Pointer, y0, y1 *[4]float32) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	rs := uintptr(4 * in)
	w0, w1, w2, w3 := pw, unsafe.Add(pw, rs), unsafe.Add(pw, 2*rs), unsafe.Add(pw, 3*rs)
	// The pointers advance only while a pass remains: one past the end could be another
	// allocation, which checkptr (-race) rejects.
	for pass := in / 64; ; pass-- {
		var a, b, w archsimd.Float32x16
		a, b = f32x16(unsafe.Add(x0, 0)), f32x16(unsafe.Add(x1, 0))
		w = f32x16(unsafe.Add(w0, 0))
		c00, c01 = w.MulAdd(a, c00), w.MulAdd(b, c01)
		w = f32x16(unsafe.Add(w1, 0))
		c10, c11 = w.MulAdd(a, c10), w.MulAdd(b, c11)
		w = f32x16(unsafe.Add(w2, 0))
		c20, c21 = w.MulAdd(a, c20), w.MulAdd(b, c21)
		w = f32x16(unsafe.Add(w3, 0))
		c30, c31 = w.MulAdd(a, c30), w.MulAdd(b, c31)
		a, b = f32x16(unsafe.Add(x0, 64)), f32x16(unsafe.Add(x1, 64))
		w = f32x16(unsafe.Add(w0, 64))
		c00, c01 = w.MulAdd(a, c00), w.MulAdd(b, c01)
		w = f32x16(unsafe.Add(w1, 64))
		c10, c11 = w.MulAdd(a, c10), w.MulAdd(b, c11)
		w = f32x16(unsafe.Add(w2, 64))
		c20, c21 = w.MulAdd(a, c20), w.MulAdd(b, c21)
		w = f32x16(unsafe.Add(w3, 64))
		c30, c31 = w.MulAdd(a, c30), w.MulAdd(b, c31)
		a, b = f32x16(unsafe.Add(x0, 128)), f32x16(unsafe.Add(x1, 128))
		w = f32x16(unsafe.Add(w0, 128))
		c00, c01 = w.MulAdd(a, c00), w.MulAdd(b, c01)
		w = f32x16(unsafe.Add(w1, 128))
		c10, c11 = w.MulAdd(a, c10), w.MulAdd(b, c11)
		w = f32x16(unsafe.Add(w2, 128))
		c20, c21 = w.MulAdd(a, c20), w.MulAdd(b, c21)
		w = f32x16(unsafe.Add(w3, 128))
		c30, c31 = w.MulAdd(a, c30), w.MulAdd(b, c31)
		a, b = f32x16(unsafe.Add(x0, 192)), f32x16(unsafe.Add(x1, 192))
		w = f32x16(unsafe.Add(w0, 192))
		c00, c01 = w.MulAdd(a, c00), w.MulAdd(b, c01)
		w = f32x16(unsafe.Add(w1, 192))
		c10, c11 = w.MulAdd(a, c10), w.MulAdd(b, c11)
		w = f32x16(unsafe.Add(w2, 192))
		c20, c21 = w.MulAdd(a, c20), w.MulAdd(b, c21)
		w = f32x16(unsafe.Add(w3, 192))
		c30, c31 = w.MulAdd(a, c30), w.MulAdd(b, c31)
		if pass == 1 {
			break
		}
		x0, x1 = unsafe.Add(x0, 256), unsafe.Add(x1, 256)
		w0, w1, w2, w3 = unsafe.Add(w0, 256), unsafe.Add(w1, 256), unsafe.Add(w2, 256), unsafe.Add(w3, 256)
	}
	r := [8]archsimd.Float32x8{}
	r[0], r[1], r[2], r[3] = c00.GetLo().Add(c00.GetHi()), c10.GetLo().Add(c10.GetHi()), c20.GetLo().Add(c20.GetHi()), c30.GetLo().Add(c30.GetHi())
	r[4], r[5], r[6], r[7] = c01.GetLo().Add(c01.GetHi()), c11.GetLo().Add(c11.GetHi()), c21.GetLo().Add(c21.GetHi()), c31.GetLo().Add(c31.GetHi())
	s := reduce8(&r)
	s.GetLo().Store(y0)
	s.GetHi().Store(y1)
}
