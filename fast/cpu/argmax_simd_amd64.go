//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// argmaxLanes are the lane numbers 0…15, the first vector's element indices.
var argmaxLanes = [16]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// argmaxSIMD is argmaxPortable 16 lanes at a time (AVX-512, n ≥ 16): each lane keeps its largest
// value above −Inf and that value's first index (a strict compare: a NaN never passes it, a later
// equal value never replaces an earlier one); the lanes then reduce to the largest value at the
// smallest index, and the tail of n mod 16 values runs the same strict compare. When no value
// passed (every value −Inf or NaN) the portable loop decides, as its rules for those are its own.
func argmaxSIMD(x []float32) int {
	n := len(x)
	if n < 16 || !archsimd.X86.AVX512() {
		return argmaxPortable(x)
	}
	px := unsafe.Pointer(&x[0])
	m := archsimd.BroadcastFloat32x16(float32(math.Inf(-1)))
	idx := archsimd.BroadcastInt32x16(-1)
	lane := archsimd.LoadInt32x16(&argmaxLanes)
	step := archsimd.BroadcastInt32x16(16)
	i := 0
	for ; i+16 <= n; i += 16 {
		v := f32x16(unsafe.Add(px, 4*i))
		gt := v.Greater(m)
		m = v.Merge(m, gt)
		idx = lane.Merge(idx, gt)
		lane = lane.Add(step)
	}
	var mv [16]float32
	var iv [16]int32
	m.Store(&mv)
	idx.Store(&iv)
	archsimd.ClearAVXUpperBits()
	best, bv := -1, float32(math.Inf(-1))
	for l := range 16 {
		if j := int(iv[l]); j >= 0 && (mv[l] > bv || (mv[l] == bv && j < best)) {
			best, bv = j, mv[l]
		}
	}
	for j := i; j < n; j++ {
		if x[j] > bv {
			best, bv = j, x[j]
		}
	}
	if best < 0 {
		return argmaxPortable(x)
	}
	return best
}
