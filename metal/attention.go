package metal

import (
	"math"

	"github.com/lily-engine/lily/metal/device"
)

// The gated attention mixer on the device: its kernels' host side and its place in the plans.

// attnDims is the AttnDims struct: t new tokens at pos0, n visible keys, split keys per split.
func (s *sizes) attnDims(pos0, t, n, split int) []byte {
	return PackDims(s.hq, s.hkv, s.d, s.rot, pos0, t, n, split, s.eps, float32(1/math.Sqrt(float64(s.d))))
}

// attnPrep: norm + RoPE the t new queries and keys, append keys and values to the cache.
// q2 [t, Hq*2D], k, v [t, Hkv*D], cs [t, rot] → q, gate [t, Hq*D]; kc, vc [cap, Hkv*D].
func attnPrep(s *sizes, l *deviceLayer, pos0, t int, q2, k, v, cs, q, gate, kc, vc device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prep", Groups: grid(s.hq+s.hkv, t, 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{q2, k, v, *l.qn, *l.kn, cs, q, gate, kc, vc, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// Expected fraction of the roofline (max of bytes/bandwidth, FLOPs/peak) each attention kernel
// reaches, for the performance model (metal/perfmodel).
const (
	// attnPrepRoofline: Hq+Hkv threadgroups of one SIMD group per token, a few KB per token; at decode
	// launch latency dominates.
	attnPrepRoofline = 0.2
	// attnDecodeSplitRoofline: bandwidth-bound on the fp16 K/V stream, each kv head's rows read once;
	// 16-key blocks behind two barriers and ~256 threadgroups keep enough loads in flight from ~4K
	// keys on (below, the split's latency dominates), as MLX's sdpa_vector: about half the bandwidth.
	attnDecodeSplitRoofline = 0.5
	// attnDecodeCombineRoofline: Hq threadgroups reading ≤128 partials each: latency-bound.
	attnDecodeCombineRoofline = 0.2
	// attnPrefillRoofline: compute-bound on fp32 simdgroup_matrix products over the causal half of
	// the key blocks; K/V staged as float with four barriers per 16-key block, the softmax through
	// threadgroup memory and Q re-read per block cost about two thirds of the matrix rate (MLX's
	// steel attention, which keeps the softmax in registers, reaches about half of its peak).
	attnPrefillRoofline = 0.35
)

// Decode attention splits the n cached keys into cdiv(n, split) ranges, one threadgroup per (kv
// head, range). decodeTargetGroups is the threadgroup count the split aims for: a few per GPU core
// on the largest Apple GPUs (40 cores), so that short contexts still spread over the whole GPU and
// long ones do not pay for thousands of partials in the combine. decodeMinSplit keeps each range at
// least two of the kernel's 16-key blocks.
const (
	decodeTargetGroups = 256
	decodeMinSplit     = 32
	decodeBlock        = 16 // AD_BK in attn.metal
)

// decodeSplit is the keys per threadgroup of attn_decode_split at n cached keys: at least
// decodeMinSplit, else the multiple of decodeBlock that makes about decodeTargetGroups threadgroups.
func decodeSplit(n, hkv int) int {
	return max(decodeMinSplit, cdiv(cdiv(n*hkv, decodeTargetGroups), decodeBlock)*decodeBlock)
}

// DecodeSplit is decodeSplit, for the performance model: the keys per attn_decode_split
// threadgroup at n cached keys and hkv kv heads.
func DecodeSplit(n, hkv int) int { return decodeSplit(n, hkv) }

// decodeMaxSplits bounds cdiv(n, decodeSplit(n, hkv)) for every n <= maxCtx: the split is at least
// n·hkv/decodeTargetGroups, so there are at most cdiv(decodeTargetGroups, hkv) ranges, and at most
// cdiv(maxCtx, decodeMinSplit).
func decodeMaxSplits(maxCtx, hkv int) int {
	return max(1, min(cdiv(maxCtx, decodeMinSplit), cdiv(decodeTargetGroups, hkv)))
}

// attnDecode: attn_decode_split and attn_decode_combine, one query over n keys split along the
// sequence; the Hq/Hkv query heads of a kv head share its threadgroup (one SIMD group each).
// part [Hq, splits, D+2]; out [Hq*D] = attention · sigmoid(gate).
func attnDecode(s *sizes, n int, q, kc, vc, part, gate, out device.Arg) []device.Command {
	split := decodeSplit(n, s.hkv)
	d := s.attnDims(n-1, 1, n, split)
	return []device.Command{
		&device.Dispatch{Kernel: "attn_decode_split", Groups: grid(s.hkv, cdiv(n, split), 1), Threads: grid(32*(s.hq/s.hkv), 1, 1),
			Args: []device.Arg{q, kc, vc, part, inline(d)}},
		&device.Dispatch{Kernel: "attn_decode_combine", Groups: grid(s.hq, 1, 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{part, gate, out, inline(d)}},
	}
}

// attnPrefill: causal flash attention of t new queries at pos0 over the cache, gated; one
// threadgroup of 4 SIMD groups per (32 queries, query head). q, gate, out [t, Hq*D].
func attnPrefill(s *sizes, pos0, t int, q, kc, vc, gate, out device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prefill", Groups: grid(cdiv(t, 32), s.hq, 1), Threads: grid(128, 1, 1),
		Args: []device.Arg{q, kc, vc, gate, out, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// attentionPlan is layer i's gated attention for step p: a (the normed input) → q (with its gate), k, v →
// attn_prep (norms, RoPE, the K/V rows appended to the cache at p.pos) → attention over the cache
// (split-K in decode, causal in prefill) → o_proj added to the residual h [t, H].
func (s *Session) attentionPlan(p step, i int, a normIn, h device.Arg) []device.Command {
	sz, sc, st, l := &s.e.sizes, s.sc, s.st, &s.e.w.layers[i]
	n := p.pos + p.t
	q2, kk, vv, qh, gate, ao := sc.q2.first(p.t), sc.kk.first(p.t), sc.vv.first(p.t), sc.qh.first(p.t), sc.gate.first(p.t), sc.ao.first(p.t)
	kc, vc := st.kv(st.k[i], n), st.kv(st.v[i], n)
	cmds := []device.Command{p.linearIn(l.q, a, q2), p.linearIn(l.k, a, kk), p.linearIn(l.v, a, vv),
		attnPrep(sz, l, p.pos, p.t, q2, kk, vv, sc.cs.first(p.t), qh, gate, kc, vc)}
	if p.decode {
		cmds = append(cmds, attnDecode(sz, n, qh, kc, vc, sc.part.first(cdiv(n, decodeSplit(n, sz.hkv))), gate, ao)...)
	} else {
		cmds = append(cmds, attnPrefill(sz, p.pos, p.t, qh, kc, vc, gate, ao))
	}
	return append(cmds, p.linear(l.o, ao, h, true))
}
