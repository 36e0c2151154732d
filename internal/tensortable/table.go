// Package tensortable is the one list of the text model's tensors in the two checkpoint layouts
// lily reads (model.md §2): the transformers (HF) bf16 layout and the mlx-community (MLX) 4-bit
// layout. It gives each tensor's name, logical shape and kind; the loader (internal/checkpoint),
// synth's writer and the test writers (checkpointtest) all read it, so a name is written once.
// The vision tower and the MTP head are not listed: lily neither reads nor writes them.
package tensortable

import "fmt"

// Layout is a checkpoint convention.
type Layout int

const (
	// HF is the raw transformers layout: model.language_model.*, fused experts.gate_up_proj and
	// experts.down_proj, bf16, zero-centred layer norms.
	HF Layout = iota + 1
	// MLX is the mlx-lm/mlx-vlm layout: language_model.model.*, switch_mlp.* experts, affine
	// quantization (.weight/.scales/.biases), the layer norms' +1 baked in.
	MLX
)

// Kind says how a tensor is stored.
type Kind int

const (
	// Linear is a linear module: HF stores Name+".weight" (bf16); MLX stores Name+".weight",
	// ".scales" and ".biases".
	Linear Kind = iota + 1
	// FusedExperts is HF's stacked experts.gate_up_proj (gate rows, then up rows) or
	// experts.down_proj: the bare Name, bf16.
	FusedExperts
	// Norm is an RMSNorm weight: zero-centred in HF (applied as 1+w), the 1 baked in in MLX.
	Norm
	// GatedNorm is the DeltaNet mixer's gated norm: a plain weight in both layouts.
	GatedNorm
	// Conv is the DeltaNet depthwise conv1d weight: HF [C, 1, K], MLX [C, K, 1].
	Conv
	// ALog and DtBias are the DeltaNet decay parameters, [Hv] each.
	ALog
	DtBias
)

// Tensor is one tensor, or for Linear one module, of the text model.
type Tensor struct {
	Name string
	Kind Kind
	// Shape is the logical [out, in] ([E, out, in] for stacked experts) of Linear and FusedExperts,
	// and the stored shape of the rest.
	Shape []int
	// Router marks the modules MLX quantizes at the router bits (mlp.gate, mlp.shared_expert_gate).
	Router bool
}

// Dims are the sizes the table needs (names as in model.md §1.2).
type Dims struct {
	H, Vocab, Layers, Interval int
	Hq, Hkv, D                 int // full attention: query and KV heads, head dim
	Hk, Hv, Dk, Dv, K          int // DeltaNet: key and value heads and dims, conv kernel
	E, I, Is                   int // experts, expert and shared-expert intermediate sizes
}

// IsFull reports whether layer i is full attention (every Interval-th layer).
func (d Dims) IsFull(i int) bool { return (i+1)%d.Interval == 0 }

// ConvDim is the DeltaNet conv's channel count: 2·Hk·Dk + Hv·Dv.
func (d Dims) ConvDim() int { return 2*d.Hk*d.Dk + d.Hv*d.Dv }

// Prefix is the text model's usual name prefix in l (the loader accepts others too, model.md §2.5).
func Prefix(l Layout) string {
	if l == MLX {
		return "language_model.model."
	}
	return "model.language_model."
}

// LMHead is the lm_head module's name in l.
func LMHead(l Layout) string {
	if l == MLX {
		return "language_model.lm_head"
	}
	return "lm_head"
}

// Text lists every text-model tensor of l in model order: the embedding, each decoder layer, the
// final norm and lm_head.
func Text(d Dims, l Layout) []Tensor {
	p := Prefix(l)
	ts := []Tensor{{Name: p + "embed_tokens", Kind: Linear, Shape: []int{d.Vocab, d.H}}}
	for i := range d.Layers {
		ts = append(ts, Layer(d, l, i, fmt.Sprintf("%slayers.%d.", p, i))...)
	}
	return append(ts, Tensor{Name: p + "norm.weight", Kind: Norm, Shape: []int{d.H}},
		Tensor{Name: LMHead(l), Kind: Linear, Shape: []int{d.Vocab, d.H}})
}

// Layer lists decoder layer i's tensors, named under p (".../layers.<i>."): the input norm, the
// token mixer (gated attention or DeltaNet), the post-attention norm and the MoE block.
func Layer(d Dims, l Layout, i int, p string) []Tensor {
	H := d.H
	ts := []Tensor{{Name: p + "input_layernorm.weight", Kind: Norm, Shape: []int{H}}}
	if d.IsFull(i) {
		ts = append(ts, Attention(d, p+"self_attn.")...)
	} else {
		ts = append(ts, DeltaNet(d, l, p+"linear_attn.")...)
	}
	ts = append(ts, Tensor{Name: p + "post_attention_layernorm.weight", Kind: Norm, Shape: []int{H}})
	return append(ts, MoE(d, l, p+"mlp.")...)
}

// Attention lists a gated full-attention mixer under p ("…self_attn."); q_proj holds the query
// and the output gate.
func Attention(d Dims, p string) []Tensor {
	H, D := d.H, d.D
	return []Tensor{
		{Name: p + "q_proj", Kind: Linear, Shape: []int{2 * d.Hq * D, H}},
		{Name: p + "k_proj", Kind: Linear, Shape: []int{d.Hkv * D, H}},
		{Name: p + "v_proj", Kind: Linear, Shape: []int{d.Hkv * D, H}},
		{Name: p + "o_proj", Kind: Linear, Shape: []int{H, d.Hq * D}},
		{Name: p + "q_norm.weight", Kind: Norm, Shape: []int{D}},
		{Name: p + "k_norm.weight", Kind: Norm, Shape: []int{D}},
	}
}

// DeltaNet lists a Gated DeltaNet mixer under p ("…linear_attn.").
func DeltaNet(d Dims, l Layout, p string) []Tensor {
	H, C, V := d.H, d.ConvDim(), d.Hv*d.Dv
	conv := []int{C, 1, d.K}
	if l == MLX {
		conv = []int{C, d.K, 1}
	}
	return []Tensor{
		{Name: p + "in_proj_qkv", Kind: Linear, Shape: []int{C, H}},
		{Name: p + "in_proj_z", Kind: Linear, Shape: []int{V, H}},
		{Name: p + "in_proj_b", Kind: Linear, Shape: []int{d.Hv, H}},
		{Name: p + "in_proj_a", Kind: Linear, Shape: []int{d.Hv, H}},
		{Name: p + "conv1d.weight", Kind: Conv, Shape: conv},
		{Name: p + "A_log", Kind: ALog, Shape: []int{d.Hv}},
		{Name: p + "dt_bias", Kind: DtBias, Shape: []int{d.Hv}},
		{Name: p + "norm.weight", Kind: GatedNorm, Shape: []int{d.Dv}},
		{Name: p + "out_proj", Kind: Linear, Shape: []int{H, V}},
	}
}

// MoE lists the sparse MoE block under p ("…mlp."): the router, the routed experts (HF fused,
// MLX switch_mlp), the shared expert and its gate.
func MoE(d Dims, l Layout, p string) []Tensor {
	H, E, I, Is := d.H, d.E, d.I, d.Is
	ts := []Tensor{{Name: p + "gate", Kind: Linear, Shape: []int{E, H}, Router: true}}
	if l == MLX {
		ts = append(ts,
			Tensor{Name: p + "switch_mlp.gate_proj", Kind: Linear, Shape: []int{E, I, H}},
			Tensor{Name: p + "switch_mlp.up_proj", Kind: Linear, Shape: []int{E, I, H}},
			Tensor{Name: p + "switch_mlp.down_proj", Kind: Linear, Shape: []int{E, H, I}})
	} else {
		ts = append(ts,
			Tensor{Name: p + "experts.gate_up_proj", Kind: FusedExperts, Shape: []int{E, 2 * I, H}},
			Tensor{Name: p + "experts.down_proj", Kind: FusedExperts, Shape: []int{E, H, I}})
	}
	return append(ts,
		Tensor{Name: p + "shared_expert.gate_proj", Kind: Linear, Shape: []int{Is, H}},
		Tensor{Name: p + "shared_expert.up_proj", Kind: Linear, Shape: []int{Is, H}},
		Tensor{Name: p + "shared_expert.down_proj", Kind: Linear, Shape: []int{H, Is}},
		Tensor{Name: p + "shared_expert_gate", Kind: Linear, Shape: []int{1, H}, Router: true})
}
