package perfmodel

import (
	"errors"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
)

// The kernel sequences the performance model prices. Decode (one token): per layer the mixer's
// projections as qmv_norm (the input RMSNorm fused), deltanet_scan or attn_prep + attn_decode_split
// + attn_decode_combine, qmv_add for the output projection, router_qmv_norm (the post-attention
// norm fused), router_softmax_topk, moe_gate_up_norm, moe_down (the mat-vecs specialised per bit
// width: qmv_norm_4, qmv_norm_8, ...); then the lm_head qmv_norm (the final norm fused) and
// logits_topk_part + logits_topk_merge. Prefill (one chunk of T tokens from an empty state): rms_norm
// before each block and the same with qmm_t32 projections (the router's too), deltanet_scan over T, attn_prefill, and the grouped MoE
// path (moe_count, moe_scan, moe_scatter, moe_tiles, moe_gemm_t32_gate_up, moe_gemm_t32_down, the shared
// expert through qmm_t32 + swiglu + qmm_t32, moe_combine); logits only for the last token.

// DecodeCosts is the per-token cost of a decode step at position ctx (ctx keys already cached).
func DecodeCosts(cfg *checkpoint.Config, ctx int) ([]Cost, error) {
	if ctx < 0 {
		return nil, errors.New("perfmodel: negative context")
	}
	return costs(cfg, 1, ctx, true, true)
}

// PrefillCosts is the per-prompt-token cost of prefilling T tokens as one chunk from an empty state.
func PrefillCosts(cfg *checkpoint.Config, T int) ([]Cost, error) {
	if T < 1 {
		return nil, errors.New("perfmodel: prefill of no tokens")
	}
	return costs(cfg, T, 0, false, true)
}

// plan accumulates the costs of one step of T tokens after ctx cached positions.
type plan struct {
	d      model
	T, ctx float64
	decode bool
	out    []Cost
}

// costs is the per-token cost of a step of T tokens after ctx cached positions; head adds the
// final norm, lm_head and top-k of its last position.
func costs(cfg *checkpoint.Config, T, ctx int, decode, head bool) ([]Cost, error) {
	d, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	H, V := fl(d.H), fl(d.Vocab)
	p := &plan{d: d, T: float64(T), ctx: float64(ctx), decode: decode}
	p.out = append(p.out, Cost{Step: "embedding rows", Kernel: "embed", Calls: 1,
		Weights: p.T * d.mat(1, H, d.bits), Act: 4 * p.T * (H + 1)})
	for _, c := range p.deltanet() {
		p.out = append(p.out, times(c, d.Count(checkpoint.LinearAttention)))
	}
	for _, c := range p.attention() {
		p.out = append(p.out, times(c, d.Count(checkpoint.FullAttention)))
	}
	for _, c := range p.moe() {
		p.out = append(p.out, times(c, d.NumLayers()))
	}
	// Logits are needed for the last position only.
	if head {
		last := plan{d: d, T: 1, decode: true}
		p.out = append(p.out, last.normed(last.linear("lm_head + final norm", V, H, d.bits, false), true),
			Cost{Step: "log-sum-exp + top-k per vocabulary chunk", Kernel: "logits_topk_part", Calls: 1,
				Act: 4 * V, FLOPs: 4 * V},
			Cost{Step: "merge of the chunks' top-k", Kernel: "logits_topk_merge", Calls: 1,
				Act: 4 * 2 * logitParts(V) * (headTopK + 1), FLOPs: 4 * logitParts(V)})
	}
	for i := range p.out {
		p.out[i] = perToken(p.out[i], p.T)
	}
	return p.out, nil
}

// norms is the rms_norm before a block in prefill; none in decode, where its consumers fuse it
// (normed).
func (p *plan) norms(step string) []Cost {
	if p.decode {
		return nil
	}
	H := fl(p.d.H)
	return []Cost{modelVec(Cost{Step: step, Kernel: "rms_norm", Calls: 1, Act: 8 * p.T * H, FLOPs: 4 * p.T * H}, H)}
}

// normed is a decode mat-vec c with its input's RMSNorm fused (metal/norm_fused.go): the _norm
// kernel, which also reads the norm weight as float32; first marks the norm's first consumer, which
// counts the weight's stored bytes once (the others find it in the cache). The norm's 3 FLOPs per
// input element are left out (under a thousandth of the mat-vec's). In prefill c is unchanged.
func (p *plan) normed(c Cost, first bool) Cost {
	if !p.decode {
		return c
	}
	for _, k := range []string{"qmv_", "router_qmv_", "moe_gate_up_"} {
		if len(c.Kernel) == len(k)+1 && c.Kernel[:len(k)] == k {
			c.Kernel = k + "norm_" + c.Kernel[len(k):]
		}
	}
	c.Act += 4 * fl(p.d.H)
	if first {
		c = modelVec(c, fl(p.d.H))
	}
	return c
}

// linear is a projection of the step's T rows, weights read once; add fuses the residual add.
func (p *plan) linear(step string, out, in, bits float64, add bool) Cost {
	k := "qmm_t32"
	if p.decode {
		k = byBits(bits, "qmv_4", "qmv_8")
		if add {
			k = byBits(bits, "qmv_add_4", "qmv_add_8")
		}
	}
	c := Cost{Step: step, Kernel: k, Calls: 1, Weights: p.d.mat(out, in, bits), Act: 4 * p.T * (in + out),
		FLOPs: 2 * p.T * out * in}
	if add {
		c.Act += 4 * p.T * out
	}
	return c
}

func (p *plan) deltanet() []Cost {
	d, T := p.d, p.T
	H, C, Vd, Hv, Dk, Dv, K := fl(d.H), fl(d.ConvDim()), fl(d.ValueDim()), fl(d.Hv), fl(d.Dk), fl(d.Dv), fl(d.K)
	// The causal conv + SiLU streams the chunk's qkv in and out and the conv state once (2K FLOPs
	// per channel and token).
	conv := modelVec(Cost{Step: "DeltaNet causal conv + SiLU", Kernel: "deltanet_conv", Calls: 1,
		State: 2 * 4 * (K - 1) * C, Act: 2 * 4 * T * C, FLOPs: T * 2 * C * K}, C*K)
	// Each SIMD group holds value columns of S in registers: it decays them, forms Sᵀk (2), updates
	// (3) and contracts with q (2): 7 FLOPs per state element per token.
	scan := modelVec(Cost{Step: "DeltaNet delta rule + gated norm", Kernel: "deltanet_scan", Calls: 1,
		State: 2 * 4 * Hv * Dk * Dv, Act: 4 * T * (C + 2*Vd + 2*Hv),
		FLOPs: T * (7*Hv*Dk*Dv + 8*Vd)}, 2*Hv+Dv)
	return append(p.norms("input norm (DeltaNet layers)"),
		p.normed(p.linear("DeltaNet in_proj_qkv", C, H, d.bits, false), true),
		p.normed(p.linear("DeltaNet in_proj_z", Vd, H, d.bits, false), false),
		p.normed(p.linear("DeltaNet in_proj_b", Hv, H, d.bits, false), false),
		p.normed(p.linear("DeltaNet in_proj_a", Hv, H, d.bits, false), false),
		conv, scan,
		p.linear("DeltaNet out_proj + residual", H, Vd, d.bits, true))
}

// decodeRanges is how many key ranges the engine's attn_decode_split splits n cached keys into
// (metal.DecodeSplit): its threadgroups per kv head.
func decodeRanges(n, hkv int) float64 {
	split := metal.DecodeSplit(n, hkv)
	return float64((n + split - 1) / split)
}

// kvBytes is the size of one cached key or value element: the KV cache is fp16.
const kvBytes = 2

func (p *plan) attention() []Cost {
	d, T := p.d, p.T
	H, Hq, Hkv, D, Rot := fl(d.H), fl(d.Hq), fl(d.Hkv), fl(d.D), fl(d.Rot)
	qd, kvd := Hq*D, Hkv*D
	prep := modelVec(Cost{Step: "q/k norm, RoPE, KV append", Kernel: "attn_prep", Calls: 1,
		Act: 4 * T * (2*qd + 2*kvd + Rot + 2*qd), KV: kvBytes * T * 2 * kvd, FLOPs: 6 * T * (Hq + Hkv) * D}, 2*D)
	cs := append(p.norms("input norm (attention layers)"),
		p.normed(p.linear("attention q_proj (query + gate)", 2*qd, H, d.bits, false), true),
		p.normed(p.linear("attention k_proj", kvd, H, d.bits, false), false),
		p.normed(p.linear("attention v_proj", kvd, H, d.bits, false), false),
		prep)
	if p.decode {
		n := p.ctx + 1
		splits := decodeRanges(int(n), d.Hkv)
		part := 4 * Hq * splits * (D + 2)
		cs = append(cs,
			Cost{Step: "attention over the cache (splits)", Kernel: "attn_decode_split", Calls: 1,
				KV: kvBytes * 2 * kvd * n, Act: 4*qd + part, FLOPs: 4 * qd * n},
			Cost{Step: "merge splits, output gate", Kernel: "attn_decode_combine", Calls: 1,
				Act: part + 8*qd, FLOPs: 3*qd*splits + 5*qd})
	} else {
		pairs := T*p.ctx + T*(T+1)/2 // (query, visible key) pairs of the causal chunk
		cs = append(cs, Cost{Step: "causal attention, output gate", Kernel: "attn_prefill", Calls: 1,
			KV: kvBytes * 2 * kvd * (p.ctx + T), Act: 4 * T * 3 * qd, FLOPs: 4*Hq*D*pairs + 5*T*qd})
	}
	return append(cs, p.linear("attention o_proj + residual", H, qd, d.bits, true))
}

func (p *plan) moe() []Cost {
	d, T := p.d, p.T
	H, E, TopK, I, Is := fl(d.H), fl(d.E), fl(d.TopK), fl(d.I), fl(d.Is)
	// The router's logits and the shared expert's gate logit: one qmv_fast mat-vec over E+1 rows in
	// decode, two GEMMs in prefill; then the softmax top-k over the logits.
	cs := p.norms("post-attention norm")
	if p.decode {
		cs = append(cs, p.normed(Cost{Step: "router + shared gate logits", Kernel: byBits(d.routerBits, "router_qmv_4", "router_qmv_8"),
			Calls: 1, Weights: d.mat(E, H, d.routerBits) + d.mat(1, H, d.routerBits), Act: 4 * (H + E + 1),
			FLOPs: 2 * (E + 1) * H}, true))
	} else {
		cs = append(cs, p.linear("router logits", E, H, d.routerBits, false), p.linear("shared expert gate logit", 1, H, d.routerBits, false))
	}
	cs = append(cs, Cost{Step: "router softmax, top-k, renormalise", Kernel: "router_softmax_topk", Calls: 1,
		Act: 4 * T * (E + 2*TopK), FLOPs: T * 5 * E})
	if p.decode {
		gu, dn := byBits(d.bits, "moe_gate_up_4", "moe_gate_up_8"), byBits(d.bits, "moe_down_4", "moe_down_8")
		return append(cs,
			p.normed(Cost{Step: "routed + shared gate/up, SwiGLU", Kernel: gu, Calls: 1,
				Weights: 2*TopK*d.mat(I, H, d.bits) + 2*d.mat(Is, H, d.bits),
				Act:     4 * (H + TopK + TopK*I + Is), FLOPs: 4*H*(TopK*I+Is) + 5*(TopK*I+Is)}, false),
			Cost{Step: "routed + shared down, weighted sum, residual", Kernel: dn, Calls: 1,
				Weights: TopK*d.mat(H, I, d.bits) + d.mat(H, Is, d.bits),
				Act:     4*(TopK*I+Is+2*TopK+1) + 8*H, FLOPs: 2 * H * (TopK*I + Is)})
	}
	slots := T * TopK
	// Experts holding at least one of the chunk's slots, if routing were uniform: each is read once.
	touched := E * (1 - math.Pow(1-TopK/E, T))
	return append(cs,
		Cost{Step: "count slots per expert", Kernel: "moe_count", Calls: 1, Act: 4*slots + 8*E},
		Cost{Step: "expert offsets (prefix sum)", Kernel: "moe_scan", Calls: 1, Act: 4 * 4 * E},
		Cost{Step: "slots grouped by expert", Kernel: "moe_scatter", Calls: 1, Act: 4*3*slots + 8*E},
		Cost{Step: "work list of (expert, 32-slot tile)", Kernel: "moe_tiles", Calls: 1, Act: 4 * 2 * E},
		Cost{Step: "grouped gate/up GEMM, SwiGLU", Kernel: "moe_gemm_t32_gate_up", Calls: 1,
			Weights: 2 * touched * d.mat(I, H, d.bits), Act: 4 * slots * (H + I + 1),
			FLOPs: 4*slots*I*H + 5*slots*I},
		Cost{Step: "grouped down GEMM", Kernel: "moe_gemm_t32_down", Calls: 1,
			Weights: touched * d.mat(H, I, d.bits), Act: 4 * slots * (I + H + 1), FLOPs: 2 * slots * H * I},
		p.linear("shared expert gate_proj", Is, H, d.bits, false),
		p.linear("shared expert up_proj", Is, H, d.bits, false),
		Cost{Step: "shared expert SwiGLU", Kernel: "swiglu", Calls: 1, Act: 12 * T * Is, FLOPs: 5 * T * Is},
		p.linear("shared expert down_proj", H, Is, d.bits, false),
		Cost{Step: "weighted sum, shared gate, residual", Kernel: "moe_combine", Calls: 1,
			Act: 4*T*(TopK*H+H+TopK+1) + 8*T*H, FLOPs: T * H * (2*TopK + 6)})
}

// byBits is the kernel specialised for a bit width (4 or 8), as metal's plans name it.
func byBits(bits float64, k4, k8 string) string {
	if bits == 8 {
		return k8
	}
	return k4
}

// headTopK is how many ids the engine's head returns per step.
const headTopK = metal.HeadTopK

// logitParts is the engine's number of logits_topk_part threadgroups over a vocabulary of V: 4,096
// logits each (metal/linear.go's logitParts at 256 threads).
func logitParts(V float64) float64 { return math.Ceil(V / 4096) }
