//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// dotsSIMD is dotsPortable eight keys at a time: q is loaded once per 16 dimensions for all eight,
// eight 16-lane accumulators, one reduction (reduce8) for the eight scores. Needs AVX-512 and a
// head dimension that is a multiple of 16; otherwise (and for the last keys) one dot a key.
func dotsSIMD(out, q, rows []float32, stride int) {
	d, n := len(q), len(out)
	if d%16 != 0 || !archsimd.X86.AVX512() {
		for t := range out {
			out[t] = dotSIMD(q, rows[t*stride:t*stride+d])
		}
		return
	}
	pq, pr := unsafe.Pointer(&q[0]), unsafe.Pointer(&rows[0])
	rs := uintptr(4 * stride)
	var acc [8]archsimd.Float32x8
	t := 0
	for ; t+8 <= n; t += 8 {
		var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
		base := unsafe.Add(pr, uintptr(t)*rs)
		for i := 0; i < 4*d; i += 64 {
			qv := f32x16(unsafe.Add(pq, i))
			r := unsafe.Add(base, i)
			a0 = qv.MulAdd(f32x16(r), a0)
			a1 = qv.MulAdd(f32x16(unsafe.Add(r, rs)), a1)
			a2 = qv.MulAdd(f32x16(unsafe.Add(r, 2*rs)), a2)
			a3 = qv.MulAdd(f32x16(unsafe.Add(r, 3*rs)), a3)
			a4 = qv.MulAdd(f32x16(unsafe.Add(r, 4*rs)), a4)
			a5 = qv.MulAdd(f32x16(unsafe.Add(r, 5*rs)), a5)
			a6 = qv.MulAdd(f32x16(unsafe.Add(r, 6*rs)), a6)
			a7 = qv.MulAdd(f32x16(unsafe.Add(r, 7*rs)), a7)
		}
		acc[0], acc[1] = a0.GetLo().Add(a0.GetHi()), a1.GetLo().Add(a1.GetHi())
		acc[2], acc[3] = a2.GetLo().Add(a2.GetHi()), a3.GetLo().Add(a3.GetHi())
		acc[4], acc[5] = a4.GetLo().Add(a4.GetHi()), a5.GetLo().Add(a5.GetHi())
		acc[6], acc[7] = a6.GetLo().Add(a6.GetHi()), a7.GetLo().Add(a7.GetHi())
		reduce8(&acc).Store((*[8]float32)(out[t : t+8]))
	}
	archsimd.ClearAVXUpperBits()
	for ; t < n; t++ {
		out[t] = dotSIMD(q, rows[t*stride:t*stride+d])
	}
}

// expShiftSIMD is expShiftPortable with exp16 (float32, within 1e-6 relative; see SiLU), 16 lanes a
// step; the sum is float32 per lane, then float64.
func expShiftSIMD(x []float32, m float32, c *expConsts) float64 {
	n := len(x)
	if n < 16 || !archsimd.X86.AVX512() {
		return expShiftPortable(x, m, c)
	}
	var mt [4]float32
	mt[0] = m
	vm := bcast16(unsafe.Pointer(&mt[0]))
	px := unsafe.Pointer(&x[0])
	var sum archsimd.Float32x16
	i := 0
	for ; i+16 <= n; i += 16 {
		p := (*[16]float32)(unsafe.Add(px, 4*i))
		e := exp16(archsimd.LoadFloat32x16(p).Sub(vm), c)
		e.Store(p)
		sum = sum.Add(e)
	}
	var st [16]float32
	sum.Store(&st)
	archsimd.ClearAVXUpperBits()
	var s float64
	for _, v := range st {
		s += float64(v)
	}
	return s + expShiftPortable(x[i:], m, c)
}

// maxOfSIMD is maxOfPortable 16 lanes at a time (AVX-512, n ≥ 16), the lanes reduced in scalar
// code after the vector state is cleared.
func maxOfSIMD(x []float32) float32 {
	n := len(x)
	if n < 16 || !archsimd.X86.AVX512() {
		return maxOfPortable(x)
	}
	px := unsafe.Pointer(&x[0])
	m := f32x16(px)
	i := 16
	for ; i+16 <= n; i += 16 {
		m = m.Max(f32x16(unsafe.Add(px, 4*i)))
	}
	var st [16]float32
	m.Store(&st)
	archsimd.ClearAVXUpperBits()
	r := maxOfPortable(st[:])
	for _, e := range x[i:] {
		if e > r {
			r = e
		}
	}
	return r
}

// axpyRowsSIMD is axpyRowsPortable 128 accumulator lanes at a time held in registers across all
// keys: per key one broadcast of p[t] and eight FMAs. Needs AVX-512 and len(acc) a multiple of
// 128; otherwise one axpy a key.
func axpyRowsSIMD(acc, p, rows []float32, stride int) {
	d := len(acc)
	if d%128 != 0 || len(p) == 0 || !archsimd.X86.AVX512() {
		for t, a := range p {
			axpySIMD(acc, a, rows[t*stride:t*stride+d])
		}
		return
	}
	// p padded for bcast16's 16-byte load at the last key.
	var pt [attnMaxKeys + 4]float32
	for len(p) > attnMaxKeys {
		axpyRowsSIMD(acc, p[:attnMaxKeys], rows, stride)
		p, rows = p[attnMaxKeys:], rows[attnMaxKeys*stride:]
	}
	copy(pt[:], p)
	pp, pr, pa := unsafe.Pointer(&pt[0]), unsafe.Pointer(&rows[0]), unsafe.Pointer(&acc[0])
	rs := uintptr(4 * stride)
	for j := 0; j < d; j += 128 {
		a := unsafe.Add(pa, 4*j)
		c0, c1, c2, c3 := f32x16(a), f32x16(unsafe.Add(a, 64)), f32x16(unsafe.Add(a, 128)), f32x16(unsafe.Add(a, 192))
		c4, c5, c6, c7 := f32x16(unsafe.Add(a, 256)), f32x16(unsafe.Add(a, 320)), f32x16(unsafe.Add(a, 384)), f32x16(unsafe.Add(a, 448))
		r0 := unsafe.Add(pr, 4*j)
		for t := range p {
			r := unsafe.Add(r0, uintptr(t)*rs) // by index: one row past the end would fail checkptr
			w := bcast16(unsafe.Add(pp, 4*t))
			c0 = w.MulAdd(f32x16(r), c0)
			c1 = w.MulAdd(f32x16(unsafe.Add(r, 64)), c1)
			c2 = w.MulAdd(f32x16(unsafe.Add(r, 128)), c2)
			c3 = w.MulAdd(f32x16(unsafe.Add(r, 192)), c3)
			c4 = w.MulAdd(f32x16(unsafe.Add(r, 256)), c4)
			c5 = w.MulAdd(f32x16(unsafe.Add(r, 320)), c5)
			c6 = w.MulAdd(f32x16(unsafe.Add(r, 384)), c6)
			c7 = w.MulAdd(f32x16(unsafe.Add(r, 448)), c7)
		}
		c0.Store((*[16]float32)(a))
		c1.Store((*[16]float32)(unsafe.Add(a, 64)))
		c2.Store((*[16]float32)(unsafe.Add(a, 128)))
		c3.Store((*[16]float32)(unsafe.Add(a, 192)))
		c4.Store((*[16]float32)(unsafe.Add(a, 256)))
		c5.Store((*[16]float32)(unsafe.Add(a, 320)))
		c6.Store((*[16]float32)(unsafe.Add(a, 384)))
		c7.Store((*[16]float32)(unsafe.Add(a, 448)))
	}
	archsimd.ClearAVXUpperBits()
}
