// Package tensortable is the one list of the text model's tensors in the two checkpoint layouts
// lily reads (model.md §2): the transformers (HF) bf16 layout and the mlx-community (MLX) 4-bit
// layout. It gives each tensor's name, logical shape and kind; the loader (internal/checkpoint),
// synth's writer and the test writers (checkpointtest) all read it, so a name is written once.
// The vision tower and the MTP head are not listed: lily neither reads nor writes them.
package tensortable

import (
	"fmt"
	"strings"
)

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

// String returns "hf" or "mlx".
func (l Layout) String() string {
	switch l {
	case HF:
		return "hf"
	case MLX:
		return "mlx"
	}
	return "unknown"
}

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

// The suffixes of a Linear module's stored tensors: the weight (dense, or packed words when
// quantized) and, in MLX, the per-group scales and biases.
const (
	WeightSuffix = ".weight"
	ScalesSuffix = ".scales"
	BiasesSuffix = ".biases"
)

// Prefix is the text model's usual name prefix in l.
func Prefix(l Layout) string {
	if l == MLX {
		return "language_model.model."
	}
	return "model.language_model."
}

// TextPrefixes are the text model's name prefixes seen in the wild (model.md §2.5), in the order
// the loader tries them: HF's, MLX's, then the bare language-model ones.
func TextPrefixes() []string { return []string{Prefix(HF), Prefix(MLX), "model.", ""} }

// IsOutsideText reports whether a tensor belongs to a part of the checkpoint lily neither reads
// nor writes: the vision tower (HF and mlx-vlm names) or the multi-token-prediction head.
func IsOutsideText(name string) bool {
	for _, p := range []string{"model.visual.", "visual.", "vision_tower.", "mtp.", "model.mtp.",
		"model.language_model.mtp.", "language_model.mtp."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// LayerPrefix is decoder layer i's name prefix under the text prefix p.
func LayerPrefix(p string, i int) string { return fmt.Sprintf("%slayers.%d.", p, i) }

// LayerIndex is the decoder layer a tensor named under the text prefix p belongs to; ok is false
// for a tensor outside the layers.
func LayerIndex(p, name string) (i int, ok bool) {
	rest, ok := strings.CutPrefix(name, p+"layers.")
	if !ok {
		return 0, false
	}
	_, err := fmt.Sscanf(rest, "%d.", &i)
	return i, err == nil && i >= 0
}

// Embed is the token embedding under the text prefix p.
func Embed(d Dims, p string) Tensor {
	return Tensor{Name: p + "embed_tokens", Kind: Linear, Shape: []int{d.Vocab, d.H}}
}

// FinalNorm is the norm after the last layer under the text prefix p.
func FinalNorm(d Dims, p string) Tensor {
	return Tensor{Name: p + "norm.weight", Kind: Norm, Shape: []int{d.H}}
}

// LMHead is the lm_head module in l: at the root in HF, under language_model in MLX.
func LMHead(d Dims, l Layout) Tensor {
	name := "lm_head"
	if l == MLX {
		name = "language_model.lm_head"
	}
	return Tensor{Name: name, Kind: Linear, Shape: []int{d.Vocab, d.H}}
}

// Text lists every text-model tensor of l in model order: the embedding, each decoder layer, the
// final norm and lm_head.
func Text(d Dims, l Layout) []Tensor {
	p := Prefix(l)
	ts := []Tensor{Embed(d, p)}
	for i := range d.NumLayers() {
		ts = append(ts, Layer(d, l, p, i).List()...)
	}
	return append(ts, FinalNorm(d, p), LMHead(d, l))
}

// LayerTensors are one decoder layer's tensors: the input norm, the token mixer (Attention or
// DeltaNet, by the layer's kind), the post-attention norm and the MoE block.
type LayerTensors struct {
	InputNorm, PostNorm Tensor
	Attention           *AttentionTensors // full-attention layers
	DeltaNet            *DeltaNetTensors  // DeltaNet layers
	MoE                 MoETensors
}

// Layer is decoder layer i of l under the text prefix p.
func Layer(d Dims, l Layout, p string, i int) LayerTensors {
	p = LayerPrefix(p, i)
	t := LayerTensors{
		InputNorm: Tensor{Name: p + "input_layernorm.weight", Kind: Norm, Shape: []int{d.H}},
		PostNorm:  Tensor{Name: p + "post_attention_layernorm.weight", Kind: Norm, Shape: []int{d.H}},
		MoE:       MoE(d, l, p+"mlp."),
	}
	if d.IsFull(i) {
		a := Attention(d, p+"self_attn.")
		t.Attention = &a
	} else {
		g := DeltaNet(d, l, p+"linear_attn.")
		t.DeltaNet = &g
	}
	return t
}

// List is the layer's tensors in model order.
func (t LayerTensors) List() []Tensor {
	ts := []Tensor{t.InputNorm}
	if t.Attention != nil {
		ts = append(ts, t.Attention.List()...)
	}
	if t.DeltaNet != nil {
		ts = append(ts, t.DeltaNet.List()...)
	}
	return append(append(ts, t.PostNorm), t.MoE.List()...)
}

// AttentionTensors are a gated full-attention mixer's tensors; q_proj holds the query and the
// output gate.
type AttentionTensors struct{ Q, K, V, O, QNorm, KNorm Tensor }

// Attention is the mixer under p ("…self_attn.").
func Attention(d Dims, p string) AttentionTensors {
	H, D := d.H, d.D
	return AttentionTensors{
		Q:     Tensor{Name: p + "q_proj", Kind: Linear, Shape: []int{2 * d.Hq * D, H}},
		K:     Tensor{Name: p + "k_proj", Kind: Linear, Shape: []int{d.Hkv * D, H}},
		V:     Tensor{Name: p + "v_proj", Kind: Linear, Shape: []int{d.Hkv * D, H}},
		O:     Tensor{Name: p + "o_proj", Kind: Linear, Shape: []int{H, d.Hq * D}},
		QNorm: Tensor{Name: p + "q_norm.weight", Kind: Norm, Shape: []int{D}},
		KNorm: Tensor{Name: p + "k_norm.weight", Kind: Norm, Shape: []int{D}},
	}
}

// List is the mixer's tensors in model order.
func (a AttentionTensors) List() []Tensor { return []Tensor{a.Q, a.K, a.V, a.O, a.QNorm, a.KNorm} }

// DeltaNetTensors are a Gated DeltaNet mixer's tensors.
type DeltaNetTensors struct{ QKV, Z, B, A, Conv, ALog, DtBias, Norm, Out Tensor }

// DeltaNet is the mixer under p ("…linear_attn.") in l.
func DeltaNet(d Dims, l Layout, p string) DeltaNetTensors {
	H, C, V := d.H, d.ConvDim(), d.ValueDim()
	return DeltaNetTensors{
		QKV:    Tensor{Name: p + "in_proj_qkv", Kind: Linear, Shape: []int{C, H}},
		Z:      Tensor{Name: p + "in_proj_z", Kind: Linear, Shape: []int{V, H}},
		B:      Tensor{Name: p + "in_proj_b", Kind: Linear, Shape: []int{d.Hv, H}},
		A:      Tensor{Name: p + "in_proj_a", Kind: Linear, Shape: []int{d.Hv, H}},
		Conv:   Tensor{Name: p + "conv1d.weight", Kind: Conv, Shape: ConvShape(d, l)},
		ALog:   Tensor{Name: p + "A_log", Kind: ALog, Shape: []int{d.Hv}},
		DtBias: Tensor{Name: p + "dt_bias", Kind: DtBias, Shape: []int{d.Hv}},
		Norm:   Tensor{Name: p + "norm.weight", Kind: GatedNorm, Shape: []int{d.Dv}},
		Out:    Tensor{Name: p + "out_proj", Kind: Linear, Shape: []int{H, V}},
	}
}

// ConvShape is the conv weight's stored shape in l: HF [C, 1, K], MLX [C, K, 1]. Both put tap j
// of channel c at flat index c·K+j.
func ConvShape(d Dims, l Layout) []int {
	if l == MLX {
		return []int{d.ConvDim(), d.K, 1}
	}
	return []int{d.ConvDim(), 1, d.K}
}

// List is the mixer's tensors in model order.
func (g DeltaNetTensors) List() []Tensor {
	return []Tensor{g.QKV, g.Z, g.B, g.A, g.Conv, g.ALog, g.DtBias, g.Norm, g.Out}
}

// MoETensors are the sparse MoE block's tensors: the router, the routed experts (HF's fused
// GateUp and Down, or MLX's switch_mlp Gate, Up and Down; the other layout's fields are empty),
// the shared expert and its gate.
type MoETensors struct {
	Router               Tensor
	GateUp               Tensor // HF: [E, 2I, H], gate rows then up rows
	Gate, Up             Tensor // MLX: [E, I, H] each
	Down                 Tensor // [E, H, I]: fused in HF, a Linear in MLX
	SharedGate, SharedUp Tensor // [Is, H]
	SharedDown           Tensor // [H, Is]
	SharedEG             Tensor // shared_expert_gate [1, H]
	// PerExpert is the first expert's gate in the per-expert layout (experts.<e>.gate_proj), which
	// lily does not read: the loader names it when it finds one.
	PerExpert string
}

// MoE is the block under p ("…mlp.") in l.
func MoE(d Dims, l Layout, p string) MoETensors {
	H, E, I, Is := d.H, d.E, d.I, d.Is
	m := MoETensors{
		Router:     Tensor{Name: p + "gate", Kind: Linear, Shape: []int{E, H}, Router: true},
		SharedGate: Tensor{Name: p + "shared_expert.gate_proj", Kind: Linear, Shape: []int{Is, H}},
		SharedUp:   Tensor{Name: p + "shared_expert.up_proj", Kind: Linear, Shape: []int{Is, H}},
		SharedDown: Tensor{Name: p + "shared_expert.down_proj", Kind: Linear, Shape: []int{H, Is}},
		SharedEG:   Tensor{Name: p + "shared_expert_gate", Kind: Linear, Shape: []int{1, H}, Router: true},
		PerExpert:  p + "experts.0.gate_proj" + WeightSuffix,
	}
	if l == MLX {
		m.Gate = Tensor{Name: p + "switch_mlp.gate_proj", Kind: Linear, Shape: []int{E, I, H}}
		m.Up = Tensor{Name: p + "switch_mlp.up_proj", Kind: Linear, Shape: []int{E, I, H}}
		m.Down = Tensor{Name: p + "switch_mlp.down_proj", Kind: Linear, Shape: []int{E, H, I}}
	} else {
		m.GateUp = Tensor{Name: p + "experts.gate_up_proj", Kind: FusedExperts, Shape: []int{E, 2 * I, H}}
		m.Down = Tensor{Name: p + "experts.down_proj", Kind: FusedExperts, Shape: []int{E, H, I}}
	}
	return m
}

// List is the block's tensors in model order.
func (m MoETensors) List() []Tensor {
	ts := []Tensor{m.Router}
	for _, t := range []Tensor{m.GateUp, m.Gate, m.Up} {
		if t.Name != "" {
			ts = append(ts, t)
		}
	}
	return append(ts, m.Down, m.SharedGate, m.SharedUp, m.SharedDown, m.SharedEG)
}
