package cpu

// The lane-group integer GEMM (qmm_lanes_amd64.s): every 32-bit lane of a VPDPBUSD sum holds one
// group's 64 products, so the float tail (convert, limb scales, row scales, biases) runs once per
// 16 groups, where the 2-group tile (qmm_vnni_amd64.s) runs it once per 2. The checkpoint's layout
// puts two groups in every 64 bytes: the weights are transposed into lane order per call, into a
// scratch that a 4-row × 3-token tile reads (laneRepackAsm, qmm_lanes_quad_amd64.s), or for a call
// of 1, 2 or 4 tokens in registers per 4-token tile (qmmLanesAsm); the token records are written
// in lane order.
//
// A unit is 16 groups: one row's 1024 inputs a step (In a multiple of 1024), or the 8 groups of each
// of two rows (In = 512, the expert down projections). A step's record, per token:
//
//	limb l (0, 1), register j = 2k + p (k = 0…7, p = 0 even / 1 odd elements): 64 bytes at
//	  1024·l + 64·j, lane L's 4 bytes the limb's digits of elements 2·(4k+m) + p (m = 0…3) of the
//	  lane's group;
//	2048: the lanes' limb scales (dl·qmmLimbScale(n)), 16 float32;
//	2112: the lanes' group sums Σ x̂, 16 float32.
//
// Lane 4c + i holds group laneGroup(4c + i) = 8·(c/2) + 2i + c%2 of the step (the order the
// in-register transpose produces); with two rows a unit, lanes of groups 8–15 are the second row's,
// and its records repeat the 8 groups' digits in both halves.
const (
	laneStepBytes = 2*1024 + 128 // one step of one token's record: 2 limbs, limb scales, group sums
	lanePatOff    = 2048
	laneSumOff    = 2112
	laneWBytes    = 16*64 + 128 // one step of one unit's weights in lane order: nibbles, scales, biases
	// laneQuadTokens is the token tile of qmmLanesQuad; from laneQuadMinTokens tokens on (and at
	// exactly laneQuadTokens) writing the weights out in lane order once per call beats
	// transposing them per tile of recTile (BenchmarkQMatMatIntTail, BenchmarkQMatMatIntFewRows:
	// T = 4 runs one tile of 4 in registers where the quad would run 3 + 1).
	laneQuadTokens    = 3
	laneQuadMinTokens = 5
	// laneQuadOuterBytes: while a call's records take at most this many bytes, a quad's weights
	// are written out and run against every token before the next quad's (they stay in L1, and
	// the next quads' reads from DRAM overlap the work: BenchmarkQMatMatIntCold); past it a whole
	// row block is written out first (the records would not stay in L2 across the quads).
	laneQuadOuterBytes = 512 << 10
)

// qmmLanesFunc computes rows [o, o+nrows) of the integer GEMM on the lane-group kernel for a tile
// of ntok ≤ recTile tokens whose lane records start at rec, straight into y (qmmLanes).
type qmmLanesFunc func(y []float32, yStride int, m *QMat, o, nrows int, rec []byte, stride, n, ntok int)

// laneRepackFunc writes units units of m from row o in lane order into dst (laneRepack).
type laneRepackFunc func(dst []byte, m *QMat, o, units int)

// qmmLanesQuadFunc computes quads runs of 4 units of repacked weights ws (steps steps a unit)
// against a tile of ntok ≤ laneQuadTokens tokens, straight into y (qmmLanesQuad).
type qmmLanesQuadFunc func(y []float32, yStride int, ws []byte, steps, quads int, rec []byte, stride, n, ntok, rows int)

// laneQuadsFunc runs quads quads of 4 units of m from row o for all t tokens whose records start
// at rec, quad by quad: each quad's weights written out in lane order into ws, then run against every
// tile of laneQuadTokens tokens (laneQuadsOuter).
type laneQuadsFunc func(y []float32, m *QMat, o, quads int, ws, rec []byte, stride, n, t int)

// qmmLanesRows is qmmIntRows on the lane-group kernels: per block of qmmVNNIRows rows, with
// laneQuadTokens or at least laneQuadMinTokens tokens, the block's whole quads of units are
// written out in lane order once (laneRepack) and run against tiles of laneQuadTokens tokens
// (qmmLanesQuad); the rest, and every block of a call with fewer tokens, on qmmLanes (the weights
// transposed in registers per tile of recTile tokens).
func (k *Kernels) qmmLanesRows(w int, y []float32, m *QMat, r *limbRecords, t, o0, o1 int) {
	checkLimbShift(k.shift)
	rows, steps := r.lanes, r.blocks
	for b0 := o0; b0 < o1; b0 += qmmVNNIRows {
		b1 := min(b0+qmmVNNIRows, o1)
		done := b0
		if quads := (b1 - b0) / (4 * rows); quads > 0 && (t >= laneQuadMinTokens || t == laneQuadTokens) && k.f.qmmLanesQuad != nil {
			units := 4 * quads
			need := units * steps * laneWBytes
			if len(k.laneW[w]) < need {
				k.laneW[w] = make([]byte, qmmVNNIRows*steps*laneWBytes)
			}
			ws := k.laneW[w][:need]
			if t*r.stride <= laneQuadOuterBytes {
				k.f.laneQuads(y, m, b0, quads, ws, r.rec, r.stride, k.limbs, t)
			} else {
				k.f.laneRepack(ws, m, b0, units)
				for t0, nt := 0, 0; t0 < t; t0 += nt {
					nt = laneQuadTile(t - t0)
					k.f.qmmLanesQuad(y[t0*m.Out+b0:], m.Out, ws, steps, quads, r.rec[t0*r.stride:], r.stride, k.limbs, nt, rows)
				}
			}
			done = b0 + units*rows
		}
		if done < b1 {
			for t0 := 0; t0 < t; t0 += recTile {
				k.f.qmmLanes(y[t0*m.Out+done:], m.Out, m, done, b1-done, r.rec[t0*r.stride:], r.stride, k.limbs, min(recTile, t-t0))
			}
		}
	}
}

// laneQuadTile returns the tokens of the next quad tile where left tokens remain: laneQuadTokens,
// but 2 of a last 4 (2 + 2 rather than 3 + 1: a tile of one token loads the 4 units' weights for
// every 4 products, more than one load a cycle).
func laneQuadTile(left int) int {
	if left == 4 {
		return 2
	}
	return min(laneQuadTokens, left)
}

// useLanes reports whether mat-mats of width in run on the lane-group GEMM (qmm_lanes.go) rather
// than the 2-group tile.
func (k *Kernels) useLanes(in int) bool {
	return k.f.qmmLanes != nil && !k.noLanes && laneRows(in) > 0 && k.limbs <= 2
}

// pairTileTokens is the token count at which the 2-group tile beats the lane-group GEMM at widths
// the latter serves: with 2 tokens the lane kernel transposes each unit's weights in registers for
// only 4 products a weight, where the 2-group tile reads the checkpoint's layout as it lies
// (BenchmarkQMatMatIntFewRows: 512×2048 and 2048×512 from cache, 57–61 → 35–36 µs); at 3 tokens on
// the lane GEMM is ahead again (51 against 64 µs).
const pairTileTokens = 2

// recsLanes reports whether a call of t token rows of width in runs on the lane-group GEMM (its
// records in the lane layout) rather than the 2-group tile.
func (k *Kernels) recsLanes(t, in int) bool {
	return k.useLanes(in) && t != pairTileTokens
}

// laneRows returns the rows of one unit of the lane GEMM for input width in: 1 where in is a
// multiple of 1024, 2 where in = 512, 0 where the lane GEMM does not apply.
func laneRows(in int) int {
	switch {
	case in%1024 == 0:
		return 1
	case in == 512:
		return 2
	}
	return 0
}

// laneGroup returns the step-relative group (0–15) in lane L.
func laneGroup(L int) int {
	c, i := L/4, L%4
	return 8*(c/2) + 2*i + c%2
}

// laneSteps returns the steps of a row of width in (rows a unit: laneRows).
func laneSteps(in, rows int) int {
	if rows == 2 {
		return 1
	}
	return in / 1024
}

// laneUnits is the geometry of a matrix's lane units as the assembly walks them: rows a unit and
// steps a unit, and in bytes the stride from unit to unit and from a unit's first half (8 groups)
// to its second, in the packed weights (unitW, halfW) and in the bf16 scales and biases (unitSc,
// halfSc).
type laneUnits struct{ rows, steps, unitW, halfW, unitSc, halfSc int }

// laneUnitsOf returns m's lane geometry (rows 0 where the lane GEMM does not apply): one row a
// unit, its halves 256 bytes (8 groups) apart; or two rows a unit, its halves a row apart.
func laneUnitsOf(m *QMat) laneUnits {
	rows := laneRows(m.In)
	rb, sb := m.RowBytes(), 2*m.Groups()
	u := laneUnits{rows: rows, steps: laneSteps(m.In, rows), unitW: rows * rb, halfW: 256, unitSc: rows * sb, halfSc: 16}
	if rows == 2 {
		u.halfW, u.halfSc = rb, sb
	}
	return u
}

// ensureLanes sizes r for t token rows (rounded up to recTile) of width in in the lane layout.
func (r *limbRecords) ensureLanes(t, in int) {
	r.lanes = laneRows(in)
	steps := laneSteps(in, r.lanes)
	r.in, r.blocks, r.stride = in, steps, steps*laneStepBytes
	r.alloc(t)
}

// fillLanes writes token row t's lane record from x: [in], with v (a Vec of width in with the limb
// copy) as scratch, for a kernel that reads n limbs: the limbs as the mat-vec lays them out, each
// limb and parity of a step's 16 groups transposed into lane order with its lanes' digit sums
// (laneTranspose, else in plain Go), then each lane's limb scale and group sum Σ x̂: the sums of
// the first n limbs by Horner's rule, times the lane's limb scale.
func (r *limbRecords) fillLanes(t int, x []float32, v *Vec, n int) {
	v.limbsInto(v.l8, vecLimbLayout(), x)
	src := int8Bytes(v.l8)
	rec := r.rec[t*r.stride : (t+1)*r.stride]
	scale := qmmLimbScale(n)
	half := 0 // two rows a unit: both halves the same 8 groups
	if r.lanes == 1 {
		half = 4 * limbBytes
	}
	var sums [2][2][16]int32 // [limb][parity][lane]
	for st := range r.blocks {
		blk := rec[st*laneStepBytes : (st+1)*laneStepBytes]
		first := 8 * st * limbBytes // the step's first pair of groups (st = 0 with two rows a unit)
		for l := range 2 {
			for p := range 2 {
				dst, from := blk[1024*l+64*p:], src[first+(2*l+p)*64:]
				if !laneTranspose(dst, 128, from, limbBytes, half, &sums[l][p]) {
					laneTransposePortable(dst, 128, from, limbBytes, half, &sums[l][p])
				}
			}
		}
		pat := float32View(blk[lanePatOff : lanePatOff+64])
		gs := float32View(blk[laneSumOff : laneSumOff+64])
		for L := range 16 {
			g := laneGroup(L)
			if r.lanes == 1 {
				g += 16 * st
			} else {
				g %= 8
			}
			var tot int32
			for l := range n {
				tot = tot<<limbShift + sums[l][0][L] + sums[l][1][L]
			}
			pat[L] = v.dl[g] * scale
			gs[L] = float32(float64(tot) * float64(v.dl[g]*scale))
		}
	}
}

// laneTransposePortable is laneTranspose in plain Go: register k's lane L at dst + k·dstStride +
// 4L holds dword k of the lane's group (laneGroup(L): group s's 32 bytes at src + (s/2 mod 4)·srcStride
// + 32·(s%2), plus half for s ≥ 8), and sums[L] the sum of those 32 digits.
func laneTransposePortable(dst []byte, dstStride int, src []byte, srcStride, half int, sums *[16]int32) {
	for L := range 16 {
		s := laneGroup(L)
		off := (s/2%4)*srcStride + 32*(s%2)
		if s >= 8 {
			off += half
		}
		sums[L] = 0
		for k := range 8 {
			copy(dst[k*dstStride+4*L:k*dstStride+4*L+4], src[off+4*k:off+4*k+4])
		}
		for _, d := range src[off : off+32] {
			sums[L] += int32(int8(d))
		}
	}
}
