package metal

import (
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// decodePlan is one token's command buffer at position s.pos (inputs already uploaded): embed →
// per layer [rms_norm, DeltaNet (qmv×4, deltanet_scan, qmv_add) or attention (qmv×3, attn_prep,
// attn_decode_split/combine, qmv_add), rms_norm, router_topk, moe_gate_up, moe_down] → final
// rms_norm, lm_head qmv, logits_topk. Expert ids stay on the GPU.
func (s *Session) decodePlan() []device.Command {
	e, sz, sc, st := s.e, &s.e.sizes, s.sc, s.st
	h, a := sc.h.row(0), sc.a.row(0)
	n := s.pos + 1
	cmds := []device.Command{embedRows(e.w.embed, 1, sc.tokIDs.first(1), h)}
	for i := range e.w.layers {
		l := &e.w.layers[i]
		cmds = append(cmds, rmsNorm(1, sz.h, h, l.inNorm, a, sz.eps))
		if l.kind == checkpoint.LinearAttention {
			qkv, z, y := sc.qkv.row(0), sc.z.row(0), sc.y.row(0)
			bb, aa := sc.bb.row(0), sc.aa.row(0)
			cmds = append(cmds, qmv(l.qkv, a, qkv, false), qmv(l.z, a, z, false), qmv(l.b, a, bb, false), qmv(l.a, a, aa, false),
				deltanetScan(sz, l, 1, qkv, z, aa, bb, st.conv[i].first(st.conv[i].n), st.ssm[i].first(sz.hv), y),
				qmv(l.out, y, h, true))
		} else {
			q2, kk, vv, qh, gate, ao := sc.q2.row(0), sc.kk.row(0), sc.vv.row(0), sc.qh.row(0), sc.gate.row(0), sc.ao.row(0)
			kc, vc := st.kv(st.k[i], n), st.kv(st.v[i], n)
			cmds = append(cmds, qmv(l.q, a, q2, false), qmv(l.k, a, kk, false), qmv(l.v, a, vv, false),
				attnPrep(sz, l, s.pos, 1, q2, kk, vv, sc.cs.row(0), qh, gate, kc, vc))
			cmds = append(cmds, attnDecode(sz, n, decodeSplit, qh, kc, vc, sc.part.first(cdiv(n, decodeSplit)), gate, ao)...)
			cmds = append(cmds, qmv(l.o, ao, h, true))
		}
		cmds = append(cmds, rmsNorm(1, sz.h, h, l.postNorm, a, sz.eps),
			routerTopK(sz, l, 1, a, sc.ids.row(0), sc.wts.row(0), sc.sgate.row(0)))
		stride := max(sz.inter, sz.shared)
		act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * (sz.k + 1) * stride}
		cmds = append(cmds, moeDecode(sz, l, sc.ids.row(0), sc.wts.row(0), sc.sgate.row(0), a, act, h)...)
	}
	return append(cmds, s.logitsPlan(h)...)
}

// logitsPlan is the last position's head: final norm of h [H] → lm_head → logits [V] → top-k.
func (s *Session) logitsPlan(h device.Arg) []device.Command {
	e, sz, sc := s.e, &s.e.sizes, s.sc
	a := sc.a.row(0)
	return []device.Command{rmsNorm(1, sz.h, h, e.w.final, a, sz.eps), qmv(e.w.lmHead, a, sc.logits.row(0), false),
		logitsTopK(sz, e.topK, sc.logits.row(0), sc.top.row(0), sc.topv.row(0), sc.lse.row(0))}
}

// prefillPlan is one chunk of t tokens at position s.pos (inputs already uploaded): the decode
// plan's layers as GEMMs over the chunk, deltanet_scan over t tokens, causal attn_prefill, and the MoE
// with the slots grouped by expert on the GPU (moe_count/scan/scatter, grouped GEMMs,
// moe_combine). With all set, the head runs on every row into the all-logits buffer; else, with
// head set (the prompt's last chunk), on the last row only; else not at all.
func (s *Session) prefillPlan(t int, all, head bool) []device.Command {
	e, sz, sc, st := s.e, &s.e.sizes, s.sc, s.st
	h, a := sc.h.first(t), sc.a.first(t)
	n := s.pos + t
	cmds := []device.Command{embedRows(e.w.embed, t, sc.tokIDs.first(t), h)}
	for i := range e.w.layers {
		l := &e.w.layers[i]
		cmds = append(cmds, rmsNorm(t, sz.h, h, l.inNorm, a, sz.eps))
		if l.kind == checkpoint.LinearAttention {
			qkv, z, y := sc.qkv.first(t), sc.z.first(t), sc.y.first(t)
			bb, aa := sc.bb.first(t), sc.aa.first(t)
			cmds = append(cmds, qmm(l.qkv, t, a, qkv, false), qmm(l.z, t, a, z, false), qmm(l.b, t, a, bb, false),
				qmm(l.a, t, a, aa, false),
				deltanetScan(sz, l, t, qkv, z, aa, bb, st.conv[i].first(st.conv[i].n), st.ssm[i].first(sz.hv), y),
				qmm(l.out, t, y, h, true))
		} else {
			q2, kk, vv, qh, gate, ao := sc.q2.first(t), sc.kk.first(t), sc.vv.first(t), sc.qh.first(t), sc.gate.first(t), sc.ao.first(t)
			kc, vc := st.kv(st.k[i], n), st.kv(st.v[i], n)
			cmds = append(cmds, qmm(l.q, t, a, q2, false), qmm(l.k, t, a, kk, false), qmm(l.v, t, a, vv, false),
				attnPrep(sz, l, s.pos, t, q2, kk, vv, sc.cs.first(t), qh, gate, kc, vc),
				attnPrefill(sz, s.pos, t, qh, kc, vc, gate, ao),
				qmm(l.o, t, ao, h, true))
		}
		ids, wts, sg := sc.ids.first(t), sc.wts.first(t), sc.sgate.first(t)
		cmds = append(cmds, rmsNorm(t, sz.h, h, l.postNorm, a, sz.eps), routerTopK(sz, l, t, a, ids, wts, sg))
		cmds = append(cmds, moeGroup(sz, t*sz.k, e.zeroes, ids, sc.counts.first(1), sc.offsets.first(1),
			sc.cursor.first(1), sc.order.first(t))...)
		out := sc.out.first(t * sz.k)
		act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * t * sz.k * sz.inter}
		cmds = append(cmds, moeGemm(sz, l, t, a, sc.order.first(t), sc.offsets.first(1), act, out)...)
		sact, su, shared := sc.sact.first(t), sc.su.first(t), sc.shared.first(t)
		cmds = append(cmds, qmm(l.sg, t, a, sact, false), qmm(l.su, t, a, su, false), swiglu(t*sz.shared, sact, su),
			qmm(l.sd, t, sact, shared, false), moeCombine(sz, l, t, out, wts, sg, shared, h))
	}
	if !all && !head {
		return cmds
	}
	if !all {
		return append(cmds, s.logitsPlan(sc.h.row(t-1))...)
	}
	rowsAll := device.Arg{Buf: s.all, Off: 0, Len: 4 * t * sz.v}
	last := device.Arg{Buf: s.all, Off: 4 * (t - 1) * sz.v, Len: 4 * sz.v}
	return append(cmds, rmsNorm(t, sz.h, h, e.w.final, a, sz.eps), qmm(e.w.lmHead, t, a, rowsAll, false),
		&device.Copy{Src: s.all, SrcOff: last.Off, Dst: sc.logits.buf, DstOff: sc.logits.off, N: 4 * sz.v},
		logitsTopK(sz, e.topK, last, sc.top.row(0), sc.topv.row(0), sc.lse.row(0)))
}

// prefillChunk runs one chunk; off is the index of toks[0] in the caller's prompt. Only the
// prompt's last chunk (last) runs the lm_head and top-k and reads them back, unless each wants
// every position's logits.
func (s *Session) prefillChunk(toks []int32, off int, each func(int, []float32) error, last bool) error {
	e, t := s.e, len(toks)
	if each != nil && s.all == nil {
		b, err := e.dev.Alloc(4*e.chunk*e.sizes.v, device.Shared)
		if err != nil {
			return fmt.Errorf("metal: logits of a chunk: %w", err)
		}
		s.all = b
	}
	if err := s.setInputs(toks, s.pos); err != nil {
		return err
	}
	if err := s.run(s.prefillPlan(t, each != nil, last), s.pos); err != nil {
		return fmt.Errorf("metal: prefill at %d: %w", s.pos, err)
	}
	s.pos += t
	if each == nil {
		return nil
	}
	v := e.sizes.v
	raw := make([]byte, 4*t*v)
	if err := e.dev.Download(raw, s.all, 0); err != nil {
		return err
	}
	if len(s.allHost) < t*v {
		s.allHost = make([]float32, e.chunk*v)
	}
	floats(s.allHost[:t*v], raw)
	for i := 0; i < t; i++ {
		if err := each(off+i, s.allHost[i*v:(i+1)*v]); err != nil {
			return err
		}
	}
	return nil
}
