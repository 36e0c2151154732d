package cpu

// qmmLimbs is how many of the three limbs of each activation the integer prefill GEMM multiplies:
// two, x ≈ (d/256)·(256·a + b) per group with d = max|x|/127, within d/512 (about 1/65000 of the
// group's largest |x|, the int16 copy's precision). One limb (int8 activations) moved the 512-wide
// conformance model's perplexity by more than the budget allows; see TestQMatMatIntBudget.
const qmmLimbs = 2

// qmmTileFunc computes a 2-row × recTile-token tile of the integer GEMM (qmm4TileVNNI).
type qmmTileFunc func(out *[8]float32, m *QMat, o, o1 int, rec []byte, stride, n int, shift uint)

// qmmIntTask is the pool tasks of one integer GEMM: first the records (items are token rows),
// then the product (items are blocks of qmmVNNIRows output rows).
type qmmIntTask struct {
	k    *Kernels
	y    []float32
	m    *QMat
	x    []float32
	t    int
	prep bool
	vecs []*Vec // per-worker scratch of the records' preparation, of width In
}

func (q *qmmIntTask) Do(w, lo, hi int) {
	k := q.k
	if q.prep {
		for t := lo; t < hi; t++ {
			k.recs.fill(t, q.x[t*q.m.In:(t+1)*q.m.In], q.vecs[w], k.limbs)
		}
		return
	}
	m, r := q.m, &k.recs
	// Per worker, 128 bytes apart (no two workers' outputs on one cache line): a local array would
	// escape to the heap through the func value.
	out := (*[8]float32)(k.tileOut[w][:8])
	for o0 := lo * qmmVNNIRows; o0 < min(hi*qmmVNNIRows, m.Out); o0 += qmmVNNIRows {
		o1 := min(o0+qmmVNNIRows, m.Out)
		for t0 := 0; t0 < q.t; t0 += recTile {
			nt := min(recTile, q.t-t0)
			rec := r.rec[t0*r.stride:]
			for o := o0; o < o1; o += 2 {
				second := min(o+1, o1-1)
				k.f.qmmTile(out, m, o, second, rec, r.stride, k.limbs, k.shift)
				for tt := range nt {
					q.y[(t0+tt)*m.Out+o] = out[tt]
					if second != o {
						q.y[(t0+tt)*m.Out+o+1] = out[recTile+tt]
					}
				}
			}
		}
	}
}

// qmmInt is QMatMat for a 4-bit matrix of whole 8-group blocks on the integer tile: every token
// row prepared once as limbs (limbRecords, in parallel over rows), then each worker takes blocks
// of qmmVNNIRows output rows and, for each tile of recTile tokens, runs the rows in pairs. A pair's
// packed rows are read and unpacked once per tile and multiplied with all its tokens in registers;
// a block's rows (qmmVNNIRows KiB at In = 2048) stay in L2 across the tiles, a tile's records
// (recTile·3.6 KiB per 1024 inputs) in L1 across the block.
func (k *Kernels) qmmInt(y []float32, m *QMat, x []float32, t int) {
	vs := k.lvecs[m.In] // an MoE layer alternates input widths (gate/up, then down): one set each
	if vs == nil {
		vs = make([]*Vec, k.pool.Workers())
		for i := range vs {
			vs[i] = newVec(m.In, true)
		}
		if k.lvecs == nil {
			k.lvecs = map[int][]*Vec{}
		}
		k.lvecs[m.In] = vs
	}
	if len(k.tileOut) != k.pool.Workers() {
		k.tileOut = make([][32]float32, k.pool.Workers())
	}
	k.recs.ensure(t, m.In)
	k.recs.zero(t, (t+recTile-1)/recTile*recTile)
	k.ig = qmmIntTask{k: k, y: y, m: m, x: x, t: t, prep: true, vecs: vs}
	k.pool.RunTask(t, &k.ig)
	k.ig.prep = false
	k.pool.RunTask((m.Out+qmmVNNIRows-1)/qmmVNNIRows, &k.ig)
	k.ig = qmmIntTask{}
}

// matMatMinRowsFloat is the fewest token rows for which the float32 mat-mat beats one fused mat-vec
// per row: it dequantizes the whole matrix whatever the row count, which costs more than the
// mat-vecs up to about 5 rows of a 4-bit expert-sized matrix read from DRAM (BenchmarkQMatMat).
const matMatMinRowsFloat = 5

// matMatMinRowsInt is the same for the integer GEMM, which unpacks each weight once for up to
// recTile rows, so it beats the mat-vecs from 2 rows on and loses to the mat-vec at 1
// (BenchmarkQMatMatIntFewRows).
const matMatMinRowsInt = 2

// MatMatMinRows returns the fewest token rows from which QMatMat of m is faster than one QMatVec per
// row (prefill uses the mat-vecs below it: most experts of a short prompt see only a few rows).
func (k *Kernels) MatMatMinRows(m *QMat) int {
	if k.f.qmmTile != nil && m.Bits == 4 && m.Groups()%8 == 0 {
		return matMatMinRowsInt
	}
	return matMatMinRowsFloat
}
