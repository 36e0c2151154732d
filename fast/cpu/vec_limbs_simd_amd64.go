//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// limbsSIMD is Vec.limbsInto in 512-bit vectors (limbs into dst in layout lay, scales into v.dl),
// where the CPU has AVX-512 with VBMI (it reports false, having done nothing, elsewhere). Three passes: the
// vector |x| maximum per group (16 lanes, into v.lanes); per 16 groups, the 16 maxima reduced to one
// vector (lane g: group g, maxScales) and each group's d and 65536/d computed as limbScaleOf does;
// then per group the even and odd elements are gathered (VPERMI2PS), widened to float64, scaled,
// rounded to nearest-even and truncated to int32 (exact: already integral), offset so that the
// three signed digits are its bytes (limbWords), and the bytes gathered into place (limbs32). The result is bit for bit the portable
// one's for inputs without NaNs: the same maxima (a maximum of non-negative values does not depend
// on the order), the same float64 and float32 roundings.
func limbsSIMD(v *Vec, dst []int8, lay limbLayout, x []float32) bool {
	if !archsimd.X86.AVX512() || !archsimd.X86.AVX512VBMI() {
		return false
	}
	pairs := len(v.sum) / 2
	if pairs == 0 {
		return true
	}
	if len(x) < 2*pairs*GroupSize || len(dst) < lay.at(pairs-1)+limbBytes {
		panic("cpu: limbsSIMD: x or dst too short")
	}
	groups := 2 * pairs
	c := v.lc
	abs := archsimd.LoadUint32x16(&c.abs)
	xp := unsafe.Pointer(unsafe.SliceData(x))
	for g := range groups {
		p := unsafe.Add(xp, 4*GroupSize*g)
		m := f32x16(p).AsUint32x16().And(abs).AsFloat32x16()
		m = m.Max(f32x16(unsafe.Add(p, 64)).AsUint32x16().And(abs).AsFloat32x16())
		m = m.Max(f32x16(unsafe.Add(p, 128)).AsUint32x16().And(abs).AsFloat32x16())
		m = m.Max(f32x16(unsafe.Add(p, 192)).AsUint32x16().And(abs).AsFloat32x16())
		m.Store((*[16]float32)(v.lanes[16*g : 16*g+16]))
	}
	for g0 := 0; g0 < groups; g0 += 16 {
		maxScales(v, g0, min(16, groups-g0), c)
	}
	even, odd := archsimd.LoadUint32x16(&c.even), archsimd.LoadUint32x16(&c.odd)
	bias := archsimd.LoadInt32x16(&c.bias)
	ab, cOnly := archsimd.LoadUint8x64(&c.ab), archsimd.LoadUint8x64(&c.c)
	for g := range groups {
		p := unsafe.Add(xp, 4*GroupSize*g)
		iv := [2]float64{v.inv[g]} // not a load at &inv[g]: its second lane is past the end for the last group
		inv := archsimd.LoadFloat64x2(&iv).Broadcast1To8()
		x0, x1 := f32x16(p), f32x16(unsafe.Add(p, 64))
		x2, x3 := f32x16(unsafe.Add(p, 128)), f32x16(unsafe.Add(p, 192))
		// out: the group's 32 bytes in the a_even block; b and c 128 and 256 bytes on, the odd
		// elements 64 bytes on.
		out := unsafe.Pointer(&dst[lay.at(g/2)+32*(g%2)])
		limbs32(out, limbWords(x0.ConcatPermute(x1, even), inv, bias), limbWords(x2.ConcatPermute(x3, even), inv, bias), ab, cOnly)
		limbs32(unsafe.Add(out, 64), limbWords(x0.ConcatPermute(x1, odd), inv, bias), limbWords(x2.ConcatPermute(x3, odd), inv, bias), ab, cOnly)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// limbWords returns L = round(e·inv) for the 16 values e, as the bytes of its three balanced digits:
// L + 0x808080 has the digits a+128, b+128, c+128 (each in [0, 255], as |a| ≤ 127) as its bytes 2,
// 1, 0, and the XOR with 0x808080 (bias) turns each into the signed digit's two's complement.
func limbWords(e archsimd.Float32x16, inv archsimd.Float64x8, bias archsimd.Int32x16) archsimd.Int32x16 {
	lo := e.GetLo().ConvertToFloat64().Mul(inv).RoundToEvenScaled(0).ConvertToInt32()
	hi := e.GetHi().ConvertToFloat64().Mul(inv).RoundToEvenScaled(0).ConvertToInt32()
	var L archsimd.Int32x16
	return L.SetLo(lo).SetHi(hi).Add(bias).Xor(bias)
}

// limbs32 writes the digits of the 32 words of w0‖w1 (limbWords): a to out, b to out+128 and c
// to out+256, 32 bytes each, in two byte permutes (VPERMI2B): ab gathers the a digits and the b
// digits, c the c digits.
func limbs32(out unsafe.Pointer, w0, w1 archsimd.Int32x16, ab, c archsimd.Uint8x64) {
	x := w0.AsUint8x64().ConcatPermute(w1.AsUint8x64(), ab)
	x.GetLo().Store((*[32]uint8)(out))
	x.GetHi().Store((*[32]uint8)(unsafe.Add(out, 128)))
	w0.AsUint8x64().ConcatPermute(w1.AsUint8x64(), c).GetLo().Store((*[32]uint8)(unsafe.Add(out, 256)))
}

// maxScales sets v.dl and v.inv of groups [g0, g0+n) (n ≤ 16) from their 16-lane maxima in
// v.lanes (zero past the last group: newVec pads it to whole 16-group rows). The 16 vectors are
// reduced pairwise in four levels (maxPair): level k leaves 2^k groups per vector with 16/2^k
// partial maxima each, level 4 one vector of the 16 groups' maxima in order. Then per 8 groups in
// float64 lanes, limbScaleOf: d = float32(amax/127), raised to the next float32 where d·127 <
// amax, dl = d/65536 and inv = 65536/d (0 where d is 0).
func maxScales(v *Vec, g0, n int, c *limbConsts) {
	ld := func(i int) archsimd.Float32x16 {
		return archsimd.LoadFloat32x16((*[16]float32)(v.lanes[16*(g0+i) : 16*(g0+i)+16]))
	}
	lo, hi := archsimd.LoadUint32x16(&c.red[0][0]), archsimd.LoadUint32x16(&c.red[0][1])
	b0, b1 := maxPair(ld(0), ld(1), lo, hi), maxPair(ld(2), ld(3), lo, hi)
	b2, b3 := maxPair(ld(4), ld(5), lo, hi), maxPair(ld(6), ld(7), lo, hi)
	b4, b5 := maxPair(ld(8), ld(9), lo, hi), maxPair(ld(10), ld(11), lo, hi)
	b6, b7 := maxPair(ld(12), ld(13), lo, hi), maxPair(ld(14), ld(15), lo, hi)
	lo, hi = archsimd.LoadUint32x16(&c.red[1][0]), archsimd.LoadUint32x16(&c.red[1][1])
	b0, b1 = maxPair(b0, b1, lo, hi), maxPair(b2, b3, lo, hi)
	b2, b3 = maxPair(b4, b5, lo, hi), maxPair(b6, b7, lo, hi)
	lo, hi = archsimd.LoadUint32x16(&c.red[2][0]), archsimd.LoadUint32x16(&c.red[2][1])
	b0, b1 = maxPair(b0, b1, lo, hi), maxPair(b2, b3, lo, hi)
	lo, hi = archsimd.LoadUint32x16(&c.red[3][0]), archsimd.LoadUint32x16(&c.red[3][1])
	amax := maxPair(b0, b1, lo, hi)

	c127, c65536 := archsimd.LoadFloat64x8(&c.c127), archsimd.LoadFloat64x8(&c.c65536)
	one, dlScale := archsimd.LoadUint32x8(&c.one), archsimd.LoadFloat32x8(&c.dlScale)
	var zero archsimd.Float64x8
	for h := 0; h < 2 && 8*h < n; h++ {
		half := amax.GetLo()
		if h == 1 {
			half = amax.GetHi()
		}
		a := half.ConvertToFloat64()
		d := a.Div(c127).ConvertToFloat32()
		dUp := d.AsUint32x8().Add(one).AsFloat32x8() // the next float32 up (d ≥ 0)
		d64 := d.ConvertToFloat64()
		d64 = dUp.ConvertToFloat64().Merge(d64, d64.Mul(c127).Less(a))
		inv := c65536.Div(d64).Merge(zero, d64.NotEqual(zero))
		dl := d64.ConvertToFloat32().Mul(dlScale)
		g, k := g0+8*h, min(8, n-8*h)
		if k == 8 {
			dl.Store((*[8]float32)(v.dl[g : g+8]))
			inv.Store((*[8]float64)(v.inv[g : g+8]))
			continue
		}
		// A part of a vector goes through a local array: StoreSlicePart converts the slice to a
		// whole vector's array pointer, which checkptr (-race) rejects at the end of an allocation.
		var d32 [8]float32
		var i64 [8]float64
		dl.Store(&d32)
		inv.Store(&i64)
		copy(v.dl[g:g+k], d32[:k])
		copy(v.inv[g:g+k], i64[:k])
	}
}

// maxPair halves the partial maxima of a and b: lane i of the result is the larger of lanes lo[i]
// and hi[i] of a‖b (the indices pair up a group's partials).
func maxPair(a, b archsimd.Float32x16, lo, hi archsimd.Uint32x16) archsimd.Float32x16 {
	return a.ConcatPermute(b, lo).Max(a.ConcatPermute(b, hi))
}

// groupSums writes Σ x over each group of 64 to sum: per group four 16-lane vectors added, then
// the lanes in a tree (a different order from groupSumsPortable's, so the last bits may differ).
func groupSums(sum, x []float32) {
	if !archsimd.X86.AVX512() {
		groupSumsPortable(sum, x)
		return
	}
	_ = x[len(sum)*GroupSize-1]
	xp := unsafe.Pointer(unsafe.SliceData(x))
	var l [16]float32
	for g := range sum {
		p := unsafe.Add(xp, 4*GroupSize*g)
		f32x16(p).Add(f32x16(unsafe.Add(p, 64))).Add(f32x16(unsafe.Add(p, 128)).Add(f32x16(unsafe.Add(p, 192)))).Store(&l)
		sum[g] = (((l[0] + l[8]) + (l[4] + l[12])) + ((l[2] + l[10]) + (l[6] + l[14]))) +
			(((l[1] + l[9]) + (l[5] + l[13])) + ((l[3] + l[11]) + (l[7] + l[15])))
	}
	archsimd.ClearAVXUpperBits()
}
