package fast

import (
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/trace"
)

// Observe attaches o to the session (nil detaches it): every later step reports its named
// intermediates (package trace) to o. While one is attached the layers run the observed twins
// below, which call the same kernels in the same order and report between them; with none the
// plans pay one nil check per layer.
func (s *Session) Observe(o trace.Observer) { s.obs = o }

var _ trace.Observable = (*Session)(nil)

// observeEmbed reports the embeddings of the step's t tokens at positions s.pos..: x: [t, H].
func (s *Session) observeEmbed(x []float32, t int) {
	if s.obs != nil {
		s.obs.Rows(trace.Model(trace.Embed), s.pos, t, x[:t*s.m.cfg.HiddenSize])
	}
}

// observeFinal reports the final-normed rows of the t tokens at positions pos.. (a: [t, H]) and
// the logits of the last of them ([V]).
func (s *Session) observeFinal(pos int, a []float32, t int, logits []float32) {
	if s.obs != nil {
		s.obs.Rows(trace.Model(trace.FinalNorm), pos, t, a[:t*s.m.cfg.HiddenSize])
		s.obs.Rows(trace.Model(trace.Logits), pos+t-1, 1, logits)
	}
}

// mixerSite is the point name of layer l's mixer output.
func mixerSite(l *layer) trace.Site {
	if l.kind == checkpoint.LinearAttention {
		return trace.DeltaNetOut
	}
	return trace.AttentionOut
}

// decodeLayerObserved is one layer of decodeStep, reporting each intermediate to s.obs.
func (s *Session) decodeLayerObserved(li int, l *layer) {
	m, b, o, pos := s.m, s.dec, s.obs, s.pos
	m.ops.rmsNorm(b.h, l.inNorm, b.a, m.eps())
	o.Rows(trace.At(li, trace.InputNorm), pos, 1, b.a)
	if l.kind == checkpoint.LinearAttention {
		s.deltanetDecode(li, l)
	} else {
		s.attnDecode(li, l)
	}
	o.Rows(trace.At(li, mixerSite(l)), pos, 1, b.r)
	m.ops.addInto(b.h, b.r)
	o.Rows(trace.At(li, trace.MixerResid), pos, 1, b.h)
	m.ops.rmsNorm(b.h, l.postNorm, b.a, m.eps())
	o.Rows(trace.At(li, trace.PostNorm), pos, 1, b.a)
	s.moeDecode(l)
	o.Route(li, pos, 1, b.rl, b.ids, b.wts)
	o.Rows(trace.At(li, trace.MoEOut), pos, 1, b.r)
	m.ops.addInto(b.h, b.r)
	o.Rows(trace.At(li, trace.MoEResid), pos, 1, b.h)
}

// prefillLayerObserved is one layer of prefillChunk on t tokens at positions s.pos.., reporting
// each intermediate to s.obs. x, a, r: [t, H]. lastOnly: the plain plan runs this layer's
// attention output and MoE for the last row alone (the last layer, no per-position logits).
func (s *Session) prefillLayerObserved(li int, l *layer, x, a, r []float32, t int, lastOnly bool) {
	m, o, pos, hs := s.m, s.obs, s.pos, s.m.cfg.HiddenSize
	normRows(m.ops, x, l.inNorm, a, t, hs, m.eps())
	o.Rows(trace.At(li, trace.InputNorm), pos, t, a)
	if l.kind == checkpoint.LinearAttention {
		s.deltanetPrefill(li, l, a, t, r)
	} else {
		s.attnPrefill(li, l, a, t, r, 0)
		if lastOnly && t > 1 {
			s.attnPrefill(li, l, a, t, r, t-1) // the last row as the plain plan computes it (below)
		}
	}
	o.Rows(trace.At(li, mixerSite(l)), pos, t, r)
	m.ops.addInto(x, r)
	o.Rows(trace.At(li, trace.MixerResid), pos, t, x)
	normRows(m.ops, x, l.postNorm, a, t, hs, m.eps())
	o.Rows(trace.At(li, trace.PostNorm), pos, t, a)
	rl, ids, wts := s.moePrefill(l, a, t, r)
	if lastOnly && t > 1 {
		// The plain plan runs this layer's attention and MoE for the last row alone
		// (prefillChunk): that row's values are what it computes, the others' what a batch of
		// every row would.
		c, last := m.cfg, t-1
		rl1, ids1, wts1 := s.moePrefill(l, a[last*hs:], 1, r[last*hs:])
		copy(rl[last*c.NumExperts:], rl1)
		copy(ids[last*c.NumExpertsPerTok:], ids1)
		copy(wts[last*c.NumExpertsPerTok:], wts1)
	}
	o.Route(li, pos, t, rl, ids, wts)
	o.Rows(trace.At(li, trace.MoEOut), pos, t, r)
	m.ops.addInto(x, r)
	o.Rows(trace.At(li, trace.MoEResid), pos, t, x)
}
