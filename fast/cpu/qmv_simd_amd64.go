//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// qmv4RowsSIMD is qmvRowsPortable for 4-bit weights, rows [lo, hi).
// y: [Out] = W: [Out, In] · x: [In]. One goroutine per row range; per group of 64 it loads the 8
// packed words once as a Uint32x8, and nibble k of the 8 words (elements 8j+k) is masked out,
// converted to float32 and multiplied with Vec.p4, which holds x in that order.
func qmv4RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	mask := archsimd.BroadcastUint32x8(0xF)
	xp := unsafe.Pointer(unsafe.SliceData(v.p4))
	for o := lo; o < hi; o++ {
		row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
		sc := m.Scales[o*groups : (o+1)*groups]
		var tot archsimd.Float32x8
		for g := range groups {
			w := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*32)))
			x := unsafe.Add(xp, g*GroupSize*4)
			a0 := w.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(x))
			a1 := w.ShiftAllRight(4).And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(unsafe.Add(x, 32)))
			a0 = w.ShiftAllRight(8).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 64)), a0)
			a1 = w.ShiftAllRight(12).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 96)), a1)
			a0 = w.ShiftAllRight(16).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 128)), a0)
			a1 = w.ShiftAllRight(20).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 160)), a1)
			a0 = w.ShiftAllRight(24).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 192)), a0)
			a1 = w.ShiftAllRight(28).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 224)), a1)
			tot = a0.Add(a1).MulAdd(archsimd.BroadcastFloat32x8(BF16(sc[g])), tot)
		}
		y[o] = hsum(tot) + biasDot(m.Biases[o*groups:(o+1)*groups], v.sum)
	}
}

// qmv8RowsSIMD is qmvRowsPortable for 8-bit weights, rows [lo, hi).
// y: [Out] = W: [Out, In] · x: [In]. One goroutine per row range; a group is two Uint32x8 loads of 4
// elements per word; byte k of the 8 words is one vector, multiplied with Vec.p8.
func qmv8RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	mask := archsimd.BroadcastUint32x8(0xFF)
	xp := unsafe.Pointer(unsafe.SliceData(v.p8))
	for o := lo; o < hi; o++ {
		row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
		sc := m.Scales[o*groups : (o+1)*groups]
		var tot archsimd.Float32x8
		for g := range groups {
			x := unsafe.Add(xp, g*GroupSize*4)
			w := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*64)))
			a0 := w.And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(x))
			a1 := w.ShiftAllRight(8).And(mask).AsInt32x8().ConvertToFloat32().Mul(f32x8(unsafe.Add(x, 32)))
			a0 = w.ShiftAllRight(16).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 64)), a0)
			a1 = w.ShiftAllRight(24).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 96)), a1)
			w = archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*64+32)))
			a0 = w.And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 128)), a0)
			a1 = w.ShiftAllRight(8).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 160)), a1)
			a0 = w.ShiftAllRight(16).And(mask).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 192)), a0)
			a1 = w.ShiftAllRight(24).AsInt32x8().ConvertToFloat32().MulAdd(f32x8(unsafe.Add(x, 224)), a1)
			tot = a0.Add(a1).MulAdd(archsimd.BroadcastFloat32x8(BF16(sc[g])), tot)
		}
		y[o] = hsum(tot) + biasDot(m.Biases[o*groups:(o+1)*groups], v.sum)
	}
}

// qmvQ8RowsSIMD is qmvQ8RowsPortable, rows [lo, hi): 4-bit weights against int8 activations.
// y: [Out] = W: [Out, In] · x: [In]. One goroutine per row range; per group the 32 packed bytes are
// one load, split into low and high nibbles (elements 2b and 2b+1), multiplied with the int8
// activations by VPMADDUBSW (|15·127·2| fits int16), widened by VPMADDWD, converted and scaled once.
func qmvQ8RowsSIMD(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	nib := archsimd.BroadcastUint8x32(0x0F)
	ones := archsimd.BroadcastInt16x16(1)
	qp := unsafe.Pointer(unsafe.SliceData(v.q))
	for o := lo; o < hi; o++ {
		row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
		sc := m.Scales[o*groups : (o+1)*groups]
		d := v.d[:len(sc)]
		var tot archsimd.Float32x8
		for g := range groups {
			w := archsimd.LoadUint8x32((*[32]uint8)(unsafe.Add(row, g*32)))
			ql := w.And(nib)
			qh := w.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(nib)
			xl := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(qp, g*GroupSize)))
			xh := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(qp, g*GroupSize+32)))
			s := ql.DotProductPairsSaturated(xl).Add(qh.DotProductPairsSaturated(xh)).DotProductPairs(ones)
			tot = s.ConvertToFloat32().MulAdd(archsimd.BroadcastFloat32x8(BF16(sc[g])*d[g]), tot)
		}
		y[o] = hsum(tot) + biasDot(m.Biases[o*groups:(o+1)*groups], v.sum)
	}
}
