package fast

import "github.com/lily-engine/lily/fast/cpu"

// moeBatchMinTokens is the fewest tokens of a prefill chunk from which its experts run as one pool
// dispatch of whole experts (moeExperts) rather than each expert's matrices spread over the pool in
// turn: from 2 tokens on, where each worker streams its own experts' weights with no dispatch and
// join per matrix (BenchmarkPrefill on the 8-layer synth, three alternated rounds against 16:
// pp4 87–92 → 92–102 tok/s, pp8 121–128 → 136–141; pp2 the same).
const moeBatchMinTokens = 2

// expertsBatched reports whether layer l's experts can run as moeExperts does: every expert
// matrix, the shared expert's too, on the integer GEMM.
func (s *Session) expertsBatched(l *layer, t int) bool {
	if t < moeBatchMinTokens {
		return false
	}
	k := s.m.k
	for _, w := range []*mat{l.sg, l.su, l.sd} {
		if w.q == nil || !k.IntGEMM(w.q) {
			return false
		}
	}
	for x := range l.gate {
		for _, w := range []*mat{l.gate[x], l.up[x], l.down[x]} {
			if w.q == nil || !k.IntGEMM(w.q) {
				return false
			}
		}
	}
	return true
}

// sharedJob is the shared expert's part of moeExperts: its gate and up outputs ([t, is] each) and
// each token's gate logit (seg: [t]).
type sharedJob struct {
	g, u, seg []float32
}

// sharedExpert marks the shared expert in expertTask's list of experts.
const sharedExpert = -1

// expertTask runs whole experts of a prefill chunk on one worker each: the expert's token rows
// gathered, gate and up from one preparation of them, SwiGLU, down, the result written by slot
// position (yd). An expert's weights are thus read and unpacked once per tile of 4 of its rows,
// with no dispatch per matrix. The shared expert (sharedExpert in the list, first: it has every
// token) writes its output straight into r, so that its arithmetic overlaps the routed experts'
// weight streams on the other worker rather than running on its own before them.
type expertTask struct {
	s       *Session
	l       *layer
	a       []float32 // [t, hs] the normed input
	experts []int     // the experts with tokens, most tokens first
	count   []int     // [E+1] expert x's slots are order[count[x]:count[x+1]]
	order   []int     // slots (token·k + j) grouped by expert
	k       int       // experts per token
	xe      [][]float32
	ge, ue  [][]float32       // per worker: [rows, hs], [rows, in], [rows, in]
	yd      []float32         // [t·k, hs] the down projection of order position p at row p
	recs    *cpu.TokenRecords // a's rows prepared once for gate and up (nil: gathered per expert)
	rows    [][]int           // per worker: an expert's token rows
	shared  sharedJob
	t       int
	r       []float32 // [t, hs]: the shared expert's output, ungated
}

func (e *expertTask) Do(w, lo, hi int) {
	c, l, kr := e.s.m.cfg, e.l, e.s.m.k
	hs, in := c.HiddenSize, c.MoEIntermediate
	for i, x := range e.experts[lo:hi] {
		// A one-token expert's mat-vecs hand their last prefetches on (cpu.MatMat.Then): gate to
		// up, up to down, down to the next expert's gate in this take.
		var then *cpu.QMat
		if lo+i+1 < hi && e.experts[lo+i+1] != sharedExpert {
			then = l.gate[e.experts[lo+i+1]].q
		}
		if x == sharedExpert {
			sh := e.shared
			gu := []cpu.MatMat{{Y: sh.g, M: l.sg.q}, {Y: sh.u, M: l.su.q}}
			if e.recs != nil { // every row, from the records the routed experts read
				rows := make([]int, e.t)
				for i := range rows {
					rows[i] = i
				}
				kr.QMatMatsGathered(w, e.recs, rows, gu)
			} else {
				kr.QMatMatsOn(w, e.a, e.t, gu)
			}
			e.s.m.ops.swiglu(sh.g, sh.u)
			kr.QMatMatsOn(w, sh.g, e.t, []cpu.MatMat{{Y: e.r, M: l.sd.q}})
			continue
		}
		p0, p1 := e.count[x], e.count[x+1]
		n := p1 - p0
		ge, ue := e.ge[w][:n*in], e.ue[w][:n*in]
		gu := []cpu.MatMat{{Y: ge, M: l.gate[x].q}, {Y: ue, M: l.up[x].q, Then: l.down[x].q}}
		if e.recs != nil && n >= 2 {
			rows := e.rows[w][:0]
			for _, slot := range e.order[p0:p1] {
				rows = append(rows, slot/e.k)
			}
			kr.QMatMatsGathered(w, e.recs, rows, gu)
		} else {
			xe := e.xe[w][:n*hs]
			for j, slot := range e.order[p0:p1] {
				tok := slot / e.k
				copy(xe[j*hs:(j+1)*hs], e.a[tok*hs:(tok+1)*hs])
			}
			kr.QMatMatsOn(w, xe, n, gu)
		}
		e.s.m.ops.swiglu(ge, ue)
		kr.QMatMatsOn(w, ge, n, []cpu.MatMat{{Y: e.yd[p0*hs : p1*hs], M: l.down[x].q, Then: then}})
	}
}

// expertBufs are moeExperts' buffers: the down projections by slot position and each worker's
// gathered rows and gate/up outputs. A prefill chunk of 1,024 tokens needs 64 MB of the former at
// the real width; kept on the session for the chunks of a Prefill call (which drops them at its
// end, returnPrefillBufs, as the model's spare for the next call), they are allocated once
// per call rather than per layer or chunk.
type expertBufs struct {
	yd         []float32
	xe, ge, ue [][]float32
	rows       [][]int
	recs       cpu.TokenRecords // the chunk's normed rows for the experts' gate and up
}

// bytes returns the memory b holds.
func (b *expertBufs) bytes() int {
	n := 4*cap(b.yd) + b.recs.Bytes()
	for w := range b.xe {
		n += 4 * (cap(b.xe[w]) + cap(b.ge[w]) + cap(b.ue[w]))
	}
	return n
}

// grow makes b hold yd floats of slot outputs and, for each of workers, xe gathered-row floats,
// ge of each of gate and up, and rows token indices.
func (b *expertBufs) grow(workers, yd, xe, ge, rows int) {
	if len(b.yd) < yd {
		b.yd = make([]float32, yd)
	}
	if len(b.xe) != workers {
		b.xe, b.ge, b.ue = make([][]float32, workers), make([][]float32, workers), make([][]float32, workers)
		b.rows = make([][]int, workers)
	}
	for w := range workers {
		if len(b.xe[w]) < xe {
			b.xe[w] = make([]float32, xe)
		}
		if len(b.ge[w]) < ge {
			b.ge[w], b.ue[w] = make([]float32, ge), make([]float32, ge)
		}
		if cap(b.rows[w]) < rows {
			b.rows[w] = make([]int, 0, rows)
		}
	}
}

// moeExperts writes the MoE's output to r: [t, hs] for the chunk's routing (ids and wts: [t, k];
// count and order as moePrefill builds them): one pool dispatch of the shared expert and the whole
// routed experts, most tokens first, taken from both ends (cpu.Pool.RunTaskTwoEnded) so that the
// arithmetic of the shared expert and the experts of several tokens on one core overlaps the
// one-token experts' weight streams on the other, in guided chunks so that the workers finish
// together; then each token's gated shared output plus its k routed outputs summed in its top-k
// order, in parallel over tokens.
func (s *Session) moeExperts(l *layer, a []float32, t int, wts []float32, count, order []int, r []float32, sh sharedJob) {
	c := s.m.cfg
	hs, in, e, k := c.HiddenSize, c.MoEIntermediate, c.NumExperts, c.NumExpertsPerTok
	// Experts with tokens, by token count descending (counting sort).
	most := 0
	for x := 0; x < e; x++ {
		most = max(most, count[x+1]-count[x])
	}
	byN := make([]int, most+2)
	for x := 0; x < e; x++ {
		byN[most-(count[x+1]-count[x])+1]++
	}
	for i := 1; i < len(byN); i++ {
		byN[i] += byN[i-1]
	}
	experts := make([]int, e+1) // the shared expert, then the routed ones
	experts[0] = sharedExpert
	for x := 0; x < e; x++ {
		i := most - (count[x+1] - count[x])
		experts[1+byN[i]] = x
		byN[i]++
	}
	used := 1
	for used <= e && count[experts[used]+1] > count[experts[used]] {
		used++
	}
	b := &s.moe
	b.grow(s.m.run.Workers(), t*k*hs, most*hs, most*in, most)
	task := &expertTask{s: s, l: l, a: a, experts: experts[:used], count: count, order: order, k: k,
		xe: b.xe, ge: b.ge, ue: b.ue, yd: b.yd[:t*k*hs], rows: b.rows, shared: sh, t: t, r: r[:t*hs]}
	if s.m.k.PrepareTokenRecords(&b.recs, a, t, hs) {
		task.recs = &b.recs
	}
	s.m.run.RunTaskTwoEnded(used, task)
	pos := make([]int, t*k) // pos[slot]: the slot's position in order
	for p, slot := range order {
		pos[slot] = p
	}
	s.m.run.Run(t, func(lo, hi int) {
		for tok := lo; tok < hi; tok++ {
			ri := r[tok*hs : (tok+1)*hs]
			gateShared(ri, sh.seg[tok])
			for slot := tok * k; slot < (tok+1)*k; slot++ {
				p := pos[slot]
				s.m.ops.axpy(wts[slot], task.yd[p*hs:(p+1)*hs], ri)
			}
		}
	})
}
