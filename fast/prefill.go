package fast

import (
	"context"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// prefillChunk is how many prompt tokens one pass of the prefill plan processes: large enough
// that each dequantized weight row is reused across many tokens, small enough that the
// activations of a chunk stay in tens of MB at the real dimensions. At 1,024 an expert sees 32
// tokens on average (8 of 256 experts per token), enough rows to reuse each dequantized row well.
const prefillChunk = 1024

// logitRows is how many positions share one pass over lm_head when every position's logits are
// wanted (prompt scoring).
const logitRows = 8

// mulJob is one mat-mat of a gathered dispatch: Y[t] = W X[t] for t < rows.
type mulJob struct {
	w       *mat
	x       []float32 // [rows, In]
	rows    int
	y       []float32 // [rows, yStride]
	yStride int
}

// muls runs gathered mat-mats: quantized ones on the fast/cpu grouped GEMM (dequantization fused
// into the tile loads), or, for a matrix that only a few token rows read (most experts of a
// short prompt), as one mat-vec per row, all such rows of the call gathered in one dispatch; the
// rest with the plain loops.
func (s *Session) muls(jobs ...mulJob) {
	m := s.m
	var few []vecJob
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
			m.k.QMatMat(j.y[:j.rows*j.w.out], j.w.q, j.x[:j.rows*j.w.in], j.rows)
		default:
			m.plainMuls(j)
		}
	}
	if len(few) > 0 {
		s.vecsWith(few, false)
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

// prefillChunk runs the prefill plan over toks (all in the vocabulary, room already checked) and
// returns the logits at the last position. off is the index of toks[0] within the caller's prompt.
func (s *Session) prefillChunk(ctx context.Context, toks []int32, off int, each func(int, []float32) error) ([]float32, error) {
	m, c := s.m, s.m.cfg
	t, hs := len(toks), c.HiddenSize
	x := make([]float32, t*hs)
	a := make([]float32, t*hs)
	r := make([]float32, t*hs)
	for i, id := range toks {
		if err := m.embedRow(id, x[i*hs:(i+1)*hs]); err != nil {
			return nil, err
		}
	}
	s.kvReserve(t)
	s.observeEmbed(x, t)
	for li := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := &m.layers[li]
		if s.obs != nil {
			s.prefillLayerObserved(li, l, x, a, r, t)
			continue
		}
		normRows(x, l.inNorm, a, t, hs, m.eps())
		if l.kind == checkpoint.LinearAttention {
			s.deltanetPrefill(li, l, a, t, r)
		} else {
			s.attnPrefill(li, l, a, t, r)
		}
		addInto(x, r)
		normRows(x, l.postNorm, a, t, hs, m.eps())
		s.moePrefill(l, a, t, r)
		addInto(x, r)
	}
	s.pos += t
	normRows(x, m.final, a, t, hs, m.eps())
	v := c.VocabSize
	if each == nil {
		s.vecsQ16(append(s.dec.jobs[:0], vecJob{m.lmHead, a[(t-1)*hs:], s.dec.logits}))
		s.observeFinal(s.pos-t, a, t, s.dec.logits)
		return s.dec.logits, nil
	}
	y := make([]float32, logitRows*v)
	for i0 := 0; i0 < t; i0 += logitRows {
		n := min(logitRows, t-i0)
		s.muls(mulJob{m.lmHead, a[i0*hs:], n, y, v})
		for i := 0; i < n; i++ {
			if err := each(off+i0+i, y[i*v:(i+1)*v]); err != nil {
				return nil, err
			}
		}
	}
	copy(s.dec.logits, y[((t-1)%logitRows)*v:((t-1)%logitRows+1)*v])
	return s.dec.logits, nil
}

func normRows(x, w, out []float32, t, hs int, eps float64) {
	for i := 0; i < t; i++ {
		rmsNorm(x[i*hs:(i+1)*hs], w, out[i*hs:(i+1)*hs], eps)
	}
}

func addInto(x, r []float32) {
	for i, v := range r {
		x[i] += v
	}
}

// deltanetPrefill: r = DeltaNet(a) for t tokens. a, r: [t, H].
func (s *Session) deltanetPrefill(li int, l *layer, a []float32, t int, r []float32) {
	m, d := s.m, &s.m.dims
	vd := d.Hv * d.Dv
	qkv := make([]float32, t*d.ConvDim())
	z := make([]float32, t*vd)
	bb := make([]float32, t*d.Hv)
	aa := make([]float32, t*d.Hv)
	s.muls(mulJob{l.qkv, a, t, qkv, d.ConvDim()}, mulJob{l.z, a, t, z, vd}, mulJob{l.b, a, t, bb, d.Hv}, mulJob{l.a, a, t, aa, d.Hv})
	conv := s.conv[li]
	m.run.Run(d.ConvDim(), func(lo, hi int) {
		tmp := make([]float32, 2*d.K*(hi-lo))
		convSeq(m.ops, d, l.conv, conv, qkv, t, tmp, lo, hi)
	})
	g := make([]float32, t*d.Hv)
	beta := make([]float32, t*d.Hv)
	for i := 0; i < t; i++ {
		normQK(d, qkv[i*d.ConvDim():(i+1)*d.ConvDim()], m.qkScale())
		gates(l.aLog, l.dtBias, aa[i*d.Hv:(i+1)*d.Hv], bb[i*d.Hv:(i+1)*d.Hv], g[i*d.Hv:(i+1)*d.Hv], beta[i*d.Hv:(i+1)*d.Hv])
	}
	o := make([]float32, t*vd)
	y := make([]float32, t*vd)
	ssm := s.ssm[li]
	m.run.Run(d.Hv, func(lo, hi int) {
		deltanetChunked(m.ops, d, t, qkv, d.ConvDim(), qkv[2*d.Hk*d.Dk:], d.ConvDim(), g, beta, ssm, o, s.scr, lo, hi)
		for i := 0; i < t; i++ {
			for h := lo; h < hi; h++ {
				at := i*vd + h*d.Dv
				gatedNorm(m.ops, o[at:at+d.Dv], z[at:at+d.Dv], l.gn, y[at:at+d.Dv], m.eps())
			}
		}
	})
	s.muls(mulJob{l.out, y, t, r, m.cfg.HiddenSize})
}

// attnPrefill: r = gated causal attention of a for t tokens at positions s.pos.., appending them
// to the KV cache.
func (s *Session) attnPrefill(li int, l *layer, a []float32, t int, r []float32) {
	m, c := s.m, s.m.cfg
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qw, kw := hq*hd, hkv*hd
	q2 := make([]float32, t*2*qw)
	kk := make([]float32, t*kw)
	vv := make([]float32, t*kw)
	s.muls(mulJob{l.q, a, t, q2, 2 * qw}, mulJob{l.k, a, t, kk, kw}, mulJob{l.v, a, t, vv, kw})
	qh := make([]float32, t*qw)
	gate := make([]float32, t*qw)
	for i := 0; i < t; i++ {
		pos := s.pos + i
		for h := 0; h < hq; h++ {
			m.queryHead(l, q2[i*2*qw+h*2*hd:i*2*qw+(h+1)*2*hd], pos, qh[i*qw+h*hd:i*qw+(h+1)*hd], gate[i*qw+h*hd:i*qw+(h+1)*hd])
		}
		kr := kk[i*kw : (i+1)*kw]
		for h := 0; h < hkv; h++ {
			rmsNorm(kr[h*hd:(h+1)*hd], l.kn, kr[h*hd:(h+1)*hd], m.eps())
			rope(kr[h*hd:(h+1)*hd], pos, m.inv)
		}
	}
	s.kv[li].put(m.k, s.pos, kw, kk, vv)
	ao := make([]float32, t*qw)
	s.attendPrefill(li, qh, gate, t, ao)
	s.muls(mulJob{l.o, ao, t, r, c.HiddenSize})
}

// moePrefill: r = MoE(a) for t tokens — router for all tokens, tokens grouped by expert (counting
// sort), one gathered GEMM per expert for gate/up and for down, then the weighted scatter-add;
// the shared expert as a GEMM over all tokens.
// It returns the router's logits [t, E], chosen experts and weights [t, k] (for observation).
func (s *Session) moePrefill(l *layer, a []float32, t int, r []float32) (rl []float32, ids []int, wts []float32) {
	c := s.m.cfg
	hs, e, k := c.HiddenSize, c.NumExperts, c.NumExpertsPerTok
	rl = make([]float32, t*e)
	seg := make([]float32, t)
	s.muls(mulJob{l.router, a, t, rl, e}, mulJob{l.seg, a, t, seg, 1})
	ids = make([]int, t*k)
	wts = make([]float32, t*k)
	count := make([]int, e+1)
	for i := 0; i < t; i++ {
		route(rl[i*e:(i+1)*e], ids[i*k:(i+1)*k], wts[i*k:(i+1)*k])
		for _, x := range ids[i*k : (i+1)*k] {
			count[x+1]++
		}
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
	sgv := make([]float32, t*is)
	suv := make([]float32, t*is)
	s.muls(mulJob{l.sg, a, t, sgv, is}, mulJob{l.su, a, t, suv, is})
	s.m.ops.swiglu(sgv, suv)
	s.muls(mulJob{l.sd, sgv, t, r, hs})
	for i := 0; i < t; i++ {
		g := sigmoid(seg[i])
		for j := 0; j < hs; j++ {
			r[i*hs+j] *= g
		}
	}
	in := c.MoEIntermediate
	xe := make([]float32, t*hs)
	ge := make([]float32, t*in)
	ue := make([]float32, t*in)
	de := make([]float32, t*hs)
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
