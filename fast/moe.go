package fast

import "math"

// moeDecode: b.r = MoE(b.a) for one token — one dispatch for the router, the shared expert's gate
// and its gate and up projections (all read b.a: the shared expert's 4-bit rows stream while the
// small 8-bit router computes, which alone would be too small a dispatch to reach the bandwidth),
// router top-k, one dispatch for the k experts' gate and up, one for every down projection, then
// the weighted sum.
func (s *Session) moeDecode(l *layer) {
	b := s.dec
	k := len(b.ids)
	s.vecs(append(b.jobs[:0], vecJob{l.router, b.a, b.rl}, vecJob{l.seg, b.a, b.sgate},
		vecJob{l.sg, b.a, b.eg[k]}, vecJob{l.su, b.a, b.eu[k]}))
	route(b.rl, b.ids, b.wts)
	jobs := b.jobs[:0]
	for j, e := range b.ids {
		jobs = append(jobs, vecJob{l.gate[e], b.a, b.eg[j]}, vecJob{l.up[e], b.a, b.eu[j]})
	}
	s.vecsAgain(jobs) // b.a as the router's dispatch prepared it
	jobs = jobs[:0]
	for j, e := range b.ids {
		s.m.ops.swiglu(b.eg[j][:l.gate[e].out], b.eu[j])
		jobs = append(jobs, vecJob{l.down[e], b.eg[j], b.ed[j]})
	}
	s.m.ops.swiglu(b.eg[k][:l.sg.out], b.eu[k])
	jobs = append(jobs, vecJob{l.sd, b.eg[k], b.ed[k]})
	s.vecs(jobs)
	sg := sigmoid(b.sgate[0])
	for i, v := range b.ed[k][:len(b.r)] {
		b.r[i] = sg * v
	}
	for j := 0; j < k; j++ {
		s.m.ops.axpy(b.wts[j], b.ed[j][:len(b.r)], b.r)
	}
}

// moePrefill: r = MoE(a) for t tokens — router for all tokens, tokens grouped by expert (counting
// sort), then the shared expert and the routed ones as whole-expert tasks over the pool
// (moeExperts) or, for one token or matrices off the integer GEMM, the shared expert as a GEMM
// over all tokens and one gathered GEMM per routed expert for gate/up and for down, then the
// weighted scatter-add.
// It returns the router's logits [t, E], chosen experts and weights [t, k] (for observation).
func (s *Session) moePrefill(l *layer, a []float32, t int, r []float32) (rl []float32, ids []int, wts []float32) {
	c := s.m.cfg
	hs, e, k := c.HiddenSize, c.NumExperts, c.NumExpertsPerTok
	rl = make([]float32, t*e)
	seg := make([]float32, t)
	s.muls(mulJob{l.router, a, t, rl, e}, mulJob{l.seg, a, t, seg, 1})
	ids = make([]int, t*k)
	wts = make([]float32, t*k)
	s.m.run.Run(t, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			route(rl[i*e:(i+1)*e], ids[i*k:(i+1)*k], wts[i*k:(i+1)*k])
		}
	})
	count := make([]int, e+1)
	for _, x := range ids {
		count[x+1]++
	}
	for x := 1; x <= e; x++ {
		count[x] += count[x-1]
	}
	order := make([]int, t*k) // slots (token*k + j) grouped by expert
	fill := append([]int(nil), count[:e]...)
	for slot, x := range ids {
		order[fill[x]] = slot
		fill[x]++
	}
	is := c.SharedIntermediate
	defer s.pf.release(s.pf.mark())
	sgv := s.pf.take(t * is)
	suv := s.pf.take(t * is)
	if s.expertsBatched(l, t) {
		// The shared expert runs as one task of the experts' dispatch (moeExperts).
		s.moeExperts(l, a, t, wts, count, order, r, sharedJob{sgv, suv, seg})
		return rl, ids, wts
	}
	s.muls(mulJob{l.sg, a, t, sgv, is}, mulJob{l.su, a, t, suv, is})
	s.m.ops.swiglu(sgv, suv)
	s.muls(mulJob{l.sd, sgv, t, r, hs})
	s.m.run.Run(t, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gateShared(r[i*hs:(i+1)*hs], seg[i])
		}
	})
	in := c.MoEIntermediate
	xe := s.pf.take(t * hs)
	ge := s.pf.take(t * in)
	ue := s.pf.take(t * in)
	de := s.pf.take(t * hs)
	for x := 0; x < e; x++ {
		n := count[x+1] - count[x]
		if n == 0 {
			continue
		}
		slots := order[count[x]:count[x+1]]
		for j, slot := range slots {
			tok := slot / k
			copy(xe[j*hs:(j+1)*hs], a[tok*hs:(tok+1)*hs])
		}
		s.muls(mulJob{l.gate[x], xe, n, ge, in}, mulJob{l.up[x], xe, n, ue, in})
		s.m.ops.swiglu(ge[:n*in], ue)
		s.muls(mulJob{l.down[x], ge, n, de, hs})
		for j, slot := range slots {
			tok := slot / k
			s.m.ops.axpy(wts[slot], de[j*hs:(j+1)*hs], r[tok*hs:(tok+1)*hs])
		}
	}
	return rl, ids, wts
}

// gateShared scales a token's shared-expert output r: [H] by its gate, sigmoid(seg).
func gateShared(r []float32, seg float32) {
	g := sigmoid(seg)
	for j := range r {
		r[j] *= g
	}
}

// route computes the router's top-k: softmax over logits (float64), the k largest probabilities
// (ties to the lower index), renormalised. logits: [E]; ids, w: [k].
func route(logits []float32, ids []int, w []float32) {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v - mx))
	}
	k := len(ids)
	for j := 0; j < k; j++ {
		ids[j] = -1
	}
	// insertion into a sorted top-k (k is small).
	for e, v := range logits {
		pos := k
		for pos > 0 && (ids[pos-1] < 0 || v > logits[ids[pos-1]]) {
			pos--
		}
		if pos == k {
			continue
		}
		copy(ids[pos+1:], ids[pos:k-1])
		ids[pos] = e
	}
	var sum float64
	for j, e := range ids {
		p := math.Exp(float64(logits[e]-mx)) / z
		w[j] = float32(p)
		sum += p
	}
	for j := range w {
		w[j] = float32(float64(w[j]) / sum)
	}
}
