//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// dequantRowSIMD writes row o of m dequantized (scale·q + bias, float32) in unpack order
// (permute4/permute8 order within each group).
func dequantRowSIMD(dst []float32, m *QMat, o int) {
	groups, rb := m.Groups(), m.RowBytes()
	row := unsafe.Pointer(unsafe.SliceData(m.W[o*rb : (o+1)*rb]))
	sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
	pd := unsafe.Pointer(unsafe.SliceData(dst[:m.In]))
	st := func(off int, q archsimd.Uint32x8, s, b archsimd.Float32x8) {
		q.AsInt32x8().ConvertToFloat32().MulAdd(s, b).Store((*[8]float32)(unsafe.Add(pd, 4*off)))
	}
	for g := range groups {
		s, b := archsimd.BroadcastFloat32x8(BF16(sc[g])), archsimd.BroadcastFloat32x8(BF16(bi[g]))
		base := g * GroupSize
		if m.Bits == 4 {
			mask := archsimd.BroadcastUint32x8(0xF)
			w := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*32)))
			for k := range 8 {
				st(base+8*k, w.ShiftAllRight(uint64(4*k)).And(mask), s, b)
			}
			continue
		}
		mask := archsimd.BroadcastUint32x8(0xFF)
		for h := range 2 {
			w := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(row, g*64+32*h)))
			for k := range 4 {
				st(base+32*h+8*k, w.ShiftAllRight(uint64(8*k)).And(mask), s, b)
			}
		}
	}
}

// qmm4RowsSIMD computes rows [lo, hi) of Y: [T, Out] = X: [T, In] · Wᵀ, X in unpack order.
// Per block of 4 rows: dequantize into buf (4 × In float32), then a 4-row × 2-token register
// tile (8 accumulators, 6 loads per 8 FMAs) runs over In for each pair of tokens.
func qmm4RowsSIMD(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int) {
	in, out := m.In, m.Out
	px := unsafe.Pointer(unsafe.SliceData(x))
	for o0 := lo; o0 < hi; o0 += qmmRowBlock {
		n := min(qmmRowBlock, hi-o0)
		for r := range n {
			dequantRowSIMD(buf[r*in:(r+1)*in], m, o0+r)
		}
		if n < qmmRowBlock {
			for tt := range t {
				for r := range n {
					y[tt*out+o0+r] = dotSIMD(buf[r*in:(r+1)*in], x[tt*in:(tt+1)*in])
				}
			}
			continue
		}
		pw := unsafe.Pointer(unsafe.SliceData(buf[:4*in]))
		tt := 0
		for ; tt+2 <= t; tt += 2 {
			x0, x1 := unsafe.Add(px, 4*tt*in), unsafe.Add(px, 4*(tt+1)*in)
			var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
			for i := 0; i < in; i += 8 {
				w0 := f32x8(unsafe.Add(pw, 4*i))
				w1 := f32x8(unsafe.Add(pw, 4*(in+i)))
				w2 := f32x8(unsafe.Add(pw, 4*(2*in+i)))
				w3 := f32x8(unsafe.Add(pw, 4*(3*in+i)))
				a := f32x8(unsafe.Add(x0, 4*i))
				c00, c10, c20, c30 = w0.MulAdd(a, c00), w1.MulAdd(a, c10), w2.MulAdd(a, c20), w3.MulAdd(a, c30)
				a = f32x8(unsafe.Add(x1, 4*i))
				c01, c11, c21, c31 = w0.MulAdd(a, c01), w1.MulAdd(a, c11), w2.MulAdd(a, c21), w3.MulAdd(a, c31)
			}
			y0, y1 := y[tt*out+o0:tt*out+o0+4], y[(tt+1)*out+o0:(tt+1)*out+o0+4]
			y0[0], y0[1], y0[2], y0[3] = hsum(c00), hsum(c10), hsum(c20), hsum(c30)
			y1[0], y1[1], y1[2], y1[3] = hsum(c01), hsum(c11), hsum(c21), hsum(c31)
		}
		for ; tt < t; tt++ {
			for r := range 4 {
				y[tt*out+o0+r] = dotSIMD(buf[r*in:(r+1)*in], x[tt*in:(tt+1)*in])
			}
		}
	}
}
