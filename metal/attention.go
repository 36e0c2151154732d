package metal

import (
	"math"

	"github.com/lily-engine/lily/metal/device"
)

// The gated attention mixer on the device: its kernels' host side and its place in the plans.

// attnDims is the AttnDims struct: t new tokens at pos0, n visible keys, split keys per split.
func (s *sizes) attnDims(pos0, t, n, split int) []byte {
	return dims(s.hq, s.hkv, s.d, s.rot, pos0, t, n, split, s.eps, float32(1/math.Sqrt(float64(s.d))))
}

// attnPrep: norm + RoPE the t new queries and keys, append keys and values to the cache.
// q2 [t, Hq*2D], k, v [t, Hkv*D], cs [t, rot] → q, gate [t, Hq*D]; kc, vc [cap, Hkv*D].
func attnPrep(s *sizes, l *deviceLayer, pos0, t int, q2, k, v, cs, q, gate, kc, vc device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prep", Groups: grid(s.hq+s.hkv, t, 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{q2, k, v, *l.qn, *l.kn, cs, q, gate, kc, vc, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// attnDecodeSplit and attnDecodeCombine: one query over n keys, split along the sequence.
// part [Hq, splits, D+2]; out [Hq*D] = attention · sigmoid(gate).
func attnDecode(s *sizes, n, split int, q, kc, vc, part, gate, out device.Arg) []device.Command {
	d := s.attnDims(n-1, 1, n, split)
	return []device.Command{
		&device.Dispatch{Kernel: "attn_decode_split", Groups: grid(s.hq, cdiv(n, split), 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{q, kc, vc, part, inline(d)}},
		&device.Dispatch{Kernel: "attn_decode_combine", Groups: grid(s.hq, 1, 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{part, gate, out, inline(d)}},
	}
}

// attnPrefill: causal attention of t new queries at pos0 over the cache, gated. q, gate, out [t, Hq*D].
func attnPrefill(s *sizes, pos0, t int, q, kc, vc, gate, out device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prefill", Groups: grid(s.hq, t, 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{q, kc, vc, gate, out, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// attentionPlan is layer i's gated attention for step p: a [t, H] → q (with its gate), k, v →
// attn_prep (norms, RoPE, the K/V rows appended to the cache at p.pos) → attention over the cache
// (split-K in decode, causal in prefill) → o_proj added to the residual h [t, H].
func (s *Session) attentionPlan(p step, i int, a, h device.Arg) []device.Command {
	sz, sc, st, l := &s.e.sizes, s.sc, s.st, &s.e.w.layers[i]
	n := p.pos + p.t
	q2, kk, vv, qh, gate, ao := sc.q2.first(p.t), sc.kk.first(p.t), sc.vv.first(p.t), sc.qh.first(p.t), sc.gate.first(p.t), sc.ao.first(p.t)
	kc, vc := st.kv(st.k[i], n), st.kv(st.v[i], n)
	cmds := []device.Command{p.linear(l.q, a, q2, false), p.linear(l.k, a, kk, false), p.linear(l.v, a, vv, false),
		attnPrep(sz, l, p.pos, p.t, q2, kk, vv, sc.cs.first(p.t), qh, gate, kc, vc)}
	if p.decode {
		cmds = append(cmds, attnDecode(sz, n, decodeSplit, qh, kc, vc, sc.part.first(cdiv(n, decodeSplit)), gate, ao)...)
	} else {
		cmds = append(cmds, attnPrefill(sz, p.pos, p.t, qh, kc, vc, gate, ao))
	}
	return append(cmds, p.linear(l.o, ao, h, true))
}
