package cpu

import (
	"math"
	"slices"
	"testing"
)

// groupSumTol: groupSums against the float64 sum, relative to Σ|x| over the group (float32 adds of
// 64 terms in any order: under 64 roundings of at most 2^-24 each).
const groupSumTol = 64 * 0x1p-24

// TestGroupSums holds the group sums Prepare computes to the float64 sum, on groups with wide
// dynamic range and cancellation.
func TestGroupSums(t *testing.T) {
	r := newRand(11)
	for _, n := range []int{64, 512, 2048} {
		x := randVec(r, n)
		for i := range x {
			x[i] *= float32(math.Pow(10, float64(r.IntN(7)-3)))
		}
		sum := make([]float32, n/GroupSize)
		groupSums(sum, x)
		for g := range sum {
			var want, abs float64
			for _, e := range x[g*GroupSize : (g+1)*GroupSize] {
				want += float64(e)
				abs += math.Abs(float64(e))
			}
			if d := math.Abs(float64(sum[g]) - want); d > groupSumTol*abs {
				t.Fatalf("n %d group %d: %g, want %g (|Δ| %.3g > %.3g)", n, g, sum[g], want, d, groupSumTol*abs)
			}
		}
	}
}

// TestVecP8FollowsPrepare: an 8-bit mat-vec reads the input of the latest Prepare, not the one the
// Vec's 8-bit order was first filled from (that order is filled lazily, once per Prepare).
func TestVecP8FollowsPrepare(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	r := newRand(12)
	m := randQMat(r, 8, 96, 512)
	x1, x2 := randVec(r, 512), randVec(r, 512)
	for name, k := range variants(p) {
		fresh := func(x []float32) []float32 {
			v := k.NewVec(512)
			v.Prepare(x)
			y := make([]float32, m.Out)
			k.QMatVec(y, m, v)
			return y
		}
		want := fresh(x2)
		v := k.NewVec(512)
		y := make([]float32, m.Out)
		v.Prepare(x1)
		k.QMatVec(y, m, v)
		v.Prepare(x2)
		k.QMatVec(y, m, v)
		if !slices.Equal(y, want) {
			t.Fatalf("%s: after a second Prepare the 8-bit mat-vec gave %v…, a fresh Vec %v…", name, y[:3], want[:3])
		}
	}
}
