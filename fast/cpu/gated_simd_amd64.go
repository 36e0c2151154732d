//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// gatedScaleSIMD is gatedScalePortable 16 lanes at a time with the float32 exp16 (as SiLU); the
// tail runs the portable loop.
func gatedScaleSIMD(out, x, gate, w []float32, r float32, c *expConsts) {
	n := len(x)
	if n < 16 || !archsimd.X86.AVX512() {
		gatedScalePortable(out, x, gate, w, r, c)
		return
	}
	var rt [4]float32
	rt[0] = r
	vr := bcast16(unsafe.Pointer(&rt[0]))
	one := archsimd.LoadFloat32x16(&c[9])
	po, px, pg, pw := unsafe.Pointer(&out[0]), unsafe.Pointer(&x[0]), unsafe.Pointer(&gate[0]), unsafe.Pointer(&w[0])
	i := 0
	for ; i+16 <= n; i += 16 {
		g := f32x16(unsafe.Add(pg, 4*i))
		s := g.Div(exp16(archsimd.Float32x16{}.Sub(g), c).Add(one))
		v := f32x16(unsafe.Add(px, 4*i)).Mul(vr).Mul(f32x16(unsafe.Add(pw, 4*i)))
		v.Mul(s).Store((*[16]float32)(unsafe.Add(po, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	if i < n {
		gatedScalePortable(out[i:n], x[i:n], gate[i:n], w[i:n], r, c)
	}
}

// mulAddSIMD is mulAddPortable 16 lanes at a time; the tail runs the portable loop.
func mulAddSIMD(y, a, b []float32) {
	n := len(y)
	if n < 16 || !archsimd.X86.AVX512() {
		mulAddPortable(y, a, b)
		return
	}
	py, pa, pb := unsafe.Pointer(&y[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	i := 0
	for ; i+16 <= n; i += 16 {
		p := (*[16]float32)(unsafe.Add(py, 4*i))
		f32x16(unsafe.Add(pa, 4*i)).MulAdd(f32x16(unsafe.Add(pb, 4*i)), archsimd.LoadFloat32x16(p)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	if i < n {
		mulAddPortable(y[i:], a[i:n], b[i:n])
	}
}
