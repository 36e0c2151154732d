package cpu

import "fmt"

// TokenRecords are the token rows of one input width prepared once, as the integer GEMM reads
// them, for many later products that each read a few of the rows: a prefill chunk's routed
// experts, each of which multiplies the ~8 of the chunk's tokens that chose it (QMatMatsGathered).
// Preparing every row once instead of once per expert that reads it saves the 8-fold preparation
// and the gather of the rows' float32 values.
type TokenRecords struct {
	recs limbRecords
	t    int
	x    []float32 // the rows prepared, [t, in]: read again where a call's token count wants another layout
}

// Bytes returns the memory tr holds.
func (tr *TokenRecords) Bytes() int { return cap(tr.recs.buf) }

// PrepareTokenRecords prepares the t rows of x: [t, in] into tr (reusing its memory), in parallel on
// the pool. It reports false, preparing nothing, where the integer GEMM does not run at width in.
// tr keeps x: it must hold the same values while tr is read (QMatMatsGathered).
func (k *Kernels) PrepareTokenRecords(tr *TokenRecords, x []float32, t, in int) bool {
	if k.f.qmmTile == nil || in%(8*GroupSize) != 0 || t <= 0 {
		return false
	}
	if len(x) < t*in {
		panic(fmt.Sprintf("cpu: PrepareTokenRecords: x %d for [%d, %d]", len(x), t, in))
	}
	k.ensureRecs(&tr.recs, t, in)
	tr.t, tr.x = t, x[:t*in]
	task := qmmIntTask{k: k, x: x, t: t, prep: true, recs: &tr.recs, vecs: k.limbVecs(in)}
	k.pool.RunTask(t, &task)
	return true
}

// QMatMatsGathered is QMatMatsOn for the token rows rows of tr (each in [0, tr's t)): Y_j row i =
// M_j · x[rows[i]], bit for bit what QMatMatsOn computes from those rows gathered into x, for two
// or more rows (one row: QMatMatsOn's exact mat-vec, from x). Run on worker w as QMatMatsOn is.
func (k *Kernels) QMatMatsGathered(w int, tr *TokenRecords, rows []int, jobs []MatMat) {
	n := len(rows)
	if n < 2 || len(jobs) == 0 {
		panic("cpu: QMatMatsGathered: fewer than 2 rows, or no jobs")
	}
	in := tr.recs.in
	for _, j := range jobs {
		if j.M.In != in || !k.intGEMM(j.M) || len(j.Y) < n*j.M.Out {
			panic(fmt.Sprintf("cpu: QMatMatsGathered: W [%d, %d] (bits %d), Y %d for %d rows of width %d", j.M.Out, j.M.In, j.M.Bits, len(j.Y), n, in))
		}
	}
	for _, row := range rows {
		if row < 0 || row >= tr.t {
			panic(fmt.Sprintf("cpu: QMatMatsGathered: row %d of %d", row, tr.t))
		}
	}
	if k.recsLanes(n, in) != (tr.recs.lanes != 0) {
		// n rows run on the other kernel (pairTileTokens): gather the rows themselves.
		g := &k.local[w]
		if len(g.rows) < n*in {
			g.rows = make([]float32, n*in)
		}
		for i, row := range rows {
			copy(g.rows[i*in:(i+1)*in], tr.x[row*in:(row+1)*in])
		}
		k.QMatMatsOn(w, g.rows[:n*in], n, jobs)
		return
	}
	r := &k.local[w].recs
	k.ensureRecs(r, n, in)
	st := tr.recs.stride
	for i, row := range rows {
		copy(r.rec[i*st:(i+1)*st], tr.recs.rec[row*st:(row+1)*st])
	}
	clearUpper()
	for _, j := range jobs {
		k.qmmIntRows(w, j.Y, j.M, r, n, 0, j.M.Out)
	}
}
