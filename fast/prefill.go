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

// prefillChunk runs the prefill plan over toks (all in the vocabulary, room already checked) and
// returns the logits at the last position. off is the index of toks[0] within the caller's prompt.
func (s *Session) prefillChunk(ctx context.Context, toks []int32, off int, each func(int, []float32) error) ([]float32, error) {
	m, c := s.m, s.m.cfg
	t, hs := len(toks), c.HiddenSize
	defer s.pf.release(s.pf.mark())
	x := s.pf.take(t * hs)
	a := s.pf.take(t * hs)
	r := s.pf.take(t * hs)
	for i, id := range toks {
		if err := m.embedRow(id, x[i*hs:(i+1)*hs]); err != nil {
			return nil, err
		}
	}
	s.kvReserve(t)
	s.observeEmbed(x, t)
	eps := m.eps()
	for li := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := &m.layers[li]
		lastOnly := li == len(m.layers)-1 && each == nil // see below
		if s.obs != nil {
			s.prefillLayerObserved(li, l, x, a, r, t, lastOnly)
			continue
		}
		if li == 0 {
			m.run.Run(t, func(lo, hi int) { normRows(m.ops, x[lo*hs:hi*hs], l.inNorm, a[lo*hs:hi*hs], hi-lo, hs, eps) })
		}
		// In the last layer only the last row's output is read (by lm_head) unless every
		// position's logits are wanted: its attention computes every row's key and value but only
		// that row's query and output, and its MoE runs for that row alone.
		o, n := 0, t
		if lastOnly {
			o, n = (t-1)*hs, 1
		}
		if l.kind == checkpoint.LinearAttention {
			s.deltanetPrefill(li, l, a, t, r)
		} else {
			s.attnPrefill(li, l, a, t, r, t-n)
		}
		next := m.final // the next layer's input norm, or the final one
		if li+1 < len(m.layers) {
			next = m.layers[li+1].inNorm
		}
		s.addNorm(x[o:], r[o:], l.postNorm, a[o:], n)
		s.moePrefill(l, a[o:], n, r[o:])
		s.addNorm(x[o:], r[o:], next, a[o:], n)
	}
	if s.obs != nil {
		normRows(m.ops, x, m.final, a, t, hs, eps)
	}
	s.pos += t
	v := c.VocabSize
	if each == nil {
		s.vecsQ16(append(s.dec.jobs[:0], vecJob{m.lmHead, a[(t-1)*hs:], s.dec.logits}))
		s.observeFinal(s.pos-t, a, t, s.dec.logits)
		return s.dec.logits, nil
	}
	y := s.pf.take(logitRows * v)
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

// addNorm adds r to the residual stream x and writes x's rows RMS-normed by w to a (x, r, a:
// [t, H]), in parallel over rows: the serial loops would leave the other workers idle.
func (s *Session) addNorm(x, r, w, a []float32, t int) {
	hs, eps := s.m.cfg.HiddenSize, s.m.eps()
	s.m.run.Run(t, func(lo, hi int) {
		s.m.ops.addInto(x[lo*hs:hi*hs], r[lo*hs:hi*hs])
		normRows(s.m.ops, x[lo*hs:hi*hs], w, a[lo*hs:hi*hs], hi-lo, hs, eps)
	})
}

func normRows(ops vecOps, x, w, out []float32, t, hs int, eps float64) {
	for i := 0; i < t; i++ {
		ops.rmsNorm(x[i*hs:(i+1)*hs], w, out[i*hs:(i+1)*hs], eps)
	}
}
