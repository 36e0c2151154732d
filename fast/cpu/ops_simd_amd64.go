//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// dotSIMD is dotPortable with four 8-lane accumulators; len(b) >= len(a).
func dotSIMD(a, b []float32) float32 {
	n := len(a)
	if n == 0 {
		return 0
	}
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[:n][0])
	var s0, s1, s2, s3 archsimd.Float32x8
	i := 0
	for ; i+32 <= n; i += 32 {
		s0 = f32x8(unsafe.Add(pa, 4*i)).MulAdd(f32x8(unsafe.Add(pb, 4*i)), s0)
		s1 = f32x8(unsafe.Add(pa, 4*i+32)).MulAdd(f32x8(unsafe.Add(pb, 4*i+32)), s1)
		s2 = f32x8(unsafe.Add(pa, 4*i+64)).MulAdd(f32x8(unsafe.Add(pb, 4*i+64)), s2)
		s3 = f32x8(unsafe.Add(pa, 4*i+96)).MulAdd(f32x8(unsafe.Add(pb, 4*i+96)), s3)
	}
	for ; i+8 <= n; i += 8 {
		s0 = f32x8(unsafe.Add(pa, 4*i)).MulAdd(f32x8(unsafe.Add(pb, 4*i)), s0)
	}
	s := hsum(s0.Add(s1).Add(s2.Add(s3)))
	for ; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

// axpySIMD is axpyPortable: y += a·x, len(x) >= len(y).
func axpySIMD(y []float32, a float32, x []float32) {
	n := len(y)
	if n == 0 {
		return
	}
	py, px := unsafe.Pointer(&y[0]), unsafe.Pointer(&x[:n][0])
	va := archsimd.BroadcastFloat32x8(a)
	i := 0
	for ; i+8 <= n; i += 8 {
		r := va.MulAdd(f32x8(unsafe.Add(px, 4*i)), f32x8(unsafe.Add(py, 4*i)))
		r.Store((*[8]float32)(unsafe.Add(py, 4*i)))
	}
	for ; i < n; i++ {
		y[i] += a * x[i]
	}
}

// bf16RowsSIMD is bf16RowsPortable: rows [lo, hi) of y = W·x, W: [Out, In] bf16, 16 inputs a step
// (each bf16 vector widened to float32 by a zero-extend and a 16-bit shift).
func bf16RowsSIMD(y []float32, w []uint16, in int, x []float32, lo, hi int) {
	px := unsafe.Pointer(unsafe.SliceData(x))
	for o := lo; o < hi; o++ {
		row := w[o*in : (o+1)*in]
		pw := unsafe.Pointer(unsafe.SliceData(row))
		var s0, s1 archsimd.Float32x8
		i := 0
		for ; i+16 <= in; i += 16 {
			s0 = bf16x8(unsafe.Add(pw, 2*i)).MulAdd(f32x8(unsafe.Add(px, 4*i)), s0)
			s1 = bf16x8(unsafe.Add(pw, 2*i+16)).MulAdd(f32x8(unsafe.Add(px, 4*i+32)), s1)
		}
		s := hsum(s0.Add(s1))
		for ; i < in; i++ {
			s += BF16(row[i]) * x[i]
		}
		y[o] = s
	}
}
