//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// limbsSIMD is prepareLimbs in 512-bit vectors, where the CPU has AVX-512 (it reports false, having
// done nothing, elsewhere). Three passes: the vector |x| maximum per group (16 lanes, into
// v.lanes); in scalar code, each group's d and 65536/d (shared with the portable version:
// limbScaleOf); then per group the even and odd elements are gathered (VPERMI2PS), widened to
// float64, scaled, rounded to nearest-even and truncated to int32 (exact: already integral), split
// into the three signed bytes by shifts, and narrowed into place (VPMOVDB). The result is bit for
// bit the portable one's: the same float64 product and the same rounding.
func limbsSIMD(v *Vec, x []float32) bool {
	if !archsimd.X86.AVX512() {
		return false
	}
	pairs := len(v.sum) / 2
	if pairs == 0 {
		return true
	}
	groups := 2 * pairs
	var c limbConsts
	c.fill()
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
	archsimd.ClearAVXUpperBits()
	for g := range groups {
		var amax float32
		for _, e := range v.lanes[16*g : 16*g+16] {
			amax = max(amax, e)
		}
		v.dl[g], v.inv[g] = limbScaleOf(float64(amax))
	}
	even, odd := archsimd.LoadUint32x16(&c.even), archsimd.LoadUint32x16(&c.odd)
	s24, s8 := archsimd.LoadInt32x16(&c.s24), archsimd.LoadInt32x16(&c.s8)
	for g := range groups {
		p := unsafe.Add(xp, 4*GroupSize*g)
		iv := [2]float64{v.inv[g]} // not a load at &inv[g]: its second lane is past the end for the last group
		inv := archsimd.LoadFloat64x2(&iv).Broadcast1To8()
		x0, x1 := f32x16(p), f32x16(unsafe.Add(p, 64))
		x2, x3 := f32x16(unsafe.Add(p, 128)), f32x16(unsafe.Add(p, 192))
		// out: the group's 32 bytes in the a_even block; b and c 128 and 256 bytes on, the odd
		// elements 64 bytes on.
		out := unsafe.Pointer(&v.l8[(g/2)*limbBytes+32*(g%2)])
		limbs16(out, x0.ConcatPermute(x1, even), inv, s24, s8)
		limbs16(unsafe.Add(out, 16), x2.ConcatPermute(x3, even), inv, s24, s8)
		limbs16(unsafe.Add(out, 64), x0.ConcatPermute(x1, odd), inv, s24, s8)
		limbs16(unsafe.Add(out, 80), x2.ConcatPermute(x3, odd), inv, s24, s8)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// limbs16 writes the limbs a, b, c of the 16 values e·inv (rounded) to out, out+128 and out+256.
func limbs16(out unsafe.Pointer, e archsimd.Float32x16, inv archsimd.Float64x8, s24, s8 archsimd.Int32x16) {
	lo := e.GetLo().ConvertToFloat64().Mul(inv).RoundToEvenScaled(0).ConvertToInt32()
	hi := e.GetHi().ConvertToFloat64().Mul(inv).RoundToEvenScaled(0).ConvertToInt32()
	var L archsimd.Int32x16
	L = L.SetLo(lo).SetHi(hi)
	c := L.ShiftLeft(s24).ShiftRight(s24) // the low byte, sign-extended
	L = L.Sub(c).ShiftRight(s8)
	b := L.ShiftLeft(s24).ShiftRight(s24)
	a := L.Sub(b).ShiftRight(s8)
	a.TruncateToInt8().Store((*[16]int8)(out))
	b.TruncateToInt8().Store((*[16]int8)(unsafe.Add(out, 128)))
	c.TruncateToInt8().Store((*[16]int8)(unsafe.Add(out, 256)))
}

// limbConsts are limbsSIMD's vector constants, filled by scalar stores before any vector code.
type limbConsts struct {
	abs       [16]uint32 // the float32 sign bit cleared
	even, odd [16]uint32 // VPERMI2PS indices of the even and odd elements of two vectors
	s24, s8   [16]int32  // shift counts
}

func (c *limbConsts) fill() {
	for i := range 16 {
		c.abs[i] = 0x7FFFFFFF
		c.even[i], c.odd[i] = uint32(2*i), uint32(2*i+1)
		c.s24[i], c.s8[i] = 24, 8
	}
}
