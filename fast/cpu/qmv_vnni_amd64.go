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
	qmv4RowsVNNINext(y, m, v, lo, hi, following{})
}

// qmv4RowsVNNINext is qmv4RowsVNNI told where its caller is likely to read next: the four-row
// passes' last prefetches fetch those bytes (qmvPasses).
func qmv4RowsVNNINext(y []float32, m *QMat, v *Vec, lo, hi int, f following) {
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
		if (hi-lo)%4 != 0 {
			f = following{} // the one-row loop runs after the passes
		}
		qmvPasses(qmv4Rows4VNNIAsm, y, m, v, lo, n4, f)
		lo += 4 * n4
	}
	if lo < hi {
		qmv4RowsVNNIAsm(&y[lo], hi-lo, unsafe.Pointer(&m.W[lo*rb]),
			unsafe.Pointer(&m.Scales[lo*groups]), unsafe.Pointer(&m.Biases[lo*groups]), groups/8,
			unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0]))
	}
}

// passKernel is the four-row VNNI mat-vecs' signature (qmv4Rows4VNNIAsm, qmv8Rows4VNNIAsm): n
// passes of four rows from w, sc, bi; each pass prefetches into L2 the weights pf bytes past its
// own, and a line of scales and one of biases a block pfs bytes past its scales and pfb past those.
type passKernel func(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf, pfs, pfb int)

// qmvPasses runs n4 four-row passes of m from row lo with run, each prefetching the bytes
// vnniPrefetch on. The last passes' prefetches would land past the rows: where f says where the
// caller reads next (the next matrix of a gathered dispatch's take, or the block its next take
// would start at), they fetch those bytes instead, which the next call's own prefetches start
// past; where the rows end m and nothing is known, they fetch the rows' own lines (in cache: no
// read) rather than whatever the file holds after m (in a stacked expert tensor, an expert no one
// may read). In BenchmarkMatVecStream's gathered pass (16 scattered [512, 2048] matrices a
// dispatch, as decode's routed gate and up) the boundaries had cost 4–6% against the same bytes in
// one matrix.
func qmvPasses(run passKernel, y []float32, m *QMat, v *Vec, lo, n4 int, f following) {
	groups, rb := m.Groups(), m.RowBytes()
	xl, dl, sum := unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0])
	call := func(c passCall) {
		run(&y[c.row], c.passes, unsafe.Pointer(&m.W[c.row*rb]), unsafe.Pointer(&m.Scales[c.row*groups]),
			unsafe.Pointer(&m.Biases[c.row*groups]), groups/8, xl, dl, sum, c.pf, c.pfs, c.pfb)
	}
	body := passBody(m, lo, n4, f.known())
	if body > 0 {
		call(passPlain(m, lo, body))
	}
	if body < n4 {
		next, row := f.resolve() // as late as it can: a take's end looks at the dispatch now
		call(passTail(m, lo, n4, body, next, row))
	}
}

// passCall is one call of a passKernel: passes four-row passes from row, with its prefetch
// offsets.
type passCall struct{ row, passes, pf, pfs, pfb int }

// passBody returns how many of qmvPasses's n4 passes of m from row lo prefetch within m: all of
// them, unless a next read may be known or the rows end m, when the last vnniPrefetch's worth go to
// passTail.
func passBody(m *QMat, lo, n4 int, known bool) int {
	if !known && lo+4*n4 < m.Out {
		return n4
	}
	return max(0, n4-vnniPrefetch(m.RowBytes())/(4*m.RowBytes()))
}

// passPlain is the call of passes passes of m from row lo prefetching vnniPrefetch on in m.
func passPlain(m *QMat, lo, passes int) passCall {
	rb, groups := m.RowBytes(), m.Groups()
	pf := vnniPrefetch(rb)
	return passCall{lo, passes, pf, pf / (4 * rb) * 4 * 2 * groups, addr(&m.Biases[lo*groups]) - addr(&m.Scales[lo*groups])}
}

// passTail is the call of passes body..n4 of qmvPasses's n4 from row lo, aimed at next's row row:
// pass p of the n4 prefetches next's bytes (p + ahead − n4) passes in, as offsets from p's own.
// With next nil the passes prefetch their own lines where the rows end m, else past them in m as
// passPlain. Offsets between m's and next's bytes are address differences: the kernels only
// prefetch through them, which never faults.
func passTail(m *QMat, lo, n4, body int, next *QMat, row int) passCall {
	r := lo + 4*body
	if next == nil {
		c := passPlain(m, r, n4-body)
		if lo+4*n4 == m.Out {
			c.pf, c.pfs = 0, 0
		}
		return c
	}
	groups, rb := m.Groups(), m.RowBytes()
	pass, sbPass := 4*rb, 4*2*groups // bytes of weights, and of scales, a pass
	ahead := vnniPrefetch(rb) / pass
	ng := row * next.Groups()
	nw, ns := addr(&next.W[row*next.RowBytes()]), addr(&next.Scales[ng])
	return passCall{r, n4 - body,
		nw - addr(&m.W[lo*rb]) + (ahead-n4)*pass,
		ns - addr(&m.Scales[lo*groups]) + (ahead-n4)*sbPass,
		addr(&next.Biases[ng]) - ns}
}

// addr is p's address, for offsets between the kernels' operands.
func addr[T any](p *T) int { return int(uintptr(unsafe.Pointer(p))) }

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
func qmv4Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf, pfs, pfb int)
