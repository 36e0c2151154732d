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
// 2 KiB. Measured (BenchmarkQMatVec, 4-bit [2048, 2048] from DRAM, one worker, int16 activations):
// 6.6 GB/s without prefetching, 8.6 at 1 KiB, 9.1 at 2 KiB, 8.3 at 4 KiB, 7.4 at 6 KiB; PREFETCHT1
// (L2) was 10% slower than T0 at its best distance. The hardware prefetchers alone leave the
// kernels stalled on DRAM for about as long as they compute.
const prefetchAhead = 2048
