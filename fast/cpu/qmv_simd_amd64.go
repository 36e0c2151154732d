//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"

	"github.com/lily-engine/lily/internal/safetensors"
)

// Thread mapping of the SIMD mat-vecs: the pool hands each worker ranges of rows that start at a
// multiple of 8; a worker runs blocks of 8 rows. Per row it converts the bf16 scales to a float32
// table and accumulates the bias term Σ_g bias·Σx as a vector (prepRowSIMD; plain Go in prepRow
// when the group count is not a multiple of 8), then runs the vector loop (one accumulator vector
// per row, broadcast scale per group). The 8 row vectors are reduced to one vector of 8 results and
// stored together.

// scaleTable holds one row block's per-group multipliers.
type scaleTable [rowBlock][sfLen]float32

// sfLen is a row's multiplier table length: one per group, plus padding for the 16-byte load of
// bcast and the 64-byte load of qmv4Row512 at the last group.
const sfLen = MaxIn/GroupSize + 16

// qmvKind selects the inner loop of qmvBlocksSIMD.
type qmvKind int

const (
	kindQ4        qmvKind = iota
	kindQ8W               // 8-bit weights, float32 activations
	kindQ4x512            // 4-bit weights, float32 activations, 512-bit vectors
	kindQ4A16             // 4-bit weights, int16 activations, 256-bit vectors
	kindQ4A16x512         // the same with 512-bit vectors
)

func qmv4RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) { qmvBlocksSIMD(y, m, v, lo, hi, kindQ4) }
func qmv4RowsSIMD512(y []float32, m *QMat, v *Vec, lo, hi int) {
	qmvBlocksSIMD(y, m, v, lo, hi, kindQ4x512)
}
func qmv8RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) { qmvBlocksSIMD(y, m, v, lo, hi, kindQ8W) }
func qmvQ16RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) {
	qmvBlocksSIMD(y, m, v, lo, hi, kindQ4A16)
}
func qmvQ16RowsSIMD512(y []float32, m *QMat, v *Vec, lo, hi int) {
	qmvBlocksSIMD(y, m, v, lo, hi, kindQ4A16x512)
}

// qmvBlocksSIMD computes rows [lo, hi) of y: [Out] = W: [Out, In] · x: [In] in blocks of 8 rows.
func qmvBlocksSIMD(y []float32, m *QMat, v *Vec, lo, hi int, kind qmvKind) {
	groups, rb := m.Groups(), m.RowBytes()
	var sf scaleTable
	var bt [rowBlock]float32
	var r [rowBlock]archsimd.Float32x8
	pc := newPerm512()
	for o0 := lo; o0 < hi; o0 += rowBlock {
		n := min(rowBlock, hi-o0)
		if groups%8 != 0 {
			// Scalar preparation (clean YMM state: storeRows cleared it, as did the caller).
			for j := range n {
				bt[j] = prepRow(&sf[j], m, v, o0+j, kind)
			}
		}
		for j := range n {
			var bias archsimd.Float32x8
			if groups%8 == 0 {
				bias = prepRowSIMD(&sf[j], m, v, o0+j, kind)
			}
			w := unsafe.Pointer(unsafe.SliceData(m.W[(o0+j)*rb : (o0+j+1)*rb]))
			// Rows of 2 KiB or more (inputs ≥ 4096) run in two halves with a prefetch of 16 lines
			// before each: one burst of 32 leaves the kernel waiting for fill buffers (1 KiB rows
			// gain nothing from the split; BenchmarkQMatVec shows it).
			split := kind == kindQ4x512 && rb >= 2048 && groups%4 == 0
			if (o0+j+1)*rb+prefetchAhead <= len(m.W) {
				if split {
					prefetch(unsafe.Add(w, prefetchAhead), rb/128)
				} else {
					prefetch(unsafe.Add(w, prefetchAhead), (rb+63)/64)
				}
			}
			switch kind {
			case kindQ4:
				r[j] = qmv4Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.p4)))
			case kindQ4x512:
				if split {
					h := groups / 2
					a := qmv4Row512(w, &sf[j], h, unsafe.Pointer(unsafe.SliceData(v.p16)), &pc)
					if (o0+j+1)*rb+prefetchAhead <= len(m.W) {
						prefetch(unsafe.Add(w, prefetchAhead+rb/2), rb/128)
					}
					// The second half's multipliers start at sf[j][h]; the kernel reads at most
					// h+16 of them, inside the table (sfLen ≥ 2h+16).
					hs := (*[sfLen]float32)(unsafe.Pointer(&sf[j][h]))
					r[j] = a.Add(qmv4Row512(unsafe.Add(w, rb/2), hs, h, unsafe.Pointer(&v.p16[h*GroupSize]), &pc))
				} else {
					r[j] = qmv4Row512(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.p16)), &pc)
				}
			case kindQ8W:
				r[j] = qmv8Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.p8)))
			case kindQ4A16:
				r[j] = qmvQ16Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.q)))
			default:
				r[j] = qmvQ16Row512(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.q)))
			}
			r[j] = r[j].Add(bias)
		}
		storeRows(y[o0:o0+n], &r, n)
		if groups%8 != 0 {
			for j := range n {
				y[o0+j] += bt[j]
			}
		}
	}
	archsimd.ClearAVXUpperBits() // storeRows cleared, but the loop's code after it may not be clean
}

// prepRow writes row o's per-group multipliers (scale, or scale·d for int16 activations) into sf and
// returns its bias term Σ_g bias·Σx (plus Σ_g scale·corr for int16 activations), in scalar code.
func prepRow(sf *[sfLen]float32, m *QMat, v *Vec, o int, kind qmvKind) float32 {
	groups := m.Groups()
	sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
	var b float32
	for g := range groups {
		sf[g] = safetensors.BF16ToFloat32(sc[g])
		if kind >= kindQ4A16 {
			b += sf[g] * v.corr[g]
			sf[g] *= v.d[g]
		}
		b += safetensors.BF16ToFloat32(bi[g]) * v.sum[g]
	}
	return b
}

// prepRowSIMD is prepRow in vectors for a group count that is a multiple of 8; the bias term comes
// back as a vector whose lanes sum to it.
func prepRowSIMD(sf *[sfLen]float32, m *QMat, v *Vec, o int, kind qmvKind) archsimd.Float32x8 {
	groups := m.Groups()
	sc := unsafe.Pointer(unsafe.SliceData(m.Scales[o*groups : (o+1)*groups]))
	bi := unsafe.Pointer(unsafe.SliceData(m.Biases[o*groups : (o+1)*groups]))
	sum, d := unsafe.Pointer(unsafe.SliceData(v.sum)), unsafe.Pointer(unsafe.SliceData(v.d))
	corr := unsafe.Pointer(unsafe.SliceData(v.corr))
	c16 := archsimd.BroadcastUint32x8(16)
	var acc archsimd.Float32x8
	for g := 0; g < groups; g += 8 {
		s := bf16x8(unsafe.Add(sc, 2*g), c16)
		if kind >= kindQ4A16 {
			acc = s.MulAdd(f32x8(unsafe.Add(corr, 4*g)), acc)
			s = s.Mul(f32x8(unsafe.Add(d, 4*g)))
		}
		s.Store((*[8]float32)(sf[g : g+8]))
		acc = bf16x8(unsafe.Add(bi, 2*g), c16).MulAdd(f32x8(unsafe.Add(sum, 4*g)), acc)
	}
	return acc
}

// qmv4Row returns a vector whose lanes sum to Σ_g sf[g]·(Σ_{i∈g} x_i·q_i) for one 4-bit row at w.
// Per group the 8 packed words are one Uint32x8; nibble k of the 8 words (elements 8j+k) is
// shifted down, masked, converted and multiplied with xp (Vec.p4, x in that order).
func qmv4Row(w unsafe.Pointer, sf *[sfLen]float32, groups int, xp unsafe.Pointer) archsimd.Float32x8 {
	mask := archsimd.BroadcastUint32x8(0xF)
	c4 := archsimd.BroadcastUint32x8(4)
	var tot archsimd.Float32x8
	// Pointers by index, never one past the end: checkptr (-race) rejects that.
	w0, sf0 := w, unsafe.Pointer(sf)
	for g := range groups {
		w, x, sp := unsafe.Add(w0, 32*g), unsafe.Add(xp, 4*GroupSize*g), unsafe.Add(sf0, 4*g)
		q := archsimd.LoadUint32x8((*[8]uint32)(w))
		a0 := q.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(x))
		q = q.ShiftRight(c4)
		a1 := q.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(unsafe.Add(x, 32)))
		q = q.ShiftRight(c4)
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 64)), a0)
		q = q.ShiftRight(c4)
		a1 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 96)), a1)
		q = q.ShiftRight(c4)
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 128)), a0)
		q = q.ShiftRight(c4)
		a1 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 160)), a1)
		q = q.ShiftRight(c4)
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 192)), a0)
		q = q.ShiftRight(c4)
		a1 = q.AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 224)), a1)
		tot = a0.Add(a1).MulAdd(bcast(sp), tot)
	}
	return tot
}

// qmv4Row512 is qmv4Row with 512-bit vectors (AVX-512) over pairs of groups: a pair's 64 packed
// bytes are one vector of 16 words (lanes 0–7 the first group, 8–15 the second). Nibble k of every
// word is looked up in the table 0…15 (VPERMPS reads only the low 4 bits of each index, so the
// word shifted down by 4k needs no mask and no integer-to-float conversion) and multiplied with
// xp (Vec.p16, x in that order); the two groups' scales are spread over their 8 lanes each by one
// more VPERMPS. About 26 vector instructions per 128 weights against 34 for unpacking through
// VPMOVZXBD and VCVTDQ2PS, for the same exact float32 products (BenchmarkQMatVecCPU/simd). An odd last
// group runs the 256-bit loop (Vec.p16 holds it in the p4 order).
func qmv4Row512(w unsafe.Pointer, sf *[sfLen]float32, groups int, xp unsafe.Pointer, pc *perm512) archsimd.Float32x8 {
	tbl, pair := archsimd.LoadFloat32x16(&pc.tbl), archsimd.LoadUint32x16(&pc.pair)
	c4 := archsimd.BroadcastUint32x16(4)
	var tot archsimd.Float32x16
	w0, sf0 := w, unsafe.Pointer(sf)
	for g := 0; g+1 < groups; g += 2 {
		w, x, sp := unsafe.Add(w0, 32*g), unsafe.Add(xp, 4*GroupSize*g), unsafe.Add(sf0, 4*g)
		q := archsimd.LoadUint32x16((*[16]uint32)(w))
		a0 := tbl.Permute(q).Mul(f32x16(x))
		q = q.ShiftRight(c4)
		a1 := tbl.Permute(q).Mul(f32x16(unsafe.Add(x, 64)))
		q = q.ShiftRight(c4)
		a0 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 128)), a0)
		q = q.ShiftRight(c4)
		a1 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 192)), a1)
		q = q.ShiftRight(c4)
		a0 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 256)), a0)
		q = q.ShiftRight(c4)
		a1 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 320)), a1)
		q = q.ShiftRight(c4)
		a0 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 384)), a0)
		q = q.ShiftRight(c4)
		a1 = tbl.Permute(q).MulAdd(f32x16(unsafe.Add(x, 448)), a1)
		tot = a0.Add(a1).MulAdd(f32x16(sp).Permute(pair), tot)
	}
	r := tot.GetLo().Add(tot.GetHi())
	if g := groups - 1; groups&1 != 0 {
		r = r.Add(qmv4Row(unsafe.Add(w0, 32*g), (*[sfLen]float32)(unsafe.Add(sf0, 4*g)), 1, unsafe.Add(xp, 4*GroupSize*g)))
	}
	return r
}

// perm512 holds qmv4Row512's constants: tbl, the float32 value of each 4-bit code, and pair, the
// indices that spread a pair of group scales over lanes 0–7 and 8–15. qmvBlocksSIMD fills one on
// entry (scalar stores while the vector state is still clean) and the kernel loads them per row.
type perm512 struct {
	tbl  [16]float32
	pair [16]uint32
}

func newPerm512() perm512 {
	return perm512{
		tbl:  [16]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		pair: [16]uint32{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
	}
}

// f32x16 loads 16 float32 at p.
func f32x16(p unsafe.Pointer) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(p))
}

// qmv8Row is qmv4Row for an 8-bit row: a group is two Uint32x8 loads of 4 elements per word; byte k
// of the 8 words is one vector, multiplied with xp (Vec.p8).
func qmv8Row(w unsafe.Pointer, sf *[sfLen]float32, groups int, xp unsafe.Pointer) archsimd.Float32x8 {
	mask := archsimd.BroadcastUint32x8(0xFF)
	c8 := archsimd.BroadcastUint32x8(8)
	var tot archsimd.Float32x8
	w0, sf0 := w, unsafe.Pointer(sf)
	for g := range groups {
		w, x, sp := unsafe.Add(w0, 64*g), unsafe.Add(xp, 4*GroupSize*g), unsafe.Add(sf0, 4*g)
		q := archsimd.LoadUint32x8((*[8]uint32)(w))
		a0 := q.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(x))
		q = q.ShiftRight(c8)
		a1 := q.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(unsafe.Add(x, 32)))
		q = q.ShiftRight(c8)
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 64)), a0)
		q = q.ShiftRight(c8)
		a1 = q.AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 96)), a1)
		q = archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(w, 32)))
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 128)), a0)
		q = q.ShiftRight(c8)
		a1 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 160)), a1)
		q = q.ShiftRight(c8)
		a0 = q.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 192)), a0)
		q = q.ShiftRight(c8)
		a1 = q.AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 224)), a1)
		tot = a0.Add(a1).MulAdd(bcast(sp), tot)
	}
	return tot
}

// qmvQ16Row returns a vector whose lanes sum to Σ_g sf[g]·(Σ_{i∈g} q16_i·q_i) for one 4-bit row
// against the int16 activations qp (Vec.q; sf already holds scale·d), with 256-bit vectors. Per
// group the 32 packed bytes are two 16-byte loads widened to 16-bit lanes, split into low and high
// nibbles (elements 2b and 2b+1); VPMADDWD multiplies them with the int16 activations and adds
// pairs in int32 (|2·15·32767| fits easily). Two accumulators alternate between groups to hide the
// FMA latency.
func qmvQ16Row(w unsafe.Pointer, sf *[sfLen]float32, groups int, qp unsafe.Pointer) archsimd.Float32x8 {
	nib, c4 := archsimd.BroadcastUint16x16(0x0F), archsimd.BroadcastUint16x16(1<<12)
	w0, qp0, sf0 := w, qp, unsafe.Pointer(sf)
	var t0, t1 archsimd.Float32x8
	for g := 0; g+1 < groups; g += 2 {
		w, qp, sp := unsafe.Add(w0, 32*g), unsafe.Add(qp0, 128*g), unsafe.Add(sf0, 4*g)
		t0 = q16Group(w, qp, nib, c4).ConvertToFloat32().MulAdd(bcast(sp), t0)
		t1 = q16Group(unsafe.Add(w, 32), unsafe.Add(qp, 128), nib, c4).ConvertToFloat32().MulAdd(bcast(unsafe.Add(sp, 4)), t1)
	}
	if g := groups - 1; groups&1 != 0 {
		t0 = q16Group(unsafe.Add(w0, 32*g), unsafe.Add(qp0, 128*g), nib, c4).ConvertToFloat32().MulAdd(bcast(unsafe.Add(sf0, 4*g)), t0)
	}
	return t0.Add(t1)
}

// q16Group returns the integer dot products of the group at w (32 packed bytes) and qp (64 int16:
// the even elements, then the odd ones), spread over 8 int32 lanes. The high nibble is the high
// half of b·4096 (VPMULHUW): AVX2 has no per-lane 16-bit shift, and a shift by a count in a general
// register would go through a legacy SSE move (see simd_amd64.go).
func q16Group(w, qp unsafe.Pointer, nib, c4 archsimd.Uint16x16) archsimd.Int32x8 {
	b0 := archsimd.LoadUint8x16((*[16]uint8)(w)).ExtendToUint16()
	b1 := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(w, 16))).ExtendToUint16()
	s := b0.And(nib).AsInt16x16().DotProductPairs(i16x16(qp))
	s = s.Add(b1.And(nib).AsInt16x16().DotProductPairs(i16x16(unsafe.Add(qp, 32))))
	s = s.Add(b0.MulHigh(c4).AsInt16x16().DotProductPairs(i16x16(unsafe.Add(qp, 64))))
	return s.Add(b1.MulHigh(c4).AsInt16x16().DotProductPairs(i16x16(unsafe.Add(qp, 96))))
}

// qmvQ16Row512 is qmvQ16Row with 512-bit vectors (AVX-512BW): a group is one 32-byte load widened
// to 32 16-bit lanes, two VPMADDWD and one add; the 16-lane float accumulators fold to 8 lanes at
// the end.
func qmvQ16Row512(w unsafe.Pointer, sf *[sfLen]float32, groups int, qp unsafe.Pointer) archsimd.Float32x8 {
	nib, c4 := archsimd.BroadcastUint16x32(0x0F), archsimd.BroadcastUint16x32(4)
	w0, qp0, sf0 := w, qp, unsafe.Pointer(sf)
	var t0, t1 archsimd.Float32x16
	for g := 0; g+1 < groups; g += 2 {
		w, qp, sp := unsafe.Add(w0, 32*g), unsafe.Add(qp0, 128*g), unsafe.Add(sf0, 4*g)
		t0 = q16Group512(w, qp, nib, c4).ConvertToFloat32().MulAdd(bcast16(sp), t0)
		t1 = q16Group512(unsafe.Add(w, 32), unsafe.Add(qp, 128), nib, c4).ConvertToFloat32().MulAdd(bcast16(unsafe.Add(sp, 4)), t1)
	}
	if g := groups - 1; groups&1 != 0 {
		t0 = q16Group512(unsafe.Add(w0, 32*g), unsafe.Add(qp0, 128*g), nib, c4).ConvertToFloat32().MulAdd(bcast16(unsafe.Add(sf0, 4*g)), t0)
	}
	t := t0.Add(t1)
	return t.GetLo().Add(t.GetHi())
}

// q16Group512 is q16Group over 16 int32 lanes; the high nibble comes from VPSRLVW (c4: 4 in every
// lane).
func q16Group512(w, qp unsafe.Pointer, nib, c4 archsimd.Uint16x32) archsimd.Int32x16 {
	b := archsimd.LoadUint8x32((*[32]uint8)(w)).ExtendToUint16()
	lo := b.And(nib).AsInt16x32().DotProductPairs(archsimd.LoadInt16x32((*[32]int16)(qp)))
	return lo.Add(b.ShiftRight(c4).AsInt16x32().DotProductPairs(archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(qp, 64)))))
}

// i16x16 loads 16 int16 at p.
func i16x16(p unsafe.Pointer) archsimd.Int16x16 {
	return archsimd.LoadInt16x16((*[16]int16)(p))
}

// bcast16 loads the float32 at p into all 16 lanes (p must have 3 readable float32 after it).
func bcast16(p unsafe.Pointer) archsimd.Float32x16 {
	return archsimd.LoadFloat32x4((*[4]float32)(p)).Broadcast1To16()
}
