//go:build goexperiment.simd && amd64

package cpu

import (
	"math/rand/v2"
	"testing"

	"simd/archsimd"
)

// TestReadSum512 checks the prefetching streaming read against the plain Go sum, bit for bit (both
// are the wrapping uint64 sum), at lengths around its two-line step and its one-line and word tails,
// on words large enough to carry out of every lane.
func TestReadSum512(t *testing.T) {
	if !archsimd.X86.AVX512() {
		t.Skip("readSum512 needs AVX-512")
	}
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 1000, 4096 + 3} {
		x := make([]uint64, n)
		for i := range x {
			x[i] = r.Uint64()
		}
		if got, want := readSum512(x), readSumPortable(x); got != want {
			t.Errorf("len %d: readSum512 = %#x, want %#x", n, got, want)
		}
	}
}
