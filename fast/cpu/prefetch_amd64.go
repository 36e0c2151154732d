//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

// prefetch asks for lines 64-byte cache lines from p to be brought into the L1 cache (lines ≥ 1).
// Neither archsimd nor the compiler expose PREFETCH; prefetch_amd64.s is the one assembly
// function of the SIMD kernels. A prefetch never faults, so p may point past the data.
//
//go:noescape
func prefetch(p unsafe.Pointer, lines int)

// prefetchAhead is how far ahead of the row being computed the mat-vecs prefetch packed weights:
// 2 KiB, the best distance in BenchmarkQMatVec from DRAM (shorter ones arrive late, longer ones
// are evicted before use), into L1 (PREFETCHT0 does better than PREFETCHT1). The hardware
// prefetchers alone leave the kernels stalled on DRAM for about as long as they compute.
const prefetchAhead = 2048

//go:noescape
func readSumAsm(p unsafe.Pointer, lines int) uint64

// readSum512 is readSumAsm over x: the wrapping sum of its words (whole lines in assembly, the
// rest here).
func readSum512(x []uint64) uint64 {
	n := len(x) / 8 * 8
	var s uint64
	if n > 0 {
		s = readSumAsm(unsafe.Pointer(&x[0]), n/8)
	}
	for _, w := range x[n:] {
		s += w
	}
	return s
}
