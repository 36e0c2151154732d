//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// deltaUpdateSIMD is deltaUpdatePortable 128 output lanes at a time (AVX-512): the eight vectors of
// out stay in registers across all dk rows; per row and 16 lanes one load of the row, one of
// delta, a multiply, two FMAs and a store. The scalars are staged in a stack table written while
// the vector state is clean. Needs dv a multiple of 128 and dk ≤ maxDeltaRows; otherwise the
// portable loop.
func deltaUpdateSIMD(s []float32, decay float32, kv, q, delta, out []float32) {
	dk, dv := len(kv), len(out)
	if dv%128 != 0 || dk > maxDeltaRows || !archsimd.X86.AVX512() {
		deltaUpdatePortable(s, decay, kv, q, delta, out)
		return
	}
	var t [2*maxDeltaRows + 8]float32 // k_i at 2i, q_i at 2i+1; decay at the end (+3 for bcast16)
	for i := range dk {
		t[2*i], t[2*i+1] = kv[i], q[i]
	}
	t[2*dk] = decay
	pt := unsafe.Pointer(&t[0])
	vd := bcast16(unsafe.Add(pt, 8*dk))
	ps, pd, po := unsafe.Pointer(&s[0]), unsafe.Pointer(&delta[0]), unsafe.Pointer(&out[0])
	rs := uintptr(4 * dv)
	for j := 0; j < dv; j += 128 {
		var o0, o1, o2, o3, o4, o5, o6, o7 archsimd.Float32x16
		d := unsafe.Add(pd, 4*j)
		r0 := unsafe.Add(ps, 4*j)
		for i := range dk {
			r := unsafe.Add(r0, uintptr(i)*rs) // by index: one row past the end would fail checkptr
			ki, qi := bcast16(unsafe.Add(pt, 8*i)), bcast16(unsafe.Add(pt, 8*i+4))
			o0 = qi.MulAdd(deltaRow(r, d, 0, vd, ki), o0)
			o1 = qi.MulAdd(deltaRow(r, d, 64, vd, ki), o1)
			o2 = qi.MulAdd(deltaRow(r, d, 128, vd, ki), o2)
			o3 = qi.MulAdd(deltaRow(r, d, 192, vd, ki), o3)
			o4 = qi.MulAdd(deltaRow(r, d, 256, vd, ki), o4)
			o5 = qi.MulAdd(deltaRow(r, d, 320, vd, ki), o5)
			o6 = qi.MulAdd(deltaRow(r, d, 384, vd, ki), o6)
			o7 = qi.MulAdd(deltaRow(r, d, 448, vd, ki), o7)
		}
		a := unsafe.Add(po, 4*j)
		o0.Store((*[16]float32)(a))
		o1.Store((*[16]float32)(unsafe.Add(a, 64)))
		o2.Store((*[16]float32)(unsafe.Add(a, 128)))
		o3.Store((*[16]float32)(unsafe.Add(a, 192)))
		o4.Store((*[16]float32)(unsafe.Add(a, 256)))
		o5.Store((*[16]float32)(unsafe.Add(a, 320)))
		o6.Store((*[16]float32)(unsafe.Add(a, 384)))
		o7.Store((*[16]float32)(unsafe.Add(a, 448)))
	}
	archsimd.ClearAVXUpperBits()
}

// deltaRow updates 16 lanes of one state row at r+off, decay·row + k·delta (delta at d+off),
// stores them and returns them.
func deltaRow(r, d unsafe.Pointer, off uintptr, decay, k archsimd.Float32x16) archsimd.Float32x16 {
	p := (*[16]float32)(unsafe.Add(r, off))
	v := k.MulAdd(f32x16(unsafe.Add(d, off)), archsimd.LoadFloat32x16(p).Mul(decay))
	v.Store(p)
	return v
}
