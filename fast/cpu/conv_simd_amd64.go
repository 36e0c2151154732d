//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// convSiLU4SIMD is ConvSiLU4 with 16 lanes: per vector the four FMAs of mulAddSIMD in tap
// order from zero, then siluMulSIMD's float32 SiLU; the elements past the last whole vector run the
// steps' portable loops (mulAddPortable, siluMulPortable), as mulAddSIMD and siluMulSIMD do.
func convSiLU4SIMD(out []float32, w, x [4][]float32, c *expConsts) {
	n, i := len(out), 0
	if n >= 16 && archsimd.X86.AVX512() {
		i = convSiLU4Vectors(out, &w, &x, c)
	}
	if i < n { // mulAddSIMD and siluMulSIMD run these elements (all of a short row) portably
		tail := out[i:]
		clear(tail)
		for j := range 4 {
			mulAddPortable(tail, w[j][i:n], x[j][i:n])
		}
		siluMulPortable(tail, tail, nil, c)
	}
}

// convSiLU4Vectors runs convSiLU4SIMD's whole vectors and returns how many elements they covered.
func convSiLU4Vectors(out []float32, w, x *[4][]float32, c *expConsts) int {
	n := len(out)
	w0, w1, w2, w3 := unsafe.Pointer(&w[0][0]), unsafe.Pointer(&w[1][0]), unsafe.Pointer(&w[2][0]), unsafe.Pointer(&w[3][0])
	x0, x1, x2, x3 := unsafe.Pointer(&x[0][0]), unsafe.Pointer(&x[1][0]), unsafe.Pointer(&x[2][0]), unsafe.Pointer(&x[3][0])
	po := unsafe.Pointer(&out[0])
	one := archsimd.LoadFloat32x16(&c[9])
	i := 0
	for ; i+16 <= n; i += 16 {
		o := uintptr(4 * i)
		acc := f32x16(unsafe.Add(w0, o)).MulAdd(f32x16(unsafe.Add(x0, o)), archsimd.Float32x16{})
		acc = f32x16(unsafe.Add(w1, o)).MulAdd(f32x16(unsafe.Add(x1, o)), acc)
		acc = f32x16(unsafe.Add(w2, o)).MulAdd(f32x16(unsafe.Add(x2, o)), acc)
		acc = f32x16(unsafe.Add(w3, o)).MulAdd(f32x16(unsafe.Add(x3, o)), acc)
		e := exp16(archsimd.Float32x16{}.Sub(acc), c)
		acc.Div(e.Add(one)).Store((*[16]float32)(unsafe.Add(po, o)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}
