//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// exp16 returns e^x per lane: x = n·ln2 + r with n = round(x·log2 e), e^r by its Taylor polynomial
// (Horner), then VSCALEFPS multiplies by 2^n, which also gives +Inf for overflow, 0 for
// underflow and keeps NaN.
func exp16(x archsimd.Float32x16, c *expConsts) archsimd.Float32x16 {
	b := func(i int) archsimd.Float32x16 { return archsimd.LoadFloat32x16(&c[i]) }
	n := x.Mul(b(0)).RoundToEvenScaled(0)
	r := n.MulAdd(b(1), x) // x − n·ln2hi, exact
	r = n.MulAdd(b(2), r)  // − n·ln2lo
	p := b(3).MulAdd(r, b(4))
	p = p.MulAdd(r, b(5))
	p = p.MulAdd(r, b(6))
	p = p.MulAdd(r, b(7))
	p = p.MulAdd(r, b(8))
	p = p.MulAdd(r, b(9))
	p = p.MulAdd(r, b(9))
	return p.Scale(n)
}

// siluMulSIMD is siluMulPortable with 16 lanes and the float32 exp16; the tail runs the portable
// loop.
func siluMulSIMD(out, g, u []float32, c *expConsts) {
	n := len(g)
	if n < 16 || !archsimd.X86.AVX512() {
		siluMulPortable(out, g, u, c)
		return
	}
	one := archsimd.LoadFloat32x16(&c[9])
	pg, po := unsafe.Pointer(&g[0]), unsafe.Pointer(&out[:n][0])
	var pu unsafe.Pointer
	if u != nil {
		pu = unsafe.Pointer(&u[:n][0])
	}
	i := 0
	for ; i+16 <= n; i += 16 {
		x := f32x16(unsafe.Add(pg, 4*i))
		e := exp16(archsimd.Float32x16{}.Sub(x), c)
		s := x.Div(e.Add(one))
		if pu != nil {
			s = s.Mul(f32x16(unsafe.Add(pu, 4*i)))
		}
		s.Store((*[16]float32)(unsafe.Add(po, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	if i < n {
		var ut []float32
		if u != nil {
			ut = u[i:n]
		}
		siluMulPortable(out[i:n], g[i:n], ut, c)
	}
}

// sigmoidMulSIMD is sigmoidMulPortable with 16 lanes and the float32 exp16; the tail runs the
// portable loop.
func sigmoidMulSIMD(x, g []float32, c *expConsts) {
	n := len(x)
	if n < 16 || !archsimd.X86.AVX512() {
		sigmoidMulPortable(x, g, c)
		return
	}
	one := archsimd.LoadFloat32x16(&c[9])
	px, pg := unsafe.Pointer(&x[0]), unsafe.Pointer(&g[:n][0])
	i := 0
	for ; i+16 <= n; i += 16 {
		p := (*[16]float32)(unsafe.Add(px, 4*i))
		e := exp16(archsimd.Float32x16{}.Sub(f32x16(unsafe.Add(pg, 4*i))), c)
		archsimd.LoadFloat32x16(p).Div(e.Add(one)).Store(p)
	}
	archsimd.ClearAVXUpperBits()
	if i < n {
		sigmoidMulPortable(x[i:n], g[i:n], c)
	}
}
