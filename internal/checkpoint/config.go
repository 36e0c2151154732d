package checkpoint

// Config is the validated text configuration of the model (model.md §1), with transformers'
// defaults applied. Field names follow config.json; derived sizes are methods.
type Config struct {
	HiddenSize            int         // hidden_size (H)
	NumLayers             int         // num_hidden_layers
	LayerTypes            []LayerKind // layer_types, len NumLayers
	VocabSize             int         // vocab_size
	NumHeads              int         // num_attention_heads (Hq)
	NumKVHeads            int         // num_key_value_heads (Hkv)
	HeadDim               int         // head_dim (D)
	LinearNumKeyHeads     int         // linear_num_key_heads (Hk)
	LinearNumValueHeads   int         // linear_num_value_heads (Hv)
	LinearKeyHeadDim      int         // linear_key_head_dim (Dk)
	LinearValueHeadDim    int         // linear_value_head_dim (Dv)
	LinearConvKernel      int         // linear_conv_kernel_dim (K)
	NumExperts            int         // num_experts (E)
	NumExpertsPerTok      int         // num_experts_per_tok (top-k)
	MoEIntermediate       int         // moe_intermediate_size (I)
	SharedIntermediate    int         // shared_expert_intermediate_size (Is)
	RMSNormEps            float64     // rms_norm_eps
	RopeTheta             float64     // rope_parameters.rope_theta
	PartialRotaryFactor   float64     // partial_rotary_factor
	MaxPositionEmbeddings int         // max_position_embeddings
	TieWordEmbeddings     bool        // tie_word_embeddings

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

// RotaryDim is the number of leading head dims RoPE rotates: HeadDim * PartialRotaryFactor.
func (c *Config) RotaryDim() int { return int(float64(c.HeadDim) * c.PartialRotaryFactor) }

// ConvDim is the DeltaNet conv channel count: 2*Hk*Dk + Hv*Dv.
func (c *Config) ConvDim() int {
	return 2*c.LinearNumKeyHeads*c.LinearKeyHeadDim + c.LinearNumValueHeads*c.LinearValueHeadDim
}

// KeyDim is the DeltaNet query/key width: Hk*Dk.
func (c *Config) KeyDim() int { return c.LinearNumKeyHeads * c.LinearKeyHeadDim }

// ValueDim is the DeltaNet value width: Hv*Dv.
func (c *Config) ValueDim() int { return c.LinearNumValueHeads * c.LinearValueHeadDim }

// NumLayersOf counts the layers of one kind.
func (c *Config) NumLayersOf(k LayerKind) int {
	n := 0
	for _, t := range c.LayerTypes {
		if t == k {
			n++
		}
	}
	return n
}
