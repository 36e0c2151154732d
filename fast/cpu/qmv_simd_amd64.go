//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// Thread mapping of the SIMD mat-vecs: the pool hands each worker ranges of rows that start at a
// multiple of 8; a worker runs blocks of 8 rows. Per row it converts the bf16 scales to a float32
// table and accumulates the bias term Σ_g bias·Σx as a vector (prepRowSIMD; plain Go in prepRow
// when the group count is not a multiple of 8), then runs the vector loop (one accumulator vector
// per row, broadcast scale per group). The 8 row vectors are reduced to one vector of 8 results and
// stored together.

// scaleTable holds one row block's per-group multipliers (plus padding for bcast's 16-byte load).
type scaleTable [rowBlock][MaxIn/GroupSize + 4]float32

// qmvKind selects the inner loop of qmvBlocksSIMD.
type qmvKind int

const (
	kindQ4   qmvKind = iota
	kindQ8W          // 8-bit weights, float32 activations
	kindQ4A8         // 4-bit weights, int8 activations
)

func qmv4RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) { qmvBlocksSIMD(y, m, v, lo, hi, kindQ4) }
func qmv8RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) { qmvBlocksSIMD(y, m, v, lo, hi, kindQ8W) }
func qmvQ8RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) {
	qmvBlocksSIMD(y, m, v, lo, hi, kindQ4A8)
}

// qmvBlocksSIMD computes rows [lo, hi) of y: [Out] = W: [Out, In] · x: [In] in blocks of 8 rows.
func qmvBlocksSIMD(y []float32, m *QMat, v *Vec, lo, hi int, kind qmvKind) {
	groups, rb := m.Groups(), m.RowBytes()
	var sf scaleTable
	var bt [rowBlock]float32
	var r [rowBlock]archsimd.Float32x8
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
			switch kind {
			case kindQ4:
				r[j] = qmv4Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.p4)))
			case kindQ8W:
				r[j] = qmv8Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.p8)))
			default:
				r[j] = qmvQ8Row(w, &sf[j], groups, unsafe.Pointer(unsafe.SliceData(v.q)))
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
}

// prepRow writes row o's per-group multipliers (scale, or scale·d for int8 activations) into sf and
// returns its bias term Σ_g bias·Σx, in scalar code.
func prepRow(sf *[MaxIn/GroupSize + 4]float32, m *QMat, v *Vec, o int, kind qmvKind) float32 {
	groups := m.Groups()
	sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
	var b float32
	for g := range groups {
		sf[g] = BF16(sc[g])
		if kind == kindQ4A8 {
			sf[g] *= v.d[g]
		}
		b += BF16(bi[g]) * v.sum[g]
	}
	return b
}

// prepRowSIMD is prepRow in vectors for a group count that is a multiple of 8; the bias term comes
// back as a vector whose lanes sum to it.
func prepRowSIMD(sf *[MaxIn/GroupSize + 4]float32, m *QMat, v *Vec, o int, kind qmvKind) archsimd.Float32x8 {
	groups := m.Groups()
	sc := unsafe.Pointer(unsafe.SliceData(m.Scales[o*groups : (o+1)*groups]))
	bi := unsafe.Pointer(unsafe.SliceData(m.Biases[o*groups : (o+1)*groups]))
	sum, d := unsafe.Pointer(unsafe.SliceData(v.sum)), unsafe.Pointer(unsafe.SliceData(v.d))
	c16 := archsimd.BroadcastUint32x8(16)
	var acc archsimd.Float32x8
	for g := 0; g < groups; g += 8 {
		s := bf16x8(unsafe.Add(sc, 2*g), c16)
		if kind == kindQ4A8 {
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
func qmv4Row(w unsafe.Pointer, sf *[MaxIn/GroupSize + 4]float32, groups int, xp unsafe.Pointer) archsimd.Float32x8 {
	mask := archsimd.BroadcastUint32x8(0xF)
	c4 := archsimd.BroadcastUint32x8(4)
	var tot archsimd.Float32x8
	sp, x := unsafe.Pointer(sf), xp
	for end := unsafe.Add(w, 32*groups); w != end; w, x, sp = unsafe.Add(w, 32), unsafe.Add(x, 4*GroupSize), unsafe.Add(sp, 4) {
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

// qmv8Row is qmv4Row for an 8-bit row: a group is two Uint32x8 loads of 4 elements per word; byte k
// of the 8 words is one vector, multiplied with xp (Vec.p8).
func qmv8Row(w unsafe.Pointer, sf *[MaxIn/GroupSize + 4]float32, groups int, xp unsafe.Pointer) archsimd.Float32x8 {
	mask := archsimd.BroadcastUint32x8(0xFF)
	c8 := archsimd.BroadcastUint32x8(8)
	var tot archsimd.Float32x8
	sp, x := unsafe.Pointer(sf), xp
	for end := unsafe.Add(w, 64*groups); w != end; w, x, sp = unsafe.Add(w, 64), unsafe.Add(x, 4*GroupSize), unsafe.Add(sp, 4) {
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

// qmvQ8Row returns a vector whose lanes sum to Σ_g sf[g]·(Σ_{i∈g} q8_i·q_i) for one 4-bit row
// against the int8 activations qp (Vec.q; sf already holds scale·d). Per group the 32 packed bytes
// are one load, split into low and high nibbles (elements 2b and 2b+1); VPMADDUBSW multiplies them
// with the int8 activations (|15·127·2| fits int16), VPMADDWD widens to int32. Two accumulators
// alternate between groups to hide the FMA latency.
func qmvQ8Row(w unsafe.Pointer, sf *[MaxIn/GroupSize + 4]float32, groups int, qp unsafe.Pointer) archsimd.Float32x8 {
	nib := archsimd.BroadcastUint8x32(0x0F)
	ones := archsimd.BroadcastInt16x16(1)
	c4 := archsimd.BroadcastUint32x8(4)
	sp := unsafe.Pointer(sf)
	var t0, t1 archsimd.Float32x8
	// Pointers advance instead of being recomputed from g: fewer integer instructions per group.
	for end := unsafe.Add(w, 32*(groups&^1)); w != end; {
		t0 = q8Group(w, qp, nib, c4, ones).ConvertToFloat32().MulAdd(bcast(sp), t0)
		t1 = q8Group(unsafe.Add(w, 32), unsafe.Add(qp, 64), nib, c4, ones).ConvertToFloat32().MulAdd(bcast(unsafe.Add(sp, 4)), t1)
		w, qp, sp = unsafe.Add(w, 64), unsafe.Add(qp, 128), unsafe.Add(sp, 8)
	}
	if groups&1 != 0 {
		t0 = q8Group(w, qp, nib, c4, ones).ConvertToFloat32().MulAdd(bcast(sp), t0)
	}
	return t0.Add(t1)
}

// q8Group returns the integer dot products of the group at w (32 packed bytes) and qp (64 int8),
// spread over 8 int32 lanes.
func q8Group(w, qp unsafe.Pointer, nib archsimd.Uint8x32, c4 archsimd.Uint32x8, ones archsimd.Int16x16) archsimd.Int32x8 {
	q := archsimd.LoadUint32x8((*[8]uint32)(w))
	ql := q.AsUint8x32().And(nib)
	qh := q.ShiftRight(c4).AsUint8x32().And(nib)
	xl := archsimd.LoadInt8x32((*[32]int8)(qp))
	xh := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(qp, 32)))
	return ql.DotProductPairsSaturated(xl).Add(qh.DotProductPairsSaturated(xh)).DotProductPairs(ones)
}
