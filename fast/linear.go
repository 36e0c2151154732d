package fast

import (
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/safetensors"
)

// vecJob is one mat-vec of a gathered dispatch: y = W x.
type vecJob struct {
	w    *mat
	x, y []float32
}

// vecs runs gathered mat-vecs, y = W x, with float32 activations unless Options.Int16Activations
// asked for int16 ones everywhere (see vecsQ16).
func (s *Session) vecs(jobs []vecJob) { s.vecsWith(jobs, s.m.int16, false) }

// vecsAgain is vecs for jobs whose input the previous gathered dispatch prepared and nothing has
// written since (the routed experts' gate and up read the input the router read): that input is
// not prepared a second time.
func (s *Session) vecsAgain(jobs []vecJob) { s.vecsWith(jobs, s.m.int16, true) }

// vecsQ16 runs gathered mat-vecs whose 4-bit matrices read int16 activations
// (cpu.Kernels.QMatVecQ16): up to 1.5e-5 of each 64-group's largest input off, against float32
// rounding, and faster where the CPU lacks AVX-512 VNNI. The decode plan
// uses it by default only where the error cannot feed back into the session's state: the lm_head, whose output is the logits and nothing else.
// On the fixture models that leaves the decode plan's agreement with ref as it was (teacher-forced
// top-1 100%, |Δlogp| ≤ 2e-4); using it everywhere (Options.Int16Activations) flipped an expert
// choice of one fixture mid-sequence, and the state carried the change on: top-1 95%, Δppl −1.5%.
// Where the kernels have AVX-512 VNNI (cpu.Kernels.VNNI) the plain mat-vec is both faster and
// exact to float32's rounding, and the lm_head takes it instead.
func (s *Session) vecsQ16(jobs []vecJob) { s.vecsWith(jobs, !s.m.k.VNNI(), false) }

// preparedVec is the last input a gathered dispatch prepared, kept for vecsAgain.
type preparedVec struct {
	x   []float32
	v   *cpu.Vec
	i   int // v's index in Session.vecBufs[len(x)]
	q16 bool
}

func (p *preparedVec) same(x []float32, q16 bool) bool {
	return p.v != nil && p.q16 == q16 && len(p.x) == len(x) && &p.x[0] == &x[0]
}

// vecsWith runs gathered mat-vecs. On the fast/cpu kernels the quantized ones run as one pool
// dispatch (cpu.Kernels.QMatVecs), each distinct input vector prepared once (group sums, SIMD
// orders, the int16 copy when q16) for all the matrices that read it; bf16 ones run after, each
// split across the pool; any other dense one on the plain loops.
// again: an input the previous dispatch prepared last is taken as it is (vecsAgain).
func (s *Session) vecsWith(jobs []vecJob, q16, again bool) {
	m := s.m
	clear(s.vecUsed)
	kept := s.kept
	s.kept = preparedVec{}
	mv := s.mv[:0]
	var last []float32
	var v *cpu.Vec
	for _, j := range jobs {
		x := j.x[:j.w.in]
		if j.w.q == nil {
			continue
		}
		if last == nil || &last[0] != &x[0] || len(last) != len(x) {
			if again && kept.same(x, q16) {
				v = kept.v
				s.vecUsed[len(x)] = max(s.vecUsed[len(x)], kept.i+1) // not handed out again
			} else {
				n := len(x)
				i := s.vecUsed[n]
				v = s.vec(n)
				if q16 {
					v.PrepareQ16(x)
				} else {
					v.Prepare(x)
				}
				s.kept = preparedVec{x: x, v: v, i: i, q16: q16}
			}
			last = x
		}
		mv = append(mv, cpu.MatVec{Y: j.y[:j.w.out], M: j.w.q, V: v, Q16: q16})
	}
	if len(mv) > 0 {
		m.k.QMatVecs(mv)
	}
	clear(mv) // drop the references until the next call
	s.mv = mv[:0]
	for _, j := range jobs {
		switch {
		case j.w.q != nil:
		case j.w.dtype == safetensors.BF16:
			m.k.BF16MatVec(j.y[:j.w.out], u16(j.w.w), j.w.out, j.w.in, j.x[:j.w.in])
		default:
			m.plainVecs([]vecJob{j})
		}
	}
}

// vec returns a prepared-input buffer for an input of length n that no other input of this
// gathered dispatch uses (the down projections read nine different vectors of one length).
func (s *Session) vec(n int) *cpu.Vec {
	i := s.vecUsed[n]
	s.vecUsed[n] = i + 1
	bufs := s.vecBufs[n]
	if i == len(bufs) {
		bufs = append(bufs, s.m.k.NewVec(n))
		s.vecBufs[n] = bufs
	}
	return bufs[i]
}

// plainVecs runs the mat-vecs with the plain loops in one parallel dispatch over all their rows.
func (m *Model) plainVecs(jobs []vecJob) {
	total := 0
	for _, j := range jobs {
		total += j.w.out
	}
	m.run.Run(total, func(lo, hi int) {
		base := 0
		for _, j := range jobs {
			a, z := max(lo-base, 0), min(hi-base, j.w.out)
			if a < z {
				j.w.vecRows(j.x, j.y, a, z)
			}
			base += j.w.out
		}
	})
}

// mulJob is one mat-mat of a gathered dispatch: Y[t] = W X[t] for t < rows.
type mulJob struct {
	w       *mat
	x       []float32 // [rows, In]
	rows    int
	y       []float32 // [rows, yStride]
	yStride int
}

// muls runs gathered mat-mats: quantized ones on the fast/cpu grouped GEMM (dequantization fused
// into the tile loads), consecutive ones that read the same X as one cpu.Kernels.QMatMats (X
// prepared once for all of them, one dispatch); a matrix that only a few token rows read (most
// experts of a short prompt) as one mat-vec per row, all such rows of the call gathered in one
// dispatch; the rest with the plain loops.
func (s *Session) muls(jobs ...mulJob) {
	m := s.m
	var few []vecJob
	var batch []cpu.MatMat
	var bx []float32
	brows := 0
	flush := func() {
		if len(batch) > 0 {
			m.k.QMatMats(bx, brows, batch)
		}
		batch = batch[:0]
	}
	for _, j := range jobs {
		if j.rows == 0 {
			continue
		}
		switch {
		case j.w.q != nil && j.rows < m.k.MatMatMinRows(j.w.q):
			for r := range j.rows {
				few = append(few, vecJob{j.w, j.x[r*j.w.in : (r+1)*j.w.in], j.y[r*j.yStride : r*j.yStride+j.w.out]})
			}
		case j.w.q != nil && j.yStride == j.w.out:
			x := j.x[:j.rows*j.w.in]
			if len(batch) > 0 && (&bx[0] != &x[0] || len(bx) != len(x) || brows != j.rows) {
				flush()
			}
			bx, brows = x, j.rows
			batch = append(batch, cpu.MatMat{Y: j.y[:j.rows*j.w.out], M: j.w.q})
		default:
			m.plainMuls(j)
		}
	}
	flush()
	if len(few) > 0 {
		s.vecsWith(few, false, false)
	}
}

// plainMuls runs the mat-mats with the plain loops in one parallel dispatch over all their output
// rows; each weight row is dequantized once and reused for every token row.
func (m *Model) plainMuls(jobs ...mulJob) {
	total, maxIn := 0, 0
	for _, j := range jobs {
		total += j.w.out
		maxIn = max(maxIn, j.w.in)
	}
	m.run.Run(total, func(lo, hi int) {
		tmp := make([]float32, maxIn)
		base := 0
		for _, j := range jobs {
			a, z := max(lo-base, 0), min(hi-base, j.w.out)
			if a < z && j.rows > 0 {
				j.w.mulRows(j.x, j.rows, j.y, j.yStride, tmp, a, z)
			}
			base += j.w.out
		}
	})
}
