//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// recordTailsSIMD is recordTails in 512-bit vectors where the CPU has AVX-512 (it reports false,
// having done nothing, elsewhere): the group sums of two blocks (16 groups) at a time, in one
// vector whose lane g accumulates group g in element order (groupSums16; a last lone block:
// groupSums8), and each pair's multiplier pattern as one permute of the block's scales. c: the
// Vec's constants.
func recordTailsSIMD(rec []byte, x []float32, dl []float32, blocks int, scale float32, c *limbConsts) bool {
	if !archsimd.X86.AVX512() {
		return false
	}
	if len(rec) < blocks*recBlockBytes || len(x) < blocks*8*GroupSize || len(dl) < 8*blocks {
		panic("cpu: recordTailsSIMD: rec, x or dl too short")
	}
	rp, xp := unsafe.Pointer(unsafe.SliceData(rec)), unsafe.Pointer(unsafe.SliceData(x))
	sc := archsimd.BroadcastFloat32x4(scale).Broadcast1To16()
	var zero archsimd.Float32x16
	deal := archsimd.LoadUint32x16(&c.deal)
	for b := 0; b < blocks; b += 2 {
		xb, blk := unsafe.Add(xp, 4*b*8*GroupSize), unsafe.Add(rp, b*recBlockBytes)
		if b+1 == blocks {
			zero.SetLo(groupSums8(xb, &c.red, deal)).Store((*[16]float32)(unsafe.Add(blk, recSumOff)))
			break
		}
		s := groupSums16(xb, &c.red)
		s.SetHi(zero.GetHi()).Store((*[16]float32)(unsafe.Add(blk, recSumOff)))
		zero.SetLo(s.GetHi()).Store((*[16]float32)(unsafe.Add(blk, recBlockBytes+recSumOff)))
	}
	for b := range blocks {
		d := zero.SetLo(archsimd.LoadFloat32x8((*[8]float32)(dl[8*b : 8*b+8])))
		blk := unsafe.Add(rp, b*recBlockBytes)
		for p := range 4 {
			d.Permute(archsimd.LoadUint32x16(&c.pat[p])).Mul(sc).Store((*[16]float32)(unsafe.Add(blk, p*recPairBytes+limbBytes)))
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// groupSums16 returns the sums of the 16 consecutive groups of 64 floats at xp: lane g, the sum of
// group g's elements added in order. Per 16 elements, the 16 groups' vectors are transposed in
// four levels of split (level k leaves 2^k groups per vector with 16/2^k consecutive elements
// each; after level 4 vector e holds element e of every group), then added in element order.
func groupSums16(xp unsafe.Pointer, red *[4][2][16]uint32) archsimd.Float32x16 {
	var acc archsimd.Float32x16
	ld := func(g, e0 int) archsimd.Float32x16 { return f32x16(unsafe.Add(xp, 4*(g*GroupSize+e0))) }
	for e0 := 0; e0 < GroupSize; e0 += 16 {
		v0, v1, v2, v3 := ld(0, e0), ld(1, e0), ld(2, e0), ld(3, e0)
		v4, v5, v6, v7 := ld(4, e0), ld(5, e0), ld(6, e0), ld(7, e0)
		v8, v9, v10, v11 := ld(8, e0), ld(9, e0), ld(10, e0), ld(11, e0)
		v12, v13, v14, v15 := ld(12, e0), ld(13, e0), ld(14, e0), ld(15, e0)
		var lo, hi archsimd.Uint32x16
		lo, hi = archsimd.LoadUint32x16(&red[0][0]), archsimd.LoadUint32x16(&red[0][1])
		a0, a8 := split(v0, v1, lo, hi)
		a1, a9 := split(v2, v3, lo, hi)
		a2, a10 := split(v4, v5, lo, hi)
		a3, a11 := split(v6, v7, lo, hi)
		a4, a12 := split(v8, v9, lo, hi)
		a5, a13 := split(v10, v11, lo, hi)
		a6, a14 := split(v12, v13, lo, hi)
		a7, a15 := split(v14, v15, lo, hi)
		lo, hi = archsimd.LoadUint32x16(&red[1][0]), archsimd.LoadUint32x16(&red[1][1])
		b0, b4 := split(a0, a1, lo, hi)
		b1, b5 := split(a2, a3, lo, hi)
		b2, b6 := split(a4, a5, lo, hi)
		b3, b7 := split(a6, a7, lo, hi)
		b8, b12 := split(a8, a9, lo, hi)
		b9, b13 := split(a10, a11, lo, hi)
		b10, b14 := split(a12, a13, lo, hi)
		b11, b15 := split(a14, a15, lo, hi)
		lo, hi = archsimd.LoadUint32x16(&red[2][0]), archsimd.LoadUint32x16(&red[2][1])
		c0, c2 := split(b0, b1, lo, hi)
		c1, c3 := split(b2, b3, lo, hi)
		c4, c6 := split(b4, b5, lo, hi)
		c5, c7 := split(b6, b7, lo, hi)
		c8, c10 := split(b8, b9, lo, hi)
		c9, c11 := split(b10, b11, lo, hi)
		c12, c14 := split(b12, b13, lo, hi)
		c13, c15 := split(b14, b15, lo, hi)
		lo, hi = archsimd.LoadUint32x16(&red[3][0]), archsimd.LoadUint32x16(&red[3][1])
		d0, d1 := split(c0, c1, lo, hi)
		d2, d3 := split(c2, c3, lo, hi)
		d4, d5 := split(c4, c5, lo, hi)
		d6, d7 := split(c6, c7, lo, hi)
		d8, d9 := split(c8, c9, lo, hi)
		d10, d11 := split(c10, c11, lo, hi)
		d12, d13 := split(c12, c13, lo, hi)
		d14, d15 := split(c14, c15, lo, hi)
		acc = acc.Add(d0).Add(d1).Add(d2).Add(d3).Add(d4).Add(d5).Add(d6).Add(d7)
		acc = acc.Add(d8).Add(d9).Add(d10).Add(d11).Add(d12).Add(d13).Add(d14).Add(d15)
	}
	return acc
}

// groupSums8 is groupSums16 for 8 groups: three levels of split leave vector j with elements 2j
// and 2j+1 of every group (lanes 2g and 2g+1), which one permute (deal) splits into the halves
// added in order.
func groupSums8(xp unsafe.Pointer, red *[4][2][16]uint32, deal archsimd.Uint32x16) archsimd.Float32x8 {
	var acc archsimd.Float32x8
	ld := func(g, e0 int) archsimd.Float32x16 { return f32x16(unsafe.Add(xp, 4*(g*GroupSize+e0))) }
	for e0 := 0; e0 < GroupSize; e0 += 16 {
		v0, v1, v2, v3 := ld(0, e0), ld(1, e0), ld(2, e0), ld(3, e0)
		v4, v5, v6, v7 := ld(4, e0), ld(5, e0), ld(6, e0), ld(7, e0)
		var lo, hi archsimd.Uint32x16
		lo, hi = archsimd.LoadUint32x16(&red[0][0]), archsimd.LoadUint32x16(&red[0][1])
		a0, a4 := split(v0, v1, lo, hi)
		a1, a5 := split(v2, v3, lo, hi)
		a2, a6 := split(v4, v5, lo, hi)
		a3, a7 := split(v6, v7, lo, hi)
		lo, hi = archsimd.LoadUint32x16(&red[1][0]), archsimd.LoadUint32x16(&red[1][1])
		b0, b2 := split(a0, a1, lo, hi)
		b1, b3 := split(a2, a3, lo, hi)
		b4, b6 := split(a4, a5, lo, hi)
		b5, b7 := split(a6, a7, lo, hi)
		lo, hi = archsimd.LoadUint32x16(&red[2][0]), archsimd.LoadUint32x16(&red[2][1])
		c0, c1 := split(b0, b1, lo, hi)
		c2, c3 := split(b2, b3, lo, hi)
		c4, c5 := split(b4, b5, lo, hi)
		c6, c7 := split(b6, b7, lo, hi)
		acc = addDealt(addDealt(addDealt(addDealt(acc, c0, deal), c1, deal), c2, deal), c3, deal)
		acc = addDealt(addDealt(addDealt(addDealt(acc, c4, deal), c5, deal), c6, deal), c7, deal)
	}
	return acc
}

// addDealt adds to acc the two elements of every group in c (lanes 2g, 2g+1), the first then the
// second.
func addDealt(acc archsimd.Float32x8, c archsimd.Float32x16, deal archsimd.Uint32x16) archsimd.Float32x8 {
	c = c.Permute(deal)
	return acc.Add(c.GetLo()).Add(c.GetHi())
}

// split returns the first and second halves of each group's elements in a‖b (lo and hi: a level
// of limbConsts.red).
func split(a, b archsimd.Float32x16, lo, hi archsimd.Uint32x16) (archsimd.Float32x16, archsimd.Float32x16) {
	return a.ConcatPermute(b, lo), a.ConcatPermute(b, hi)
}
