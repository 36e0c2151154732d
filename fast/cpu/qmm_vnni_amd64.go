//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

// qmm4TileVNNI computes the 2×4 tile Y[t0+t, o+r] (r < 2, t < 4) of the integer GEMM into out
// (out[4r+t]) from the records at rec (token row t0's) with the first n limbs; rows o and o+1 of m
// (o+1 < Out, or o itself twice for an odd last row).
func qmm4TileVNNI(out *[8]float32, m *QMat, o, o1 int, rec []byte, stride, n int, shift uint) {
	checkLimbShift(shift)
	groups, rb := m.Groups(), m.RowBytes()
	pf := qmmPrefetchRows(rb)
	qmm4TileVNNIAsm(&out[0], unsafe.Pointer(&m.W[o*rb]), (o1-o)*rb,
		unsafe.Pointer(&m.Scales[o*groups]), unsafe.Pointer(&m.Biases[o*groups]), (o1-o)*groups*2,
		groups/8, unsafe.Pointer(&rec[0]), stride, n, int(shift), pf*rb, pf*groups*2)
}

//go:noescape
func qmm4TileVNNIAsm(out *float32, w unsafe.Pointer, rowBytes int, sc, bi unsafe.Pointer, scStride, blocks int, rec unsafe.Pointer, recStride, limbs, shift, pfW, pfSc int)

// qmmPrefetchRows returns how many rows ahead the 2-group tile prefetches its weights into L2 for
// rows of rb bytes: whole row pairs, at least vnniPrefetchL2 bytes (as the mat-vec does).
func qmmPrefetchRows(rb int) int {
	return 2 * max(2, (vnniPrefetchL2+2*rb-1)/(2*rb))
}

// qmm4RowsVNNI computes the 2×4 tiles of rows [o, o+2·pairs) of m for the 4 token rows whose
// records start at rec, and stores the first ntok (1–4) tokens' results straight into y
// (y[t·yStride + r] for token t and row o+r: y starts at token t0's element o). A tile of one or two
// tokens multiplies only those two records.
func qmm4RowsVNNI(y []float32, yStride int, m *QMat, o, pairs int, rec []byte, stride, n int, shift uint, ntok int) {
	groups, rb := m.Groups(), m.RowBytes()
	if ntok < 1 || ntok > recTile {
		panic("cpu: qmm4RowsVNNI: token count out of range")
	}
	checkLimbShift(shift)
	_ = y[(ntok-1)*yStride+2*pairs-1] // every store in bounds
	_ = m.W[(o+2*pairs)*rb-1]
	pf := qmmPrefetchRows(rb)
	qmm4RowsVNNIAsm(&y[0], unsafe.Pointer(&m.W[o*rb]), rb,
		unsafe.Pointer(&m.Scales[o*groups]), unsafe.Pointer(&m.Biases[o*groups]), groups*2,
		groups/8, unsafe.Pointer(&rec[0]), stride, n, int(shift), 4*yStride, pairs, ntok, pf*rb, pf*groups*2)
}

//go:noescape
func qmm4RowsVNNIAsm(y *float32, w unsafe.Pointer, rowBytes int, sc, bi unsafe.Pointer, scStride, blocks int, rec unsafe.Pointer, recStride, limbs, shift, yStride, pairs, ntok, pfW, pfSc int)
