//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// qmv4RowsVNNI computes rows [lo, hi) of y: [Out] = W: [Out, In] · x: [In] for a 4-bit W with
// AVX-512 VNNI: x as three int8 limbs per element (Vec.l8, |x − x̂| ≤ 6e-8·max|x| per group; see
// prepareLimbs), the dot products in exact integers, the rows, their scales, biases and prefetch in
// assembly loops (qmv_vnni_amd64.s; neither archsimd nor the compiler have VPDPBUSD). Rows whose
// group count is not a multiple of 8 (none of the real model's) run the float32 512-bit kernel
// instead. Thread mapping: the pool hands each worker ranges of whole 8-row blocks (as for every
// mat-vec); one assembly call runs a worker's range four rows per pass where the CPU has GFNI
// (qmv4Rows4VNNIAsm: the limbs loaded once for four rows), the rest a row at a time
// (qmv4RowsVNNIAsm), one 8-group block (four pairs of groups) per loop pass. Both give the same
// bits for a row.
func qmv4RowsVNNI(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups := m.Groups()
	if groups%8 != 0 {
		qmv4RowsSIMD512(y, m, v, lo, hi)
		return
	}
	if lo >= hi {
		return
	}
	rb := m.RowBytes()
	if n4 := (hi - lo) / 4; n4 > 0 && archsimd.X86.AVX512GFNI() {
		qmv4Rows4VNNIAsm(&y[lo], n4, unsafe.Pointer(&m.W[lo*rb]),
			unsafe.Pointer(&m.Scales[lo*groups]), unsafe.Pointer(&m.Biases[lo*groups]), groups/8,
			unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0]), vnniPrefetch(rb))
		lo += 4 * n4
	}
	if lo < hi {
		qmv4RowsVNNIAsm(&y[lo], hi-lo, unsafe.Pointer(&m.W[lo*rb]),
			unsafe.Pointer(&m.Scales[lo*groups]), unsafe.Pointer(&m.Biases[lo*groups]), groups/8,
			unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0]))
	}
}

//go:noescape
func qmv4RowsVNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer)

// vnniPrefetchL2 is how far ahead the VNNI mat-vecs prefetch packed weights into L2 (PREFETCHT1), at
// least: 8 KiB. Each row's line is also prefetched into L1 (PREFETCHT0) nearer, one four-row pass on
// (or 2 KiB in the one-row loop), where the L2 copy makes the L1 fill short. The L1 prefetch alone
// from DRAM held a Zen 4 core to 10 GB/s in BenchmarkQMatVec: each outstanding L1 fill holds one of
// the core's few L1 miss buffers for a whole DRAM latency. With the far L2 prefetch the core reaches
// its in-cache compute rate (about 25 GB/s) and two cores the streaming bandwidth.
const vnniPrefetchL2 = 8192

// vnniPrefetchRows4 is how far ahead the four-row pass prefetches into L2, at least: 16 KiB, twice
// the one-row loop's distance. With its prefetches in address order (qmv4Rows4VNNIAsm) 16 KiB
// streamed 2–4% faster than 8 in BenchmarkMatVecStream's rounds at either bandwidth phase.
const vnniPrefetchRows4 = 16384

// vnniPrefetch returns the four-row pass's L2 prefetch distance in bytes for rows of rb bytes: the
// fewest whole passes (4·rb each: a pass prefetches the bytes of a later pass) that reach
// vnniPrefetchRows4, and at least two: one pass on is the L1 prefetch's (4096-wide rows: one pass is
// 8 KiB, and the L2 prefetch one pass on ran at half the speed of two in BenchmarkQMatVec).
func vnniPrefetch(rb int) int {
	pass := 4 * rb
	return pass * max(2, (vnniPrefetchRows4+pass-1)/pass)
}

//go:noescape
func qmv4Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf int)
