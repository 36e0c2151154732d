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
	pool *Pool // running the task (nil: inline), whose unclaimed items a take's end looks at
	jobs []MatVec
	rows []rowsFunc
	next []nextRowsFunc // per mat-vec: its kernel's form told the next matrix (nil: none)
	ends []int
}

// Do runs row blocks [lo, hi) of the concatenated mat-vecs.
func (t *batchTask) Do(_, lo, hi int) {
	j := t.job(lo)
	for lo < hi {
		start := t.start(j)
		end := min(hi, t.ends[j])
		jb := &t.jobs[j]
		rlo, rhi := (lo-start)*rowBlock, min((end-start)*rowBlock, jb.M.Out)
		if f := t.next[j]; f != nil {
			// What this worker reads next: the next mat-vec of the take from its first row, or
			// after the take the first block no worker has claimed yet, which it will take unless
			// the other worker claims it first (then the lines it prefetched reach that worker
			// from this one's cache, not from DRAM).
			f(jb.Y, jb.M, jb.V, rlo, rhi, following{t: t, end: end, hi: hi})
		} else {
			t.rows[j](jb.Y, jb.M, jb.V, rlo, rhi)
		}
		lo = end
		j++
	}
}

// job returns the mat-vec holding block b.
func (t *batchTask) job(b int) int {
	j := 0
	for t.ends[j] <= b {
		j++
	}
	return j
}

// start returns mat-vec j's first block.
func (t *batchTask) start(j int) int {
	if j == 0 {
		return 0
	}
	return t.ends[j-1]
}

// after returns the matrix and row a worker that ends its rows at block end of a take ending at
// hi is likely to read next (nil where none is known).
func (t *batchTask) after(end, hi int) (*QMat, int) {
	b := end
	if end == hi {
		if t.pool == nil {
			return nil, 0
		}
		b = t.pool.unclaimed()
	}
	if b >= t.ends[len(t.ends)-1] {
		return nil, 0
	}
	j := t.job(b)
	return t.jobs[j].M, (b - t.start(j)) * rowBlock
}

// QMatVecs runs every mat-vec of jobs in one pool dispatch, the workers taking row blocks across
// all of them; each result is what QMatVec (or QMatVecQ16) would compute. One dispatch instead of
// one per matrix is what the decode step's gathered expert projections need: nine small matrices
// per pass, each too small to be worth waking the workers for on its own.
func (k *Kernels) QMatVecs(jobs []MatVec) {
	t := &k.batch
	t.rows, t.next, t.ends = t.rows[:0], t.next[:0], t.ends[:0]
	blocks, bytes := 0, 0
	for i := range jobs {
		j := &jobs[i]
		k.checkMV(j.Y, j.M, j.V)
		rows, next := k.f.qmv4, k.f.qmv4Next
		switch {
		case j.M.Bits == 8:
			rows, next = k.f.qmv8, k.f.qmv8Next
		case j.Q16:
			next = nil
			if !j.V.hasQ {
				panic("cpu: QMatVecs: Vec not prepared with PrepareQ16")
			}
			rows = k.f.qmvQ16
		}
		blocks += (j.M.Out + rowBlock - 1) / rowBlock
		bytes += j.M.Out * j.M.RowBytes()
		t.rows, t.next = append(t.rows, rows), append(t.next, next)
		t.ends = append(t.ends, blocks)
	}
	t.jobs = jobs
	if bytes <= inlineBytes {
		clearUpper()
		t.Do(0, 0, blocks)
	} else {
		t.pool = k.pool
		k.pool.RunTaskTapered(blocks, t)
	}
	t.jobs, t.pool = nil, nil
}
