package fast

import (
	"context"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
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
	awide           []float32 // attention: [workers, attnSub, D] fp16 K/V blocks widened per worker
	asum            []float64 // attention: [Hq*splits] running sum
	rl              []float32 // router logits [E]
	ids             []int     // [k]
	wts             []float32 // [k]
	eg, eu, ed      [][]float32
	sgate           []float32 // [1]
	logits          []float32 // [V]
	jobs            []vecJob  // room for the widest dispatch: gate and up of the k experts and the shared one
}

// vecJob is one mat-vec of a gathered dispatch: y = W x.
type vecJob struct {
	w    *mat
	x, y []float32
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
		awide: f(m.run.Workers() * attnSub * c.HeadDim),
	}
	inter := max(c.MoEIntermediate, c.SharedIntermediate)
	for i := 0; i <= c.NumExpertsPerTok; i++ {
		b.eg = append(b.eg, f(inter))
		b.eu = append(b.eu, f(inter))
		b.ed = append(b.ed, f(c.HiddenSize))
	}
	return b
}

// vecs runs gathered mat-vecs, y = W x, with float32 activations unless Options.Int16Activations
// asked for int16 ones everywhere (see vecsQ16).
func (s *Session) vecs(jobs []vecJob) { s.vecsWith(jobs, s.m.int16) }

// vecsQ16 runs gathered mat-vecs whose 4-bit matrices read int16 activations
// (cpu.Kernels.QMatVecQ16): up to 1.5e-5 of each 64-group's largest input off, against float32
// rounding, and faster where the CPU lacks AVX-512 VNNI. The decode plan
// uses it by default only where the error cannot feed back into the session's state: the lm_head, whose output is the logits and nothing else.
// On the fixture models that leaves the decode plan's agreement with ref as it was (teacher-forced
// top-1 100%, |Δlogp| ≤ 2e-4); using it everywhere (Options.Int16Activations) flipped an expert
// choice of one fixture mid-sequence, and the state carried the change on: top-1 95%, Δppl −1.5%.
// Where the kernels have AVX-512 VNNI (cpu.Kernels.VNNI) the plain mat-vec is both faster and
// exact to float32's rounding, and the lm_head takes it instead.
func (s *Session) vecsQ16(jobs []vecJob) { s.vecsWith(jobs, !s.m.k.VNNI()) }

// vecsWith runs gathered mat-vecs. On the fast/cpu kernels the quantized ones run as one pool
// dispatch (cpu.Kernels.QMatVecs), each distinct input vector prepared once (group sums, SIMD
// orders, the int16 copy when q16) for all the matrices that read it; bf16 ones run after, each
// split across the pool; any other dense one on the plain loops.
func (s *Session) vecsWith(jobs []vecJob, q16 bool) {
	m := s.m
	clear(s.vecUsed)
	mv := s.mv[:0]
	var last []float32
	var v *cpu.Vec
	for _, j := range jobs {
		x := j.x[:j.w.in]
		if j.w.q == nil {
			continue
		}
		if last == nil || &last[0] != &x[0] || len(last) != len(x) {
			v = s.vec(len(x))
			if q16 {
				v.PrepareQ16(x)
			} else {
				v.Prepare(x)
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
		rmsNorm(b.h, l.inNorm, b.a, m.eps())
		if l.kind == checkpoint.LinearAttention {
			s.deltanetDecode(li, l)
		} else {
			s.attnDecode(li, l)
		}
		for i, v := range b.r {
			b.h[i] += v
		}
		rmsNorm(b.h, l.postNorm, b.a, m.eps())
		s.moeDecode(l)
		for i, v := range b.r {
			b.h[i] += v
		}
	}
	rmsNorm(b.h, m.final, b.a, m.eps())
	s.vecsQ16(append(b.jobs[:0], vecJob{m.lmHead, b.a, b.logits}))
	s.observeFinal(s.pos, b.a, 1, b.logits)
	s.pos++
	return nil
}

// deltanetDecode: b.r = DeltaNet(b.a) for one token, updating the conv and recurrent state.
func (s *Session) deltanetDecode(li int, l *layer) {
	m, b, d := s.m, s.dec, &s.m.dims
	s.vecs(append(b.jobs[:0], vecJob{l.qkv, b.a, b.qkv}, vecJob{l.z, b.a, b.z}, vecJob{l.b, b.a, b.bb}, vecJob{l.a, b.a, b.aa}))
	s.cur = li
	m.run.Run(d.ConvDim(), s.tasks.conv)
	normQK(d, b.u, m.qkScale())
	gates(l.aLog, l.dtBias, b.aa, b.bb, b.g, b.beta)
	m.run.Run(d.Hv, s.tasks.heads)
	s.vecs(append(b.jobs[:0], vecJob{l.out, b.y, b.r}))
}

// decodeTasks are the decode plan's parallel loops as func values made once per session, so that
// dispatching them allocates nothing; they read their layer from Session.cur.
type decodeTasks struct {
	conv, heads func(lo, hi int)
	attend      attendTask
}

// attendTask runs attendUnits on a worker with that worker's scratch.
type attendTask struct{ s *Session }

func (t attendTask) Do(w, lo, hi int) { t.s.attendUnits(w, lo, hi) }

func (s *Session) newDecodeTasks() decodeTasks {
	return decodeTasks{
		conv: func(lo, hi int) {
			l := &s.m.layers[s.cur]
			convStep(s.m.ops, &s.m.dims, l.conv, s.conv[s.cur], s.dec.qkv, s.dec.u, lo, hi)
		},
		heads: func(lo, hi int) {
			d, b, l := &s.m.dims, s.dec, &s.m.layers[s.cur]
			deltanetStep(s.m.ops, d, b.u, b.u[2*d.Hk*d.Dk:], b.g, b.beta, s.ssm[s.cur], b.o, b.acc, lo, hi)
			for h := lo; h < hi; h++ {
				gatedNorm(s.m.ops, b.o[h*d.Dv:(h+1)*d.Dv], b.z[h*d.Dv:(h+1)*d.Dv], l.gn, b.y[h*d.Dv:(h+1)*d.Dv], s.m.eps())
			}
		},
		attend: attendTask{s},
	}
}

// normQK L2-normalises each q and k head of one token's conv output in place, scaling q by s.
// u: [C] with q heads then k heads first.
func normQK(d *checkpoint.Dims, u []float32, s float32) {
	for h := 0; h < 2*d.Hk; h++ {
		sc := float32(1)
		if h < d.Hk {
			sc = s
		}
		l2normScale(u[h*d.Dk:(h+1)*d.Dk], deltanetNormEps, sc)
	}
}

// moeDecode: b.r = MoE(b.a) — one dispatch for the router, the shared expert's gate and its gate
// and up projections (all read b.a: the shared expert's 4-bit rows stream while the small 8-bit
// router computes, which alone would be too small a dispatch to reach the bandwidth), router top-k, one dispatch for the k experts' gate and up, one for every
// down projection, then the weighted sum.
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
	s.vecs(jobs)
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
