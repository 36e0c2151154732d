//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

// qmmLanes computes rows [o, o + rows·units) of m (rows = laneRows(m.In)) for the 4 token rows
// whose lane records start at rec, reading their first n limbs, and stores the first ntok (1–4)
// tokens' results into y (y[t·yStride + r] for token t and row o + r: y starts at token t0's
// element o). With two rows a unit and an odd row count, the last row runs as a unit of its own
// (both halves that row) through a scratch of 8 floats.
func qmmLanes(y []float32, yStride int, m *QMat, o, nrows int, rec []byte, stride, n, ntok int) {
	if ntok < 1 || ntok > recTile || n < 1 || n > 2 {
		panic("cpu: qmmLanes: token or limb count out of range")
	}
	u := laneUnitsOf(m)
	groups, rb := m.Groups(), m.RowBytes()
	if u.rows == 0 || len(rec) < (recTile-1)*stride+u.steps*laneStepBytes || stride < u.steps*laneStepBytes {
		panic("cpu: qmmLanes: records do not match the matrix")
	}
	_ = y[(ntok-1)*yStride+nrows-1] // every store in bounds
	_ = m.W[(o+nrows)*rb-1]
	if units := nrows / u.rows; units > 0 {
		qmmLanesAsm(&y[0], 4*yStride, unsafe.Pointer(&m.W[o*rb]), u.unitW, u.halfW,
			unsafe.Pointer(&m.Scales[o*groups]), unsafe.Pointer(&m.Biases[o*groups]), u.unitSc, u.halfSc,
			u.steps, unsafe.Pointer(&rec[0]), stride, n, units, ntok, u.rows)
	}
	if nrows%u.rows != 0 { // rows = 2: the last row as both halves of a unit
		var tmp [2 * recTile]float32
		last := o + nrows - 1
		qmmLanesAsm(&tmp[0], 8, unsafe.Pointer(&m.W[last*rb]), 0, 0,
			unsafe.Pointer(&m.Scales[last*groups]), unsafe.Pointer(&m.Biases[last*groups]), 0, 0,
			u.steps, unsafe.Pointer(&rec[0]), stride, n, 1, ntok, 2)
		for t := range ntok {
			y[t*yStride+nrows-1] = tmp[2*t]
		}
	}
}

//go:noescape
func qmmLanesAsm(y *float32, yStride int, w unsafe.Pointer, unitW, halfW int, sc, bi unsafe.Pointer, unitSc, halfSc, steps int, rec unsafe.Pointer, recStride, limbs, units, ntok, rows int)

// laneTranspose writes the lane-order registers of one limb and parity of 16 groups (see
// laneTransposeAsm) from src into dst, and each lane's digit sum into sums; the slices' bounds are
// checked here.
func laneTranspose(dst []byte, dstStride int, src []byte, srcStride, half int, sums *[16]int32) bool {
	_ = dst[7*dstStride+63]
	_ = src[max(3*srcStride, half+3*srcStride)+63]
	laneTransposeAsm(unsafe.Pointer(&dst[0]), dstStride, unsafe.Pointer(&src[0]), srcStride, half, &sums[0])
	return true
}

//go:noescape
func laneTransposeAsm(dst unsafe.Pointer, dstStride int, src unsafe.Pointer, srcStride, half int, sums *int32)

// laneRepack writes units units of m from row o (rows = laneRows(m.In) rows a unit) in lane order
// into dst: [units, steps, laneWBytes] (laneRepackAsm).
func laneRepack(dst []byte, m *QMat, o, units int) {
	u := laneUnitsOf(m)
	groups, rb := m.Groups(), m.RowBytes()
	if u.rows == 0 || units < 1 || len(dst) < units*u.steps*laneWBytes {
		panic("cpu: laneRepack: scratch or matrix out of range")
	}
	_ = m.W[(o+units*u.rows)*rb-1]
	laneRepackAsm(unsafe.Pointer(&dst[0]), unsafe.Pointer(&m.W[o*rb]), u.unitW, u.halfW,
		unsafe.Pointer(&m.Scales[o*groups]), unsafe.Pointer(&m.Biases[o*groups]), u.unitSc, u.halfSc, u.steps, units)
}

//go:noescape
func laneRepackAsm(dst, w unsafe.Pointer, unitW, halfW int, sc, bi unsafe.Pointer, unitSc, halfSc, steps, units int)

// qmmLanesQuad computes quads·4 units of the weights ws (laneRepack's, steps steps a unit) for the
// laneQuadTokens token records from rec, reading n limbs, storing the first ntok tokens' rows·4·quads
// results into y (y[t·yStride + r]).
func qmmLanesQuad(y []float32, yStride int, ws []byte, steps, quads int, rec []byte, stride, n, ntok, rows int) {
	if ntok < 1 || ntok > laneQuadTokens || n < 1 || n > 2 || rows < 1 || rows > 2 || quads < 1 {
		panic("cpu: qmmLanesQuad: argument out of range")
	}
	if len(ws) < 4*quads*steps*laneWBytes || stride < steps*laneStepBytes || len(rec) < (laneQuadTokens-1)*stride+steps*laneStepBytes {
		panic("cpu: qmmLanesQuad: weights or records too short")
	}
	_ = y[(ntok-1)*yStride+4*quads*rows-1]
	qmmLanesQuadAsm(&y[0], 4*yStride, unsafe.Pointer(&ws[0]), steps*laneWBytes, steps,
		unsafe.Pointer(&rec[0]), stride, n, quads, ntok, rows)
}

//go:noescape
func qmmLanesQuadAsm(y *float32, yStride int, wt unsafe.Pointer, unitStride, steps int, rec unsafe.Pointer, recStride, limbs, quads, ntok, rows int)

// laneQuadsOuter is qmmLanesRows's quad-by-quad order (laneQuadsFunc) on the assembly kernels,
// the geometry and bounds checked once a call rather than once a quad and tile (per-call overhead
// that was ~5% of an expert's 8-token GEMM: BenchmarkQMatMatIntCold).
func laneQuadsOuter(y []float32, m *QMat, o, quads int, ws, rec []byte, stride, n, t int) {
	u := laneUnitsOf(m)
	groups, rb := m.Groups(), m.RowBytes()
	tiles := (t + laneQuadTokens - 1) / laneQuadTokens // a last tile's tail reads all its records
	if u.rows == 0 || quads < 1 || t < 1 || n < 1 || n > 2 || len(ws) < 4*u.steps*laneWBytes ||
		stride < u.steps*laneStepBytes || len(rec) < (tiles*laneQuadTokens-1)*stride+u.steps*laneStepBytes {
		panic("cpu: laneQuadsOuter: argument out of range")
	}
	end := o + 4*quads*u.rows // past the last row
	_ = m.W[end*rb-1]
	_ = m.Scales[end*groups-1]
	_ = m.Biases[end*groups-1]
	_ = y[(t-1)*m.Out+end-1] // every store in bounds
	for q := range quads {
		r := o + 4*q*u.rows
		laneRepackAsm(unsafe.Pointer(&ws[0]), unsafe.Pointer(&m.W[r*rb]), u.unitW, u.halfW,
			unsafe.Pointer(&m.Scales[r*groups]), unsafe.Pointer(&m.Biases[r*groups]), u.unitSc, u.halfSc, u.steps, 4)
		for t0, nt := 0, 0; t0 < t; t0 += nt {
			nt = laneQuadTile(t - t0)
			qmmLanesQuadAsm(&y[t0*m.Out+r], 4*m.Out, unsafe.Pointer(&ws[0]), u.steps*laneWBytes, u.steps,
				unsafe.Pointer(&rec[t0*stride]), stride, n, 1, nt, u.rows)
		}
	}
}
