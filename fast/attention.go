package fast

import "math"

// attnDecode: b.r = gated attention of b.a at position s.pos, appending to the KV cache.
func (s *Session) attnDecode(li int, l *layer) {
	m, b, c := s.m, s.dec, s.m.cfg
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	s.vecs(append(b.jobs[:0], vecJob{l.q, b.a, b.q2}, vecJob{l.k, b.a, b.kk}, vecJob{l.v, b.a, b.vv}))
	cs := ropeTable(s.pos, m.inv, b.rope)
	for h := 0; h < hq; h++ {
		m.queryHead(l, b.q2[h*2*hd:(h+1)*2*hd], cs, b.qh[h*hd:(h+1)*hd], b.gate[h*hd:(h+1)*hd])
	}
	w := hkv * hd
	for h := 0; h < hkv; h++ {
		kh := b.kk[h*hd : (h+1)*hd]
		m.ops.rmsNorm(kh, l.kn, kh, m.eps())
		ropeAt(kh, cs)
	}
	s.kv[li].put(m.k, s.pos, w, b.kk, b.vv)
	s.attend(b.qh, s.kv[li], s.pos+1, hq, hkv, hd, b.ao)
	m.k.SigmoidMul(b.ao, b.gate)
	s.vecs(append(b.jobs[:0], vecJob{l.o, b.ao, b.r}))
}

// attnPrefill: r = gated causal attention of a for t tokens at positions s.pos.., appending them
// to the KV cache. Only rows [q0, t) of r are computed (their queries, attention and output
// projection; every row's key and value): the last layer needs only its last row (prefillChunk).
// a, r: [t, H].
func (s *Session) attnPrefill(li int, l *layer, a []float32, t int, r []float32, q0 int) {
	m, c := s.m, s.m.cfg
	hq, hkv, hd, hs := c.NumHeads, c.NumKVHeads, c.HeadDim, c.HiddenSize
	qw, kw := hq*hd, hkv*hd
	nq := t - q0
	defer s.pf.release(s.pf.mark())
	q2 := s.pf.take(nq * 2 * qw) // [nq, 2·Hq·D]: rows q0…
	kk := s.pf.take(t * kw)
	vv := s.pf.take(t * kw)
	s.muls(mulJob{l.q, a[q0*hs:], nq, q2, 2 * qw}, mulJob{l.k, a, t, kk, kw}, mulJob{l.v, a, t, vv, kw})
	qh := s.pf.take(nq * qw)
	gate := s.pf.take(nq * qw)
	m.run.Run(t, func(lo, hi int) { // per token: independent rows
		tab := make([]float64, 2*len(m.inv))
		for i := lo; i < hi; i++ {
			cs := ropeTable(s.pos+i, m.inv, tab)
			if j := i - q0; j >= 0 {
				for h := 0; h < hq; h++ {
					m.queryHead(l, q2[j*2*qw+h*2*hd:j*2*qw+(h+1)*2*hd], cs, qh[j*qw+h*hd:j*qw+(h+1)*hd], gate[j*qw+h*hd:j*qw+(h+1)*hd])
				}
			}
			kr := kk[i*kw : (i+1)*kw]
			for h := 0; h < hkv; h++ {
				m.ops.rmsNorm(kr[h*hd:(h+1)*hd], l.kn, kr[h*hd:(h+1)*hd], m.eps())
				ropeAt(kr[h*hd:(h+1)*hd], cs)
			}
		}
	})
	s.kv[li].put(m.k, s.pos, kw, kk, vv)
	ao := s.pf.take(nq * qw)
	s.attendPrefill(li, qh, gate, s.pos+q0, nq, ao)
	s.muls(mulJob{l.o, ao, nq, r[q0*hs:], hs})
}

// queryHead writes one head's query q: [D] from its projection src: [2D] (query, then gate):
// RMS-normed, rotated by the position's table cs (ropeTable) and scaled by D^-1/2 for the
// attention loops; gate: [D] gets the gate half.
func (m *Model) queryHead(l *layer, src []float32, cs []float64, q, gate []float32) {
	hd := len(q)
	m.ops.rmsNorm(src[:hd], l.qn, q, m.eps())
	copy(gate, src[hd:2*hd])
	ropeAt(q, cs)
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i := range q {
		q[i] *= scale
	}
}

// attnSplit is the key count each split of a decode attention covers: long contexts are split
// along the sequence so both workers stay busy and partial softmaxes are merged after.
const attnSplit = 512

// attnSub is the key block a unit folds in at a time (within a split): its scores for all the
// query heads of a KV head, their softmax and their weighted values, while the block's keys and
// values stay in L2. 128 rather than 64: half as many softmax folds a step, and each block's
// values (prefetched by its score tiles) arrive further ahead of their use.
const attnSub = 128

// attnArgs are the inputs of one decode attention (set by attend, read by attendUnits).
type attnArgs struct {
	q           []float32 // [Hq*D], scaled by D^-1/2
	kv          *kvCache  // [n, Hkv*D] keys and values
	wide        []float32 // [workers, attnSub, D] each worker's scratch for the fp16 tiles' widened rows
	n, splits   int
	hq, hkv, hd int
	part        []float32 // [Hq, splits, D+2]
	scores      []float32 // [Hkv*splits, Hq/Hkv, attnSub] one sub-block of scores per unit
	out         []float32 // [Hkv*splits, Hq/Hkv, D] each unit's unnormalised outputs
	mx          []float32 // [Hkv*splits, Hq/Hkv] running max of each unit's heads
	sum         []float64 // [Hkv*splits, Hq/Hkv] running sum
}

// attend computes causal attention of one query position over keys [0, n), split along the
// sequence in attnSplit-key pieces (units of (head, split) across the pool), then merges the
// partial softmaxes. The units go out in guided chunks, single units at the end, so that the
// workers finish together: at 8K there are 34 units, and fixed chunks of 5 left one worker
// waiting for the other's last chunk. q: [Hq*D] scaled by D^-1/2 (queryHead); kv: at least n rows; out: [Hq*D].
func (s *Session) attend(q []float32, kv *kvCache, n, hq, hkv, hd int, out []float32) {
	b := s.dec
	splits := (n + attnSplit - 1) / attnSplit
	stride := hd + 2
	if need := hq * splits * stride; cap(b.part) < need {
		b.part = make([]float32, need)
	}
	p := b.part[:hq*splits*stride]
	if need := hq * splits * attnSub; cap(b.scores) < need {
		b.scores = make([]float32, need)
	}
	if need := hq * splits * hd; cap(b.aout) < need {
		b.aout = make([]float32, need)
	}
	if cap(b.amx) < hq*splits {
		b.amx, b.asum = make([]float32, hq*splits), make([]float64, hq*splits)
	}
	s.att = attnArgs{q: q, kv: kv, n: n, splits: splits, hq: hq, hkv: hkv, hd: hd, part: p,
		wide: b.awide, scores: b.scores[:hq*splits*attnSub], out: b.aout[:hq*splits*hd], mx: b.amx[:hq*splits], sum: b.asum[:hq*splits]}
	s.m.run.RunTaskGuided(hkv*splits, s.tasks.attend)
	for h := 0; h < hq; h++ {
		o := out[h*hd : (h+1)*hd]
		mx := math.Inf(-1)
		for sp := 0; sp < splits; sp++ {
			mx = math.Max(mx, float64(p[(h*splits+sp)*stride+hd]))
		}
		for i := range o {
			o[i] = 0
		}
		var sum float64
		for sp := 0; sp < splits; sp++ {
			base := (h*splits + sp) * stride
			f := math.Exp(float64(p[base+hd]) - mx)
			sum += float64(p[base+hd+1]) * f
			s.m.ops.axpy(float32(f), p[base:base+hd], o)
		}
		for i := range o {
			o[i] = float32(float64(o[i]) / sum)
		}
	}
}

// attendUnits computes, on worker w, the partial softmaxes of units [lo, hi): unit u is KV head u/splits over
// the keys of split u%splits, for every query head that shares it (GQA). The split is folded in
// sub-blocks of attnSub keys: the scores of all the unit's heads at once (ScoreTileF16: each fp16
// key vector converted in a register and used for four heads; the tiles prefetch the keys two
// quads on and the block's values into L2, so a cache that the step's weights evicted streams in
// while they compute), each head's running softmax (foldScores), the weighted values (AccumTileF16: each value
// vector converted once for all the heads). Head h's result goes to part as
// (Σ e^{s-m} v, m, Σ e^{s-m}).
func (s *Session) attendUnits(w0, lo, hi int) {
	a := &s.att
	ops := s.m.ops
	hd, stride, w := a.hd, a.hd+2, a.hkv*a.hd
	rep := a.hq / a.hkv
	wd := a.wide[w0*attnSub*hd : (w0+1)*attnSub*hd]
	for u := lo; u < hi; u++ {
		kvh, sp := u/a.splits, u%a.splits
		t0, t1 := sp*attnSplit, min(a.n, (sp+1)*attnSplit)
		sc := a.scores[u*rep*attnSub : (u+1)*rep*attnSub]
		ob := a.out[u*rep*hd : (u+1)*rep*hd]
		qs := a.q[kvh*rep*hd : (kvh+1)*rep*hd]
		mx, sum := a.mx[u*rep:(u+1)*rep], a.sum[u*rep:(u+1)*rep]
		clear(ob)
		for j := range rep {
			mx[j], sum[j] = float32(math.Inf(-1)), 0
		}
		for b0 := 0; b0 < t1-t0; b0 += attnSub {
			nb := min(t1-t0, b0+attnSub) - b0
			st := sc[:rep*nb]
			a.kv.scoreTile(ops, st, qs, rep, hd, (t0+b0)*w+kvh*hd, w, nb, wd)
			for j := range rep {
				ops.foldScores(st[j*nb:(j+1)*nb], ob[j*hd:(j+1)*hd], &mx[j], &sum[j])
			}
			a.kv.accumTile(ops, ob, rep, hd, st, nb, (t0+b0)*w+kvh*hd, w, wd)
		}
		for j := range rep {
			i := ((kvh*rep+j)*a.splits + sp) * stride
			copy(a.part[i:i+hd], ob[j*hd:(j+1)*hd])
			a.part[i+hd], a.part[i+hd+1] = mx[j], float32(sum[j])
		}
	}
}

// prefillQTokens is how many prompt positions one unit of the prefill attention takes: their
// query heads that share one KV head (8 positions × 8 heads = 64 query rows at the real sizes) go
// through the keys together, so that each key and value row is loaded once for all of them.
const prefillQTokens = 8

// prefillKeyBlock is the key count of one step of a unit: 64 keys and their values (64 KB each at
// the real head size, in L2) serve all the unit's query rows; smaller blocks pay the running
// softmax's rescale more often, larger ones fall out of L2.
const prefillKeyBlock = 64

// attendPrefill computes the gated causal attention of prompt positions base … base+t−1, whose
// keys and values are already in the cache: for query head h of position base+i,
// ao[i, h] = (Σ_{p ≤ base+i} softmax_p(q·k_p) v_p) ⊙ sigmoid(gate[i, h]).
// qh, gate, ao: [t, Hq·D], the queries scaled by D^-1/2 (queryHead).
//
// A unit is (block of prefillQTokens positions, KV head). Per block of prefillKeyBlock keys it
// computes the scores of all its query rows (cpu.Kernels.ScoreTileF16 on the fp16 cache), masks the
// keys past each row's position, folds them into each row's running softmax (rescaling the row when
// its maximum grows) and adds the weighted values (cpu.Kernels.AccumTileF16). Memory per unit is
// fixed by the block sizes, never by the context: no [t, n] score matrix exists.
func (s *Session) attendPrefill(li int, qh, gate []float32, base, t int, ao []float32) {
	m, c := s.m, s.m.cfg
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qw, kw, rep := hq*hd, hkv*hd, hq/hkv
	kv := s.kv[li]
	blocks := (t + prefillQTokens - 1) / prefillQTokens
	s.work.ready(m.run.Workers())
	m.run.RunTask(hkv*blocks, workerTask(func(w, lo, hi int) {
		rows := prefillQTokens * rep
		ws := s.work.floats(w, 2*rows*hd+rows*prefillKeyBlock+prefillKeyBlock*hd+rows)
		qb, ws := ws[:rows*hd], ws[rows*hd:] // [rows, D]: row r is position i0 + r/rep, head kvh·rep + r%rep
		ob, ws := ws[:rows*hd], ws[rows*hd:] // [rows, D] the rows' unnormalised outputs
		sc, ws := ws[:rows*prefillKeyBlock], ws[rows*prefillKeyBlock:]
		wd, mx := ws[:prefillKeyBlock*hd], ws[prefillKeyBlock*hd:] // wd: [block, D] the block's fp16 keys, then values, widened
		sum := s.work.doubles(w, rows)
		for u := lo; u < hi; u++ {
			blk, kvh := u/hkv, u%hkv
			i0, i1 := blk*prefillQTokens, min(t, (blk+1)*prefillQTokens)
			nr := (i1 - i0) * rep
			for i := i0; i < i1; i++ {
				copy(qb[(i-i0)*rep*hd:(i-i0+1)*rep*hd], qh[i*qw+kvh*rep*hd:i*qw+(kvh+1)*rep*hd])
			}
			clear(ob[:nr*hd])
			for r := range nr {
				mx[r], sum[r] = float32(math.Inf(-1)), 0
			}
			n := base + i1 // keys the block's last position sees
			for p0 := 0; p0 < n; p0 += prefillKeyBlock {
				nb := min(n, p0+prefillKeyBlock) - p0
				st := sc[:nr*nb]
				kv.scoreTile(m.ops, st, qb, nr, hd, p0*kw+kvh*hd, kw, nb, wd)
				for r := range nr {
					row := st[r*nb : (r+1)*nb]
					valid := min(nb, base+i0+r/rep+1-p0) // keys p0 … this row's position
					if valid <= 0 {
						clear(row)
						continue
					}
					m.ops.foldScores(row[:valid], ob[r*hd:(r+1)*hd], &mx[r], &sum[r])
					clear(row[valid:])
				}
				kv.accumTile(m.ops, ob, nr, hd, st, nb, p0*kw+kvh*hd, kw, wd)
			}
			for r := range nr {
				at := (i0+r/rep)*qw + (kvh*rep+r%rep)*hd
				dst, g, o := ao[at:at+hd], gate[at:at+hd], ob[r*hd:(r+1)*hd]
				for x := range dst {
					dst[x] = float32(float64(o[x]) / sum[r])
				}
				m.k.SigmoidMul(dst, g) // the output gate, as the decode plan applies it
			}
		}
	}))
}

// attendTask runs attendUnits on a worker with that worker's scratch.
type attendTask struct{ s *Session }

func (t attendTask) Do(w, lo, hi int) { t.s.attendUnits(w, lo, hi) }
