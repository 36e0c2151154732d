package cpu

// MatVec is one mat-vec of a batch: Y: [M.Out] = M · x, with x prepared in V. Q16 reads the int16
// copy of x for a 4-bit M (as QMatVecQ16; V must come from PrepareQ16); an 8-bit M ignores it.
type MatVec struct {
	Y   []float32
	M   *QMat
	V   *Vec
	Q16 bool
}

// batchTask is the pool task of QMatVecs: items are row blocks across all the mat-vecs, ends[j] the
// first block past mat-vec j.
type batchTask struct {
	jobs []MatVec
	rows []rowsFunc
	ends []int
}

// Do runs row blocks [lo, hi) of the concatenated mat-vecs.
func (t *batchTask) Do(_, lo, hi int) {
	j := 0
	for t.ends[j] <= lo {
		j++
	}
	for lo < hi {
		start := 0
		if j > 0 {
			start = t.ends[j-1]
		}
		end := min(hi, t.ends[j])
		jb := &t.jobs[j]
		t.rows[j](jb.Y, jb.M, jb.V, (lo-start)*rowBlock, min((end-start)*rowBlock, jb.M.Out))
		lo = end
		j++
	}
}

// QMatVecs runs every mat-vec of jobs in one pool dispatch, the workers taking row blocks across
// all of them; each result is what QMatVec (or QMatVecQ16) would compute. One dispatch instead of
// one per matrix is what the decode step's gathered expert projections need: nine small matrices
// per pass, each too small to be worth waking the workers for on its own.
func (k *Kernels) QMatVecs(jobs []MatVec) {
	t := &k.batch
	t.rows, t.ends = t.rows[:0], t.ends[:0]
	blocks, bytes := 0, 0
	for i := range jobs {
		j := &jobs[i]
		k.checkMV(j.Y, j.M, j.V)
		rows := k.f.qmv4
		switch {
		case j.M.Bits == 8:
			rows = k.f.qmv8
		case j.Q16:
			if !j.V.hasQ {
				panic("cpu: QMatVecs: Vec not prepared with PrepareQ16")
			}
			rows = k.f.qmvQ16
		}
		blocks += (j.M.Out + rowBlock - 1) / rowBlock
		bytes += j.M.Out * j.M.RowBytes()
		t.rows = append(t.rows, rows)
		t.ends = append(t.ends, blocks)
	}
	t.jobs = jobs
	if bytes <= inlineBytes {
		clearUpper()
		t.Do(0, 0, blocks)
	} else {
		k.pool.RunTaskTapered(blocks, t)
	}
	t.jobs = nil
}
