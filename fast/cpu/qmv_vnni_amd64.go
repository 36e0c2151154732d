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

// vnniPrefetch returns how far ahead the four-row pass prefetches, in bytes, for rows of rb bytes:
// the fewest whole passes (4·rb each) that reach 2 KiB, the one-row loop's distance (one pass, 4 or
// 8 KiB, for the model's 2048- and 4096-wide rows; two, 2 KiB, for its 512-wide ones).
func vnniPrefetch(rb int) int {
	pass := 4 * rb
	return pass * ((2048 + pass - 1) / pass)
}

//go:noescape
func qmv4Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf int)
