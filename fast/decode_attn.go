package fast

import "math"

// attnDecode: b.r = gated attention of b.a at position s.pos, appending to the KV cache.
func (s *Session) attnDecode(li int, l *layer) {
	m, b, c := s.m, s.dec, s.m.cfg
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	s.vecs(append(b.jobs[:0], vecJob{l.q, b.a, b.q2}, vecJob{l.k, b.a, b.kk}, vecJob{l.v, b.a, b.vv}))
	for h := 0; h < hq; h++ {
		q := b.qh[h*hd : (h+1)*hd]
		rmsNorm(b.q2[h*2*hd:h*2*hd+hd], l.qn, q, m.eps())
		copy(b.gate[h*hd:(h+1)*hd], b.q2[h*2*hd+hd:(h+1)*2*hd])
		rope(q, s.pos, m.inv)
	}
	w := hkv * hd
	kc := s.kc[li][s.pos*w : (s.pos+1)*w]
	copy(s.vc[li][s.pos*w:(s.pos+1)*w], b.vv)
	for h := 0; h < hkv; h++ {
		rmsNorm(b.kk[h*hd:(h+1)*hd], l.kn, kc[h*hd:(h+1)*hd], m.eps())
		rope(kc[h*hd:(h+1)*hd], s.pos, m.inv)
	}
	n := s.pos + 1
	s.attend(b.qh, s.kc[li][:n*w], s.vc[li][:n*w], n, hq, hkv, hd, b.ao)
	for i, g := range b.gate {
		b.ao[i] *= sigmoid(g)
	}
	s.vecs(append(b.jobs[:0], vecJob{l.o, b.ao, b.r}))
}

// attnSplit is the key count each split of a decode attention covers: long contexts are split
// along the sequence so both workers stay busy and partial softmaxes are merged after.
const attnSplit = 512

// attnSub is the key block one attendBlock call folds in (within a split): small enough that the
// keys and values stay in L2 while all the query heads of a KV head take their turn.
const attnSub = 64

// attnArgs are the inputs of one decode attention (set by attend, read by attendUnits).
type attnArgs struct {
	q, k, v     []float32 // q: [Hq*D], scaled by D^-1/2; k, v: [n, Hkv*D]
	n, splits   int
	hq, hkv, hd int
	part        []float32 // [Hq, splits, D+2]
	scores      []float32 // [Hkv*splits, attnSplit] one block of scores per unit
	mx          []float32 // [Hkv*splits, Hq/Hkv] running max of each unit's heads
	sum         []float64 // [Hkv*splits, Hq/Hkv] running sum
}

// attend computes causal attention of one query position over keys [0, n), split along the
// sequence in attnSplit-key pieces (units of (head, split) across the pool), then merges the
// partial softmaxes. q: [Hq*D]; k, v: [n, Hkv*D]; out: [Hq*D].
func (s *Session) attend(q, k, v []float32, n, hq, hkv, hd int, out []float32) {
	b := s.dec
	splits := (n + attnSplit - 1) / attnSplit
	stride := hd + 2
	if need := hq * splits * stride; cap(b.part) < need {
		b.part = make([]float32, need)
	}
	p := b.part[:hq*splits*stride]
	if need := hkv * splits * attnSplit; cap(b.scores) < need {
		b.scores = make([]float32, need)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i, e := range q {
		b.qs[i] = e * scale
	}
	if cap(b.amx) < hq*splits {
		b.amx, b.asum = make([]float32, hq*splits), make([]float64, hq*splits)
	}
	s.att = attnArgs{q: b.qs, k: k, v: v, n: n, splits: splits, hq: hq, hkv: hkv, hd: hd, part: p,
		scores: b.scores[:hkv*splits*attnSplit], mx: b.amx[:hq*splits], sum: b.asum[:hq*splits]}
	s.m.run.Run(hkv*splits, s.tasks.attend)
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

// attendUnits computes the partial softmaxes of units [lo, hi): unit u is KV head u/splits over
// the keys of split u%splits, for every query head that shares it (GQA): per head, the block's
// scores in one pass over the keys (Dots), their exponentials against the block maximum
// (ExpShift), and the weighted sum of the value rows in one pass (AxpyRows); the keys and values
// of a block stay in cache for the group's later heads. Head h's result goes to part as
// (Σ e^{s-m} v, m, Σ e^{s-m}).
func (s *Session) attendUnits(lo, hi int) {
	a := &s.att
	ops := s.m.ops
	hd, stride, w := a.hd, a.hd+2, a.hkv*a.hd
	rep := a.hq / a.hkv
	for u := lo; u < hi; u++ {
		kvh, sp := u/a.splits, u%a.splits
		t0, t1 := sp*attnSplit, min(a.n, (sp+1)*attnSplit)
		kr, vr := a.k[t0*w+kvh*hd:t1*w], a.v[t0*w+kvh*hd:t1*w]
		sc := a.scores[u*attnSplit : u*attnSplit+t1-t0]
		mx, sum := a.mx[u*rep:(u+1)*rep], a.sum[u*rep:(u+1)*rep]
		for j := range rep {
			i := ((kvh*rep+j)*a.splits + sp) * stride
			clear(a.part[i : i+hd])
			mx[j], sum[j] = float32(math.Inf(-1)), 0
		}
		// Sub-blocks of attnSub keys: the group's heads take turns on one while its key and value
		// rows are still in cache.
		for b0 := 0; b0 < t1-t0; b0 += attnSub {
			b1 := min(t1-t0, b0+attnSub)
			kb, vb := kr[b0*w:], vr[b0*w:]
			for j := range rep {
				h := kvh*rep + j
				i := (h*a.splits + sp) * stride
				ops.attendBlock(a.q[h*hd:(h+1)*hd], kb, vb, w, sc[b0:b1], a.part[i:i+hd], &mx[j], &sum[j])
			}
		}
		for j := range rep {
			i := ((kvh*rep+j)*a.splits + sp) * stride
			a.part[i+hd], a.part[i+hd+1] = mx[j], float32(sum[j])
		}
	}
}
