//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// decayConsts are the decay kernels' constants, broadcast to 16 lanes: DecayTiny, −DecayTiny and
// decayMinArg (newDecayConstsStack).
type decayConsts [3][16]float32

// tailMask enables the first r lanes (0 < r ≤ 16).
func tailMask(r int) archsimd.Mask32x16 { return archsimd.Mask32x16FromBits(uint16(1<<r - 1)) }

// expTiny16 is decayFactor per lane: e^{max(x, decayMinArg)} (exp16), zeroed under DecayTiny.
func expTiny16(x archsimd.Float32x16, c *expConsts, dc *decayConsts) archsimd.Float32x16 {
	e := exp16(x.Max(archsimd.LoadFloat32x16(&dc[2])), c)
	return e.Masked(e.GreaterEqual(archsimd.LoadFloat32x16(&dc[0])))
}

// flush16 is flushTiny per lane.
func flush16(x archsimd.Float32x16, dc *decayConsts) archsimd.Float32x16 {
	return x.Masked(x.GreaterEqual(archsimd.LoadFloat32x16(&dc[0])).Or(x.LessEqual(archsimd.LoadFloat32x16(&dc[1]))))
}

// expTinySIMD is expTinyPortable 16 lanes at a time, the tail through masked loads and stores.
func expTinySIMD(x []float32, c *expConsts) {
	if len(x) == 0 || !archsimd.X86.AVX512() {
		expTinyPortable(x, c)
		return
	}
	dc := newDecayConstsStack()
	px := unsafe.Pointer(&x[0])
	for j := 0; j < len(x); j += 16 {
		p := (*[16]float32)(unsafe.Add(px, 4*j))
		if r := len(x) - j; r < 16 {
			mk := tailMask(r)
			expTiny16(archsimd.LoadMaskedFloat32x16(p, mk), c, &dc).StoreMasked(p, mk)
			break
		}
		expTiny16(archsimd.LoadFloat32x16(p), c, &dc).Store(p)
	}
	archsimd.ClearAVXUpperBits()
}

// newDecayConstsStack returns the decay constants by value, for a kernel's stack frame.
func newDecayConstsStack() decayConsts {
	var c decayConsts
	for j := range 16 {
		c[0][j], c[1][j], c[2][j] = DecayTiny, -DecayTiny, decayMinArg
	}
	return c
}

// scaleRowsSIMD is scaleRowsPortable 16 lanes at a time, each row's tail through masked loads and
// stores; the row factors are staged on the stack (at most maxDecayN rows a pass) for broadcasts.
func scaleRowsSIMD(dst []float32, d int, src []float32, ss int, f []float32) {
	if !archsimd.X86.AVX512() {
		scaleRowsPortable(dst, d, src, ss, f)
		return
	}
	for len(f) > maxDecayN {
		scaleRowsSIMD(dst, d, src, ss, f[:maxDecayN])
		dst, src, f = dst[maxDecayN*d:], src[maxDecayN*ss:], f[maxDecayN:]
	}
	dc := newDecayConstsStack()
	var ft [maxDecayN + 4]float32 // + 4: bcast16 reads 16 bytes at the last factor
	copy(ft[:], f)
	pd, psrc, pf := unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), unsafe.Pointer(&ft[0])
	d16 := d &^ 15
	var tm archsimd.Mask32x16
	if d16 < d {
		tm = tailMask(d - d16)
	}
	for i := range f {
		a := bcast16(unsafe.Add(pf, 4*i))
		o, r := unsafe.Add(pd, 4*i*d), unsafe.Add(psrc, 4*i*ss)
		for x := 0; x < d16; x += 16 {
			flush16(a.Mul(f32x16(unsafe.Add(r, 4*x))), &dc).Store((*[16]float32)(unsafe.Add(o, 4*x)))
		}
		if d16 < d {
			po, pr := (*[16]float32)(unsafe.Add(o, 4*d16)), (*[16]float32)(unsafe.Add(r, 4*d16))
			flush16(a.Mul(archsimd.LoadMaskedFloat32x16(pr, tm)), &dc).StoreMasked(po, tm)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// causalDecaySIMD is causalDecayPortable 16 coefficients at a time with the float32 exp16: per
// row, the blocks left of the limit get their factors and the masks (the limit, DecayTiny), the
// blocks right of it zeros; a row's last partial block goes through masked loads and stores. Γ and
// s are staged on the stack for broadcasts (n ≤ maxDecayN, else the portable loop).
func causalDecaySIMD(c []float32, n int, gam, s []float32, strict bool, ec *expConsts) {
	if n > maxDecayN || !archsimd.X86.AVX512() {
		causalDecayPortable(c, n, gam, s, strict, ec)
		return
	}
	dc := newDecayConstsStack()
	var gt, st [maxDecayN + 16]float32 // + 16: whole-vector loads past n, and bcast16 at the last
	copy(gt[:], gam[:n])
	for i := range n {
		st[i] = 1
	}
	if s != nil {
		copy(st[:], s[:n])
	}
	pc, pg, ps := unsafe.Pointer(&c[0]), unsafe.Pointer(&gt[0]), unsafe.Pointer(&st[0])
	var zero archsimd.Float32x16
	for i := range n {
		lim := i + 1
		if strict {
			lim = i
		}
		gi, si := bcast16(unsafe.Add(pg, 4*i)), bcast16(unsafe.Add(ps, 4*i))
		row := unsafe.Add(pc, 4*i*n)
		for j := 0; j < n; j += 16 {
			p := (*[16]float32)(unsafe.Add(row, 4*j))
			r := min(16, n-j)
			var v archsimd.Float32x16
			if j < lim {
				var cv archsimd.Float32x16
				if r < 16 {
					cv = archsimd.LoadMaskedFloat32x16(p, tailMask(r))
				} else {
					cv = archsimd.LoadFloat32x16(p)
				}
				e := expTiny16(gi.Sub(f32x16(unsafe.Add(pg, 4*j))), ec, &dc)
				v = flush16(si.Mul(cv).Mul(e), &dc)
				if lim-j < 16 {
					v = v.Masked(tailMask(lim - j))
				}
			} else {
				v = zero
			}
			if r < 16 {
				v.StoreMasked(p, tailMask(r))
			} else {
				v.Store(p)
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}

// accumTileTSIMD is accumTileTPortable on the octet kernels where the CPU has AVX-512 and d is a
// multiple of 32: each 8-row group's weights are already interleaved by key in pt (8 consecutive
// floats of weight row j), copied to the stack (at most maxTileKeys keys a call). Each octet
// prefetches the next one's rows of o; an overwrite (out ≠ tileAdd) starts the first block of keys
// at zero, and streams it past the caches when that block is the only one and o is 64-byte aligned
// (fenced at the end). Leftover rows run the portable loop.
func accumTileTSIMD(o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, out tileOut) {
	if d%32 != 0 || m < 8 || !archsimd.X86.AVX512() {
		accumTileTPortable(o, m, d, pt, ps, n, v, vs, out)
		return
	}
	if out == tileStream && (n > maxTileKeys || uintptr(unsafe.Pointer(&o[0]))%64 != 0) {
		out = tileSet
	}
	m8 := m &^ 7
	var w [8 * maxTileKeys]float32
	pw, pp := unsafe.Pointer(&w[0]), unsafe.Pointer(&pt[0])
	for i := 0; i < m8; i += 8 {
		for j0 := 0; j0 < n; j0 += maxTileKeys {
			nb := min(maxTileKeys, n-j0)
			for j := range nb {
				f32x8(unsafe.Add(pp, 4*((j0+j)*ps+i))).Store((*[8]float32)(unsafe.Add(pw, 32*j)))
			}
			switch {
			case j0 > 0 || out == tileAdd:
				accumOctetNext(&o[i*d], 4*d, &w[0], nb, &v[j0*vs], 4*vs, d/32)
			case out == tileSet:
				setOctetNext(&o[i*d], 4*d, &w[0], nb, &v[j0*vs], 4*vs, d/32)
			default:
				setOctetStream(&o[i*d], 4*d, &w[0], nb, &v[j0*vs], 4*vs, d/32)
			}
		}
	}
	if out == tileStream {
		storeFence()
	}
	archsimd.ClearAVXUpperBits()
	if m8 < m {
		accumTileTPortable(o[m8*d:], m-m8, d, pt[m8:], ps, n, v, vs, out)
	}
}

// unitLowerInverseSIMD is unitLowerInversePortable by 16-column blocks: block x0's elements of row i
// are Σ_{x0≤j<i} l[i·n+j]·t_j (rows above x0 are zero there), two accumulators for the FMA
// chain, flushed, with the diagonal's 1 merged in; rows above the block store zeros. All loads and
// stores are masked (a block of fewer than 16 columns at the right edge; a full mask costs the same).
func unitLowerInverseSIMD(t, l []float32, n int) {
	if n > maxDecayN || !archsimd.X86.AVX512() {
		unitLowerInversePortable(t, l, n)
		return
	}
	dc := newDecayConstsStack()
	var one [16]float32
	for j := range one {
		one[j] = 1
	}
	vone := archsimd.LoadFloat32x16(&one)
	pt, pl := unsafe.Pointer(&t[0]), unsafe.Pointer(&l[0])
	var zero archsimd.Float32x16
	for x0 := 0; x0 < n; x0 += 16 {
		r := min(16, n-x0)
		mk := tailMask(r)
		row := func(i int) *[16]float32 { return (*[16]float32)(unsafe.Add(pt, 4*(i*n+x0))) }
		for i := range x0 {
			zero.StoreMasked(row(i), mk)
		}
		for i := x0; i < n; i++ {
			var a0, a1 archsimd.Float32x16
			li := unsafe.Add(pl, 4*i*n)
			j := x0
			for ; j+1 < i; j += 2 {
				a0 = bcast16(unsafe.Add(li, 4*j)).MulAdd(archsimd.LoadMaskedFloat32x16(row(j), mk), a0)
				a1 = bcast16(unsafe.Add(li, 4*j+4)).MulAdd(archsimd.LoadMaskedFloat32x16(row(j+1), mk), a1)
			}
			if j < i {
				a0 = bcast16(unsafe.Add(li, 4*j)).MulAdd(archsimd.LoadMaskedFloat32x16(row(j), mk), a0)
			}
			v := flush16(a0.Add(a1), &dc)
			if i < x0+16 {
				v = vone.Merge(v, archsimd.Mask32x16FromBits(uint16(1)<<(i-x0)))
			}
			v.StoreMasked(row(i), mk)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// accumTileLowerSIMD is accumTileLowerPortable on accumOctetRows where the CPU has AVX-512 and d
// is a multiple of 32: 8-row group i0 takes keys j < i0+8, broadcast from p's rows as they lie (the
// zeros above the diagonal inside the group's diagonal block are read); leftover rows run the
// portable loop.
func accumTileLowerSIMD(o []float32, m, d int, p []float32, v []float32, vs int) {
	if d%32 != 0 || m < 8 || !archsimd.X86.AVX512() {
		accumTileLowerPortable(o, m, d, p, v, vs)
		return
	}
	m8 := m &^ 7
	for i := 0; i < m8; i += 8 {
		accumOctetRows(&o[i*d], 4*d, &p[i*m], 4*m, i+8, &v[0], 4*vs, d/32)
	}
	for i := m8; i < m; i++ {
		axpyRowsPortable(o[i*d:(i+1)*d], p[i*m:i*m+i+1], v, vs)
	}
}

// accumOctetRows is in octet_rows_amd64.s.
//
//go:noescape
func accumOctetRows(o *float32, oRow int, p *float32, pRow, n int, v *float32, vRow, chunks int)

// scoreTileLowerSIMD is scoreTileLowerPortable on scoreQuads where the CPU has AVX-512 and d is a
// multiple of 16: 4-row group i takes the key quads up to its last row (the group's upper corner
// computed and left in s); leftover rows run as Dots.
func scoreTileLowerSIMD(s, q []float32, m, d int, keys []float32, ks int) {
	if d%16 != 0 || m < 4 || !archsimd.X86.AVX512() {
		for i := range m {
			dotsSIMD(s[i*m:i*m+i+1], q[i*d:(i+1)*d], keys, ks)
		}
		return
	}
	m4 := m &^ 3
	for i := 0; i < m4; i += 4 {
		scoreQuads(&s[i*m], 4*m, &q[i*d], 4*d, &keys[0], 4*ks, d, i/4+1)
	}
	for i := m4; i < m; i++ {
		dotsSIMD(s[i*m:i*m+i+1], q[i*d:(i+1)*d], keys, ks)
	}
}
