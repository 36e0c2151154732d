//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// expConsts are the constants of exp16, each padded for bcast16's 16-byte load: log2(e); −ln2 in
// a high part exact in float32 and the rest (Cody–Waite); the Taylor coefficients 1/7! … 1/2! and 1
// of e^r on |r| ≤ ln2/2 (truncation error ≤ 5.3e-9 relative there, below float32 rounding).
type expConsts [10][4]float32

func newExpConsts() expConsts {
	return expConsts{{1.4426950408889634}, {-0.693359375}, {2.12194440e-4},
		{1.0 / 5040}, {1.0 / 720}, {1.0 / 120}, {1.0 / 24}, {1.0 / 6}, {0.5}, {1}}
}

// exp16 returns e^x per lane: x = n·ln2 + r with n = round(x·log2 e), e^r by its Taylor polynomial
// (Horner), then VSCALEFPS multiplies by 2^n, which also gives +Inf for overflow, 0 for
// underflow and keeps NaN.
func exp16(x archsimd.Float32x16, c *expConsts) archsimd.Float32x16 {
	b := func(i int) archsimd.Float32x16 { return bcast16(unsafe.Pointer(&c[i])) }
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
func siluMulSIMD(out, g, u []float32) {
	n := len(g)
	if n < 16 || !archsimd.X86.AVX512() {
		siluMulPortable(out, g, u)
		return
	}
	c := newExpConsts() // on the stack, stored while the vector state is clean
	one := bcast16(unsafe.Pointer(&c[9]))
	pg, po := unsafe.Pointer(&g[0]), unsafe.Pointer(&out[:n][0])
	var pu unsafe.Pointer
	if u != nil {
		pu = unsafe.Pointer(&u[:n][0])
	}
	i := 0
	for ; i+16 <= n; i += 16 {
		x := f32x16(unsafe.Add(pg, 4*i))
		e := exp16(archsimd.Float32x16{}.Sub(x), &c)
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
		siluMulPortable(out[i:n], g[i:n], ut)
	}
}
