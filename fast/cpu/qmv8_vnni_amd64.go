//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

// qmv8RowsVNNI computes rows [lo, hi) of y: [Out] = W: [Out, In] · x: [In] for an 8-bit W with
// AVX-512 VNNI and VBMI, as qmv4RowsVNNI does for 4-bit rows: x as its three int8 limbs (Vec.l8)
// against the weight bytes, the dot products in exact integers (qmv8Rows4VNNIAsm), four rows a
// pass. The float32 kernel it replaces unpacked every weight to float32, about 10 GB/s a core
// (BenchmarkQMatVec's q8 router). Rows past the last whole pass (an Out that is not a multiple of
// 4: the shared expert's one-row gate) run as a pass over a stack copy of them padded with
// repeats of the last, so that every row gets the same operations wherever a split puts it.
// Rows whose group count is not a multiple of 8, or wider than qmv8PadRows, and a Vec without
// limbs run the float32 kernel (qmv8Limbs).
func qmv8RowsVNNI(y []float32, m *QMat, v *Vec, lo, hi int) {
	qmv8RowsVNNINext(y, m, v, lo, hi, following{})
}

// qmv8RowsVNNINext is qmv8RowsVNNI with the passes' last prefetches aimed at next, as
// qmv4RowsVNNINext.
func qmv8RowsVNNINext(y []float32, m *QMat, v *Vec, lo, hi int, f following) {
	if !qmv8Limbs(m, v) {
		qmv8RowsSIMD(y, m, v, lo, hi)
		return
	}
	if lo >= hi {
		return
	}
	if n4 := (hi - lo) / 4; n4 > 0 {
		if (hi-lo)%4 != 0 {
			f = following{} // the padded pass runs after these
		}
		qmvPasses(qmv8Rows4VNNIAsm, y, m, v, lo, n4, f)
		lo += 4 * n4
	}
	if lo < hi {
		qmv8RowsPadded(y, m, v, lo, hi)
	}
}

// qmv8RowsPadded runs rows [lo, hi) (fewer than 4) of qmv8RowsVNNI as one four-row pass over a
// stack copy of them, padded with repeats of the last (its own function, so that the stack copy
// is not part of every call's frame).
//
//go:noinline
func qmv8RowsPadded(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	var w [4 * qmv8PadRows]byte
	var sc, bi [4 * qmv8PadRows / GroupSize]uint16
	var out [4]float32
	for r := range 4 {
		src := min(lo+r, hi-1)
		copy(w[r*rb:(r+1)*rb], m.W[src*rb:(src+1)*rb])
		copy(sc[r*groups:(r+1)*groups], m.Scales[src*groups:(src+1)*groups])
		copy(bi[r*groups:(r+1)*groups], m.Biases[src*groups:(src+1)*groups])
	}
	pf := vnniPrefetch(rb)
	qmv8Rows4VNNIAsm(&out[0], 1, unsafe.Pointer(&w[0]), unsafe.Pointer(&sc[0]), unsafe.Pointer(&bi[0]), groups/8,
		unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0]),
		pf, pf/rb*2*groups, addr(&bi[0])-addr(&sc[0]))
	copy(y[lo:hi], out[:hi-lo])
}

//go:noescape
func qmv8Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf, pfs, pfb int)
