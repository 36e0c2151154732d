package fast

import (
	"context"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// decodeBufs are the decode plan's fixed buffers, allocated once per session.
type decodeBufs struct {
	h, a, r         []float32 // [H] residual, normed input, mixer/MoE output
	qkv, u, z, o, y []float32 // DeltaNet: [C] pre-conv, [C] post-conv, [Hv*Dv] gate, core out, normed out
	acc             []float32 // DeltaNet: [Hv*(Dk+Dv)] the step's scratch: decayed k and delta per head
	bb, aa, g, beta []float32 // DeltaNet: [Hv]
	q2, kk, vv      []float32 // attention: [Hq*2D], [Hkv*D], [Hkv*D]
	qh, gate, ao    []float32 // attention: [Hq*D] query (scaled), gate, output
	part            []float32 // attention split partials: [Hq, splits, D+2]
	scores          []float32 // attention: [Hq*splits, attnSub] score sub-blocks
	aout            []float32 // attention: [Hq*splits, D] the units' unnormalised outputs
	amx             []float32 // attention: [Hq*splits] running max per (unit, head)
	awide           []float32 // attention: [workers, attnSub, D] per-worker scratch of the fp16 tiles
	asum            []float64 // attention: [Hq*splits] running sum
	rope            []float64 // attention: [rot] the position's cos and sin (ropeTable)
	rl              []float32 // router logits [E]
	ids             []int     // [k]
	wts             []float32 // [k]
	eg, eu, ed      [][]float32
	sgate           []float32 // [1]
	logits          []float32 // [V]
	jobs            []vecJob  // room for the widest dispatch: gate and up of the k experts and the shared one
}

func newDecodeBufs(m *Model) *decodeBufs {
	c := m.cfg
	d := m.dims
	f := func(n int) []float32 { return make([]float32, n) }
	b := &decodeBufs{
		h: f(c.HiddenSize), a: f(c.HiddenSize), r: f(c.HiddenSize),
		qkv: f(d.ConvDim()), u: f(d.ConvDim()), z: f(d.Hv * d.Dv), acc: f(d.Hv * (d.Dk + d.Dv)), o: f(d.Hv * d.Dv), y: f(d.Hv * d.Dv),
		bb: f(d.Hv), aa: f(d.Hv), g: f(d.Hv), beta: f(d.Hv),
		q2: f(2 * c.NumHeads * c.HeadDim), kk: f(c.NumKVHeads * c.HeadDim), vv: f(c.NumKVHeads * c.HeadDim),
		qh: f(c.NumHeads * c.HeadDim), gate: f(c.NumHeads * c.HeadDim), ao: f(c.NumHeads * c.HeadDim),
		rl: f(c.NumExperts), ids: make([]int, c.NumExpertsPerTok), wts: f(c.NumExpertsPerTok),
		sgate: f(1), logits: f(c.VocabSize), jobs: make([]vecJob, 0, 2*(c.NumExpertsPerTok+1)),
		awide: f(m.run.Workers() * attnSub * c.HeadDim), rope: make([]float64, 2*len(m.inv)),
	}
	inter := max(c.MoEIntermediate, c.SharedIntermediate)
	for i := 0; i <= c.NumExpertsPerTok; i++ {
		b.eg = append(b.eg, f(inter))
		b.eu = append(b.eu, f(inter))
		b.ed = append(b.ed, f(c.HiddenSize))
	}
	return b
}

// decodeStep runs every layer for the token whose embedding is in dec.h, at position s.pos.
func (s *Session) decodeStep(ctx context.Context) error {
	m, b := s.m, s.dec
	s.observeEmbed(b.h, 1)
	for li := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := &m.layers[li]
		if s.obs != nil {
			s.decodeLayerObserved(li, l)
			continue
		}
		m.ops.rmsNorm(b.h, l.inNorm, b.a, m.eps())
		if l.kind == checkpoint.LinearAttention {
			s.deltanetDecode(li, l)
		} else {
			s.attnDecode(li, l)
		}
		m.ops.addInto(b.h, b.r)
		m.ops.rmsNorm(b.h, l.postNorm, b.a, m.eps())
		s.moeDecode(l)
		m.ops.addInto(b.h, b.r)
	}
	m.ops.rmsNorm(b.h, m.final, b.a, m.eps())
	s.vecsQ16(append(b.jobs[:0], vecJob{m.lmHead, b.a, b.logits}))
	s.observeFinal(s.pos, b.a, 1, b.logits)
	s.pos++
	return nil
}

// decodeTasks are the decode plan's parallel loops as func values made once per session, so that
// dispatching them allocates nothing; they read their layer from Session.cur.
type decodeTasks struct {
	step   func(lo, hi int) // DeltaNet (deltanetDecodeTask)
	attend attendTask       // attention (attendUnits)
}

func (s *Session) newDecodeTasks() decodeTasks {
	return decodeTasks{step: s.deltanetDecodeTask(), attend: attendTask{s}}
}
