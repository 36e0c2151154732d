package cpu

import "fmt"

// qmmLimbs is how many of the three limbs of each activation the integer prefill GEMM multiplies:
// two, x ≈ (d/256)·(256·a + b) per group with d = max|x|/127, within d/512 (about 1/65000 of the
// group's largest |x|, the int16 copy's precision). One limb (int8 activations) moved the 512-wide
// conformance model's perplexity by more than the budget allows; see TestQMatMatIntBudget.
const qmmLimbs = 2

// qmmTileFunc computes a 2-row × recTile-token tile of the integer GEMM (qmm4TileVNNI).
type qmmTileFunc func(out *[8]float32, m *QMat, o, o1 int, rec []byte, stride, n int, shift uint)

// qmmTileRowsFunc computes the tiles of pairs row pairs from row o for a tile of ntok ≤ recTile
// tokens, straight into y: y[t·yStride + r] for token t < ntok and row o+r (qmm4RowsVNNI).
type qmmTileRowsFunc func(y []float32, yStride int, m *QMat, o, pairs int, rec []byte, stride, n int, shift uint, ntok int)

// MatMat is one product of a batched mat-mat: Y: [T, M.Out] = X: [T, M.In] · Mᵀ, X shared by the
// batch.
type MatMat struct {
	Y []float32
	M *QMat
	// Then, if known, is the matrix the caller reads next after M (from its first row), whose first
	// bytes a one-row product's last prefetches fetch (QMatMatsOn; nil: none known).
	Then *QMat
}

// qmmIntTask is the pool tasks of one batch of integer GEMMs that read the same X: first the
// records (items are token rows), then the products (items are blocks of qmmVNNIRows output rows
// across all the matrices, ends[j] the first block past matrix j).
type qmmIntTask struct {
	k    *Kernels
	x    []float32
	t    int
	prep bool
	recs *limbRecords
	vecs []*Vec // per-worker scratch of the records' preparation, of width In
	jobs []MatMat
	ends []int
}

func (q *qmmIntTask) Do(w, lo, hi int) {
	if q.prep {
		in := q.recs.in
		for t := lo; t < hi; t++ {
			q.recs.fillAny(t, q.x[t*in:(t+1)*in], q.vecs[w], q.k.limbs)
		}
		return
	}
	j := 0
	for q.ends[j] <= lo {
		j++
	}
	for lo < hi {
		start := 0
		if j > 0 {
			start = q.ends[j-1]
		}
		end := min(hi, q.ends[j])
		jb := &q.jobs[j]
		q.k.qmmIntRows(w, jb.Y, jb.M, q.recs, q.t, (lo-start)*qmmVNNIRows, min((end-start)*qmmVNNIRows, jb.M.Out))
		lo = end
		j++
	}
}

// qmmIntRows computes output rows [o0, o1) of Y: [T, m.Out] from the records r on worker w: for
// each block of qmmVNNIRows rows and each tile of up to recTile tokens, the rows in pairs (in one
// assembly loop that stores into Y; a last odd row one tile on its own). A tile of one or two tokens
// (an expert's last rows) multiplies only those. A pair's
// packed rows are read and unpacked once per tile and multiplied with all its tokens in
// registers; a block's rows (qmmVNNIRows KiB at In = 2048) stay in L2 across the tiles, a tile's
// records (recTile·3.6 KiB per 1024 inputs) in L1 across the block.
func (k *Kernels) qmmIntRows(w int, y []float32, m *QMat, r *limbRecords, t, o0, o1 int) {
	// Per worker, 128 bytes apart (no two workers' outputs on one cache line): a local array would
	// escape to the heap through the func value.
	out := (*[8]float32)(k.tileOut[w][:8])
	if r.lanes != 0 {
		k.qmmLanesRows(w, y, m, r, t, o0, o1)
		return
	}
	for b0 := o0; b0 < o1; b0 += qmmVNNIRows {
		b1 := min(b0+qmmVNNIRows, o1)
		for t0 := 0; t0 < t; t0 += recTile {
			nt := min(recTile, t-t0)
			rec := r.rec[t0*r.stride:]
			o := b0
			if pairs := (b1 - b0) / 2; pairs > 0 && k.f.qmmTileRows != nil {
				k.f.qmmTileRows(y[t0*m.Out+b0:], m.Out, m, b0, pairs, rec, r.stride, k.limbs, k.shift, nt)
				o += 2 * pairs
			}
			for ; o < b1; o += 2 {
				second := min(o+1, b1-1)
				k.f.qmmTile(out, m, o, second, rec, r.stride, k.limbs, k.shift)
				for tt := range nt {
					y[(t0+tt)*m.Out+o] = out[tt]
					if second != o {
						y[(t0+tt)*m.Out+o+1] = out[recTile+tt]
					}
				}
			}
		}
	}
}

// ensureRecs sizes r for t token rows of width in in the layout of the kernel that will read them
// (recsLanes), the padding rows of the last tile zeroed.
func (k *Kernels) ensureRecs(r *limbRecords, t, in int) {
	if k.recsLanes(t, in) {
		r.ensureLanes(t, in)
	} else {
		r.ensure(t, in)
	}
	r.zero(t, r.padded(t))
}

// fillAny writes token row t's record in r's layout (fill or fillLanes).
func (r *limbRecords) fillAny(t int, x []float32, v *Vec, n int) {
	if r.lanes != 0 {
		r.fillLanes(t, x, v, n)
	} else {
		r.fill(t, x, v, n)
	}
}

// checkLimbShift panics unless shift is limbShift, the weight the assembly tiles shift each limb's
// sum by (an immediate: see qmm_vnni_amd64.s and qmm_lanes_amd64.s).
func checkLimbShift(shift uint) {
	if shift != limbShift {
		panic("cpu: the VNNI tile shifts limbs by limbShift only")
	}
}

// intGEMM reports whether m runs on the integer GEMM.
func (k *Kernels) intGEMM(m *QMat) bool {
	return k.f.qmmTile != nil && m.Bits == 4 && m.Groups()%8 == 0
}

// qmmInt runs the batch jobs (all on the integer GEMM, all of width In) on the pool: every token
// row of x: [T, In] prepared once as limbs (limbRecords, in parallel over rows), then one dispatch
// over the row blocks of all the matrices.
func (k *Kernels) qmmInt(x []float32, t int, jobs []MatMat) {
	in := jobs[0].M.In
	k.ensureRecs(&k.recs, t, in)
	ig := &k.ig
	*ig = qmmIntTask{k: k, x: x, t: t, prep: true, recs: &k.recs, vecs: k.limbVecs(in), jobs: jobs, ends: ig.ends[:0]}
	k.pool.RunTask(t, ig)
	ig.prep = false
	blocks := 0
	for _, j := range jobs {
		blocks += (j.M.Out + qmmVNNIRows - 1) / qmmVNNIRows
		ig.ends = append(ig.ends, blocks)
	}
	k.pool.RunTask(blocks, ig)
	*ig = qmmIntTask{ends: ig.ends[:0]}
}

// limbVecs returns the per-worker scratch of preparing records of width in (an MoE layer
// alternates input widths, gate/up then down: one set each).
func (k *Kernels) limbVecs(in int) []*Vec {
	vs := k.lvecs[in]
	if vs == nil {
		vs = make([]*Vec, k.pool.Workers())
		for i := range vs {
			vs[i] = newVec(in, true)
		}
		if k.lvecs == nil {
			k.lvecs = map[int][]*Vec{}
		}
		k.lvecs[in] = vs
	}
	return vs
}

// QMatMats computes every product of jobs, Y_j = X · M_jᵀ with X: [T, In] read by all of them
// (In the same for every M_j). On the integer GEMM X is prepared once for all the matrices and
// their rows run in one pool dispatch; other matrices run as QMatMat. Past qmmLargeX the tokens
// run in blocks (tokenBlockFor: the smallest of the jobs'), as in QMatMat.
func (k *Kernels) QMatMats(x []float32, t int, jobs []MatMat) {
	if len(jobs) == 0 {
		return
	}
	in := jobs[0].M.In
	for _, j := range jobs {
		k.checkMM(j.Y, j.M, x, t)
		if j.M.In != in {
			panic(fmt.Sprintf("cpu: QMatMats: widths %d and %d", in, j.M.In))
		}
	}
	tb := k.tokenBlockFor(jobs[0].M)
	for _, j := range jobs {
		tb = min(tb, k.tokenBlockFor(j.M))
	}
	if t > tb && t*in >= k.largeX {
		sub := make([]MatMat, len(jobs))
		for t0 := 0; t0 < t; t0 += tb {
			n := min(tb, t-t0)
			for i, j := range jobs {
				sub[i] = MatMat{Y: j.Y[t0*j.M.Out:], M: j.M}
			}
			k.QMatMats(x[t0*in:(t0+n)*in], n, sub)
		}
		return
	}
	var ints []MatMat
	for _, j := range jobs {
		if k.intGEMM(j.M) {
			ints = append(ints, j)
		} else {
			k.QMatMat(j.Y, j.M, x, t)
		}
	}
	if len(ints) > 0 {
		k.qmmInt(x[:t*in], t, ints)
	}
}

// workerGEMM is one worker's state for QMatMatsOn.
type workerGEMM struct {
	recs limbRecords
	vecs map[int]*Vec // per input width
	rows []float32    // QMatMatsGathered's rows gathered, where its records' layout does not serve
}

// QMatMatsOn is QMatMats run on the calling goroutine alone, as pool worker w (T = 1 as the VNNI
// mat-vec, exactly what QMatVec computes): for many small
// products that the caller spreads over the pool itself (the experts of a prefill chunk, one
// expert per task). It must be called from inside a task running on w (or, with w = 0, outside
// any dispatch), and only where IntGEMM reports every matrix of jobs on the integer GEMM.
func (k *Kernels) QMatMatsOn(w int, x []float32, t int, jobs []MatMat) {
	if len(jobs) == 0 || t == 0 {
		return
	}
	in := jobs[0].M.In
	for _, j := range jobs {
		k.checkMM(j.Y, j.M, x, t)
		if j.M.In != in || !k.intGEMM(j.M) {
			panic(fmt.Sprintf("cpu: QMatMatsOn: W [%d, %d] (bits %d) not on the integer GEMM of width %d", j.M.Out, j.M.In, j.M.Bits, in))
		}
	}
	g := &k.local[w]
	v := g.vecs[in]
	if v == nil {
		v = newVec(in, true)
		v.floatQ4 = false // every matrix here is on the integer GEMM: no kernel reads the float orders
		if g.vecs == nil {
			g.vecs = map[int]*Vec{}
		}
		g.vecs[in] = v
	}
	if t == 1 {
		// One row: the exact mat-vec (three limbs), as QMatVec, which also beats a tile of 4
		// tokens with 3 of them padding (matMatMinRowsInt).
		v.Prepare(x[:in])
		clearUpper()
		for i, j := range jobs {
			if k.f.qmv4Next == nil {
				k.f.qmv4(j.Y, j.M, v, 0, j.M.Out)
				continue
			}
			f := following{m: j.Then} // what this worker reads next, whose first bytes the call prefetches
			if i+1 < len(jobs) {
				f.m = jobs[i+1].M
			}
			k.f.qmv4Next(j.Y, j.M, v, 0, j.M.Out, f)
		}
		return
	}
	r := &g.recs
	k.ensureRecs(r, t, in)
	for tt := range t {
		r.fillAny(tt, x[tt*in:(tt+1)*in], v, k.limbs)
	}
	clearUpper()
	for _, j := range jobs {
		k.qmmIntRows(w, j.Y, j.M, r, t, 0, j.M.Out)
	}
}

// IntGEMM reports whether m's mat-mats run on the integer GEMM (AVX-512 VNNI, a 4-bit matrix of
// whole 8-group blocks): the matrices QMatMatsOn accepts.
func (k *Kernels) IntGEMM(m *QMat) bool { return k.intGEMM(m) }

func (k *Kernels) checkMM(y []float32, m *QMat, x []float32, t int) {
	if err := m.Check(); err != nil {
		panic("cpu: " + err.Error())
	}
	if t <= 0 || len(x) < t*m.In || len(y) < t*m.Out {
		panic(fmt.Sprintf("cpu: QMatMat: W [%d, %d], x %d, y %d, T %d", m.Out, m.In, len(x), len(y), t))
	}
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
	if k.intGEMM(m) {
		return matMatMinRowsInt
	}
	return matMatMinRowsFloat
}
