package metal

import (
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// decodePlan is one token's command buffer at position s.pos (inputs already uploaded): embed →
// per layer [the mixer (deltanetPlan or attentionPlan), moePlan], each norming the residual inside
// its first mat-vecs (norm_fused.go) → the head (logitsPlan). Expert ids stay on the GPU.
func (s *Session) decodePlan() []device.Command {
	return append(s.layersPlan(step{t: 1, pos: s.pos, decode: true}), s.logitsPlan(s.sc.h.row(0))...)
}

// layersPlan is the embedding and every decoder layer for step p, leaving the residual in h [t, H].
func (s *Session) layersPlan(p step) []device.Command {
	e, sz, sc := s.e, &s.e.sizes, s.sc
	h, a := sc.h.first(p.t), sc.a.first(p.t)
	cmds := []device.Command{embedRows(e.w.embed, p.t, sc.tokIDs.first(p.t), h)}
	// Decode fuses the norms into their consumers; an observer still gets the norm rows, from an
	// rms_norm into a that no fused consumer reads (norm_fused.go).
	fused := p.decode
	norms := !fused || s.obs != nil
	for i := range e.w.layers {
		l := &e.w.layers[i]
		in := normIn{h: h, a: a, w: l.inNorm, eps: sz.eps, fused: fused}
		if norms {
			cmds = append(cmds, rmsNorm(p.t, sz.h, h, l.inNorm, a, sz.eps))
		}
		if l.kind == checkpoint.LinearAttention {
			cmds = append(cmds, s.deltanetPlan(p, i, in, h)...)
		} else {
			cmds = append(cmds, s.attentionPlan(p, i, in, h)...)
		}
		in.w = l.postNorm
		if norms {
			cmds = append(cmds, rmsNorm(p.t, sz.h, h, l.postNorm, a, sz.eps))
		}
		cmds = append(cmds, s.moePlan(p, i, in, h)...)
	}
	return cmds
}

// logitsPlan is the last position's head: final norm of h [H] fused into the lm_head mat-vec →
// logits [V] → top-k. An observer gets the norm row from an rms_norm the head does not read.
func (s *Session) logitsPlan(h device.Arg) []device.Command {
	e, sz, sc := s.e, &s.e.sizes, s.sc
	var head []device.Command
	if s.obs != nil {
		head = append(head, rmsNorm(1, sz.h, h, e.w.final, sc.a.row(0), sz.eps))
	}
	head = append(head, qmvNorm(e.w.lmHead, h, e.w.final, sc.logits.row(0), sz.eps))
	return append(head, logitsTopK(sz, sc, e.topK, sc.logits.row(0), sc.top.row(0), sc.topv.row(0), sc.lse.row(0))...)
}

// prefillPlan is one chunk of t tokens at position s.pos (inputs already uploaded): the decode
// plan's layers as GEMMs over the chunk (layersPlan). With all set, the head runs on every row into
// the all-logits buffer; else, with head set (the prompt's last chunk), on the last row only; else
// not at all.
func (s *Session) prefillPlan(t int, all, head bool) []device.Command {
	e, sz, sc := s.e, &s.e.sizes, s.sc
	h, a := sc.h.first(t), sc.a.first(t)
	cmds := s.layersPlan(step{t: t, pos: s.pos})
	if !all && !head {
		return cmds
	}
	if !all {
		return append(cmds, s.logitsPlan(sc.h.row(t-1))...)
	}
	rowsAll := device.Arg{Buf: s.all, Off: 0, Len: 4 * t * sz.v}
	last := device.Arg{Buf: s.all, Off: 4 * (t - 1) * sz.v, Len: 4 * sz.v}
	cmds = append(cmds, rmsNorm(t, sz.h, h, e.w.final, a, sz.eps), qmm(e.w.lmHead, t, a, rowsAll, false),
		&device.Copy{Src: s.all, SrcOff: last.Off, Dst: sc.logits.buf, DstOff: sc.logits.off, N: 4 * sz.v})
	return append(cmds, logitsTopK(sz, sc, e.topK, last, sc.top.row(0), sc.topv.row(0), sc.lse.row(0))...)
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
