//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
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
	if n < 8 {
		axpyPortable(y, a, x)
		return
	}
	py, px := unsafe.Pointer(&y[0]), unsafe.Pointer(&x[:n][0])
	var at [4]float32
	at[0] = a
	va := bcast(unsafe.Pointer(&at[0]))
	i := 0
	for ; i+8 <= n; i += 8 {
		va.MulAdd(f32x8(unsafe.Add(px, 4*i)), f32x8(unsafe.Add(py, 4*i))).Store((*[8]float32)(unsafe.Add(py, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	for ; i < n; i++ {
		y[i] += a * x[i]
	}
}

// scaleAxpySIMD is scaleAxpyPortable: y = b·y + a·x, len(x) >= len(y).
func scaleAxpySIMD(y []float32, b, a float32, x []float32) {
	n := len(y)
	if n < 8 {
		scaleAxpyPortable(y, b, a, x)
		return
	}
	py, px := unsafe.Pointer(&y[0]), unsafe.Pointer(&x[:n][0])
	var at [8]float32 // a and b broadcast from memory (see simd_amd64.go)
	at[0], at[4] = a, b
	va, vb := bcast(unsafe.Pointer(&at[0])), bcast(unsafe.Pointer(&at[4]))
	i := 0
	for ; i+8 <= n; i += 8 {
		yp := (*[8]float32)(unsafe.Add(py, 4*i))
		va.MulAdd(f32x8(unsafe.Add(px, 4*i)), archsimd.LoadFloat32x8(yp).Mul(vb)).Store(yp)
	}
	archsimd.ClearAVXUpperBits()
	for ; i < n; i++ {
		y[i] = y[i]*b + a*x[i]
	}
}

// bf16RowsSIMD is bf16RowsPortable: rows [lo, hi) of y = W·x, W: [Out, In] bf16, in blocks of 8 rows
// (lo a multiple of 8), 16 inputs a step, each bf16 vector widened by a zero-extend and a shift.
// Inputs that are not a multiple of 16 go to the portable rows.
func bf16RowsSIMD(y []float32, w []uint16, in int, x []float32, lo, hi int) {
	if in%16 != 0 {
		bf16RowsPortable(y, w, in, x, lo, hi)
		return
	}
	px := unsafe.Pointer(unsafe.SliceData(x))
	var r [rowBlock]archsimd.Float32x8
	for o0 := lo; o0 < hi; o0 += rowBlock {
		n := min(rowBlock, hi-o0)
		for j := range n {
			r[j] = bf16Row(unsafe.Pointer(unsafe.SliceData(w[(o0+j)*in:(o0+j+1)*in])), px, in)
		}
		storeRows(y[o0:o0+n], &r, n)
	}
	archsimd.ClearAVXUpperBits() // storeRows cleared, but the loop's code after it may not be clean
}

// bf16Row returns a vector whose lanes sum to Σ_i W[i]·x[i] over one bf16 row of length in (a
// multiple of 16).
func bf16Row(pw, px unsafe.Pointer, in int) archsimd.Float32x8 {
	c16 := archsimd.BroadcastUint32x8(16)
	var s0, s1 archsimd.Float32x8
	for i := 0; i < in; i += 16 {
		s0 = bf16x8(unsafe.Add(pw, 2*i), c16).MulAdd(f32x8(unsafe.Add(px, 4*i)), s0)
		s1 = bf16x8(unsafe.Add(pw, 2*i+16), c16).MulAdd(f32x8(unsafe.Add(px, 4*i+32)), s1)
	}
	return s0.Add(s1)
}

// axpySIMD512 is axpySIMD with 16-lane vectors (AVX-512), for the short rows of the delta rule and
// attention where the per-call cost matters: a 128-float row is 8 steps instead of 16.
func axpySIMD512(y []float32, a float32, x []float32) {
	n := len(y)
	if n < 16 {
		axpySIMD(y, a, x)
		return
	}
	py, px := unsafe.Pointer(&y[0]), unsafe.Pointer(&x[:n][0])
	var at [4]float32
	at[0] = a
	va := bcast16(unsafe.Pointer(&at[0]))
	i := 0
	for ; i+16 <= n; i += 16 {
		yp := (*[16]float32)(unsafe.Add(py, 4*i))
		va.MulAdd(f32x16(unsafe.Add(px, 4*i)), archsimd.LoadFloat32x16(yp)).Store(yp)
	}
	archsimd.ClearAVXUpperBits()
	for ; i < n; i++ {
		y[i] += a * x[i]
	}
}

// scaleAxpySIMD512 is scaleAxpySIMD with 16-lane vectors (AVX-512).
func scaleAxpySIMD512(y []float32, b, a float32, x []float32) {
	n := len(y)
	if n < 16 {
		scaleAxpySIMD(y, b, a, x)
		return
	}
	py, px := unsafe.Pointer(&y[0]), unsafe.Pointer(&x[:n][0])
	var at [8]float32
	at[0], at[4] = a, b
	va, vb := bcast16(unsafe.Pointer(&at[0])), bcast16(unsafe.Pointer(&at[4]))
	i := 0
	for ; i+16 <= n; i += 16 {
		yp := (*[16]float32)(unsafe.Add(py, 4*i))
		va.MulAdd(f32x16(unsafe.Add(px, 4*i)), archsimd.LoadFloat32x16(yp).Mul(vb)).Store(yp)
	}
	archsimd.ClearAVXUpperBits()
	for ; i < n; i++ {
		y[i] = y[i]*b + a*x[i]
	}
}

// rmsNorm64SIMD is rmsNorm64Portable with the squares summed in four 8-lane float64 accumulators
// and the products in 16-lane float32 (the same two roundings per element); the tails run the
// portable loops' steps.
func rmsNorm64SIMD(out, x, w []float32, eps float64) {
	n := len(x)
	if n < 32 || !archsimd.X86.AVX512() {
		rmsNorm64Portable(out, x, w, eps)
		return
	}
	px, pw, po := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[:n][0]), unsafe.Pointer(&out[:n][0])
	var s0, s1, s2, s3 archsimd.Float64x8
	i := 0
	for ; i+32 <= n; i += 32 {
		a := f32x8(unsafe.Add(px, 4*i)).ConvertToFloat64()
		b := f32x8(unsafe.Add(px, 4*i+32)).ConvertToFloat64()
		c := f32x8(unsafe.Add(px, 4*i+64)).ConvertToFloat64()
		d := f32x8(unsafe.Add(px, 4*i+96)).ConvertToFloat64()
		s0, s1, s2, s3 = a.MulAdd(a, s0), b.MulAdd(b, s1), c.MulAdd(c, s2), d.MulAdd(d, s3)
	}
	var l [8]float64
	s0.Add(s1).Add(s2.Add(s3)).Store(&l)
	ss := ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
	for ; i < n; i++ {
		ss += float64(x[i]) * float64(x[i])
	}
	r := float32(1 / math.Sqrt(ss/float64(n)+eps))
	rv := archsimd.BroadcastFloat32x16(r)
	i = 0
	for ; i+16 <= n; i += 16 {
		f32x16(unsafe.Add(px, 4*i)).Mul(rv).Mul(f32x16(unsafe.Add(pw, 4*i))).Store((*[16]float32)(unsafe.Add(po, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	for ; i < n; i++ {
		out[i] = x[i] * r * w[i]
	}
}
