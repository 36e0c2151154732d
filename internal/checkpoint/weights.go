package checkpoint

import (
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// This file is the contract between the loader and every compute package (ref, fast, metal):
// the typed weights of Qwen3.6-35B-A3B, each tensor already checked against the config.
// Nothing here is dequantized: matrices stay in their stored form, read through the mmap.

// DType is the element type of a stored tensor.
type DType = safetensors.DType

// Layout says which checkpoint convention the files follow (model.md §2.5): tensortable.Layout,
// whose String is "hf" or "mlx".
type Layout = tensortable.Layout

const (
	// LayoutHF is the raw transformers layout: model.language_model.*, fused experts.gate_up_proj,
	// conv1d [C,1,K], zero-centred norms (applied as 1+w).
	LayoutHF = tensortable.HF
	// LayoutMLX is the mlx-lm/mlx-vlm converted layout: language_model.model.*, switch_mlp.*,
	// conv1d [C,K,1], +1 baked into the norms.
	LayoutMLX = tensortable.MLX
)

// LayerKind is the token mixer of one decoder layer (tensortable.LayerKind).
type LayerKind = tensortable.LayerKind

const (
	// LinearAttention is a Gated DeltaNet layer ("linear_attention" in layer_types).
	LinearAttention = tensortable.LinearAttention
	// FullAttention is a gated GQA attention layer ("full_attention" in layer_types).
	FullAttention = tensortable.FullAttention
)

// Tensor is a view of one stored tensor inside a memory-mapped file. Data is little-endian and
// exactly numel(Shape) * size(DType) bytes long; it aliases the mapping and must not be written.
type Tensor struct {
	Name  string
	File  string // the file the tensor lives in, for error messages
	DType DType
	Shape []int
	Data  []byte
}

// Matrix is one linear weight, y = W x, in its stored form.
//
// Logical shape: W: [Out, In], or for stacked experts W: [Experts, Out, In].
// Bits == 0: dense; W.DType is BF16, F16 or F32 and W holds rows of In elements.
// Bits == 4 or 8: MLX affine quantization (model.md §3): W holds uint32 words, In*Bits/32 per row,
// element k of a word in bits [k*Bits, (k+1)*Bits); Scales and Biases are bf16 [.., rows, In/GroupSize];
// w = scale*q + bias.
//
// A Matrix may be a row window of a larger stored tensor (the HF fused experts.gate_up_proj holds
// gate rows 0..I-1 and up rows I..2I-1 of each expert): logical row r of expert e is stored row
// e*StoredRows + RowOffset + r of W (and of Scales/Biases when quantized).
type Matrix struct {
	Name      string // logical name, e.g. "layers.3.mlp.experts.gate"; used in errors
	Experts   int    // 0 for a plain matrix; E for stacked experts
	Out, In   int
	Bits      int // 0 dense, 4 or 8 quantized
	GroupSize int // quantization group along In (64 for the real checkpoint); 0 when dense

	W, Scales, Biases Tensor

	StoredRows int // rows stored per expert (or in total for a plain matrix); >= RowOffset+Out
	RowOffset  int // first stored row of this view
}

// Weights is the whole text model, every tensor present and shape-checked.
type Weights struct {
	Config *Config
	Layout Layout

	Embed     Matrix    // [Vocab, H]; embedding lookup dequantizes one row
	LMHead    Matrix    // [Vocab, H]
	FinalNorm []float32 // [H] RMSNorm multiplier, already 1+w (HF) or as stored (MLX)

	Layers []Layer
}

// Layer is one decoder layer: a token mixer (DeltaNet or Attn, per Kind) and the MoE block.
type Layer struct {
	Index     int
	Kind      LayerKind
	InputNorm []float32 // [H] multiplier (1+w applied for HF; stored value for MLX)
	PostNorm  []float32 // [H] multiplier

	DeltaNet *DeltaNet  // non-nil iff Kind == LinearAttention
	Attn     *Attention // non-nil iff Kind == FullAttention
	MoE      MoE
}

// DeltaNet holds a Gated DeltaNet layer's weights (model.md §4.3).
// Hk key heads, Hv value heads, Dk/Dv head dims, C = 2*Hk*Dk + Hv*Dv conv channels, K conv taps.
type DeltaNet struct {
	QKV    Matrix    // [C, H]; rows: q heads (Hk*Dk), k heads (Hk*Dk), v heads (Hv*Dv)
	Z      Matrix    // [Hv*Dv, H]
	B      Matrix    // [Hv, H]
	A      Matrix    // [Hv, H]
	Conv   []float32 // [C, K] row-major; Conv[c*K+K-1] multiplies the current token
	ALog   []float32 // [Hv]
	DtBias []float32 // [Hv]
	Norm   []float32 // [Dv] gated-norm weight, used as is (never +1)
	Out    Matrix    // [H, Hv*Dv]
}

// Attention holds a gated full-attention layer's weights (model.md §4.4).
type Attention struct {
	Q     Matrix    // [Hq*D*2, H]; per head h: rows h*2D..h*2D+D-1 query, next D rows gate
	K     Matrix    // [Hkv*D, H]
	V     Matrix    // [Hkv*D, H]
	O     Matrix    // [H, Hq*D]
	QNorm []float32 // [D] multiplier (1+w applied for HF)
	KNorm []float32 // [D] multiplier
}

// MoE holds the routed experts, the shared expert and their gates (model.md §4.5).
type MoE struct {
	Router     Matrix // [E, H]
	Gate       Matrix // experts [E, I, H]
	Up         Matrix // experts [E, I, H]
	Down       Matrix // experts [E, H, I]
	SharedGate Matrix // [Is, H]
	SharedUp   Matrix // [Is, H]
	SharedDown Matrix // [H, Is]
	SharedEG   Matrix // shared_expert_gate [1, H]
}
