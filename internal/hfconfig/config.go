// Package hfconfig is config.json's model description, as the reader (internal/checkpoint) and the
// writers (internal/synth, checkpointtest) share it: the Config type, the keys it is stored under,
// spelled once, and File, which writes a Config as config.json.
package hfconfig

import "github.com/lily-engine/lily/internal/tensortable"

// Config is the validated text configuration of the model (model.md §1), with transformers'
// defaults applied. Field names follow config.json; derived sizes are methods.
type Config struct {
	HiddenSize            int                     // hidden_size (H)
	NumLayers             int                     // num_hidden_layers
	LayerTypes            []tensortable.LayerKind // layer_types, len NumLayers
	VocabSize             int                     // vocab_size
	NumHeads              int                     // num_attention_heads (Hq)
	NumKVHeads            int                     // num_key_value_heads (Hkv)
	HeadDim               int                     // head_dim (D)
	LinearNumKeyHeads     int                     // linear_num_key_heads (Hk)
	LinearNumValueHeads   int                     // linear_num_value_heads (Hv)
	LinearKeyHeadDim      int                     // linear_key_head_dim (Dk)
	LinearValueHeadDim    int                     // linear_value_head_dim (Dv)
	LinearConvKernel      int                     // linear_conv_kernel_dim (K)
	NumExperts            int                     // num_experts (E)
	NumExpertsPerTok      int                     // num_experts_per_tok (top-k)
	MoEIntermediate       int                     // moe_intermediate_size (I)
	SharedIntermediate    int                     // shared_expert_intermediate_size (Is)
	RMSNormEps            float64                 // rms_norm_eps
	RopeTheta             float64                 // rope_parameters.rope_theta
	PartialRotaryFactor   float64                 // partial_rotary_factor
	MaxPositionEmbeddings int                     // max_position_embeddings
	TieWordEmbeddings     bool                    // tie_word_embeddings

	// EOSTokenIDs are the stop ids: generation_config.json eos_token_id when present, else config's.
	EOSTokenIDs []int
	BOSTokenID  int // -1 when absent

	// Quant is nil for an unquantized checkpoint.
	Quant *Quantization
}

// Quantization is the config's "quantization" (or "quantization_config") block.
type Quantization struct {
	Bits      int
	GroupSize int
	Mode      string                 // "affine" (missing in older mlx-lm output means affine)
	Overrides map[string]QuantParams // module path (without ".weight") -> its own bits/group size
}

// QuantParams are the bits and group size of one module.
type QuantParams struct {
	Bits      int
	GroupSize int
}

// Dims is the config's sizes. Its LayerTypes aliases c.LayerTypes.
func (c *Config) Dims() tensortable.Dims {
	return tensortable.Dims{H: c.HiddenSize, Vocab: c.VocabSize, LayerTypes: c.LayerTypes,
		Hq: c.NumHeads, Hkv: c.NumKVHeads, D: c.HeadDim, Rot: c.RotaryDim(),
		Hk: c.LinearNumKeyHeads, Hv: c.LinearNumValueHeads, Dk: c.LinearKeyHeadDim, Dv: c.LinearValueHeadDim,
		K: c.LinearConvKernel, E: c.NumExperts, TopK: c.NumExpertsPerTok, I: c.MoEIntermediate, Is: c.SharedIntermediate}
}

// RotaryDim is the number of leading head dims RoPE rotates: HeadDim * PartialRotaryFactor.
func (c *Config) RotaryDim() int { return int(float64(c.HeadDim) * c.PartialRotaryFactor) }

// ConvDim is the DeltaNet conv channel count (Dims.ConvDim).
func (c *Config) ConvDim() int { return c.Dims().ConvDim() }

// KeyDim is the DeltaNet query/key width (Dims.KeyDim).
func (c *Config) KeyDim() int { return c.Dims().KeyDim() }

// ValueDim is the DeltaNet value width (Dims.ValueDim).
func (c *Config) ValueDim() int { return c.Dims().ValueDim() }

// NumLayersOf counts the layers of one kind (Dims.Count).
func (c *Config) NumLayersOf(k tensortable.LayerKind) int { return c.Dims().Count(k) }

// Params returns the bits and group size of the module at path (its stored name without
// ".weight"): the per-module override when the config has one, else the global setting.
func (q *Quantization) Params(path string) QuantParams {
	if p, ok := q.Overrides[path]; ok {
		return p
	}
	return QuantParams{Bits: q.Bits, GroupSize: q.GroupSize}
}
