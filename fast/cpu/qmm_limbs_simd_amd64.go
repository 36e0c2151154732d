//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// recordPatternsSIMD is recordPatterns in 512-bit vectors where the CPU has AVX-512 (it reports
// false, doing nothing, elsewhere): each pair's multiplier pattern as one permute of the block's
// scales. c: the Vec's vector constants.
func recordPatternsSIMD(rec []byte, dl []float32, blocks int, scale float32, c *limbConsts) bool {
	if !archsimd.X86.AVX512() {
		return false
	}
	if len(rec) < blocks*recBlockBytes || len(dl) < 8*blocks {
		panic("cpu: recordPatternsSIMD: rec or dl too short")
	}
	rp := unsafe.Pointer(unsafe.SliceData(rec))
	sc := archsimd.BroadcastFloat32x4(scale).Broadcast1To16()
	var zero archsimd.Float32x16
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
