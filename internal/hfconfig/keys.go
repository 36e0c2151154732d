package hfconfig

// config.json's keys that the reader (checkpoint.ParseConfig) reads and the writers (File) write,
// spelled once here.
const (
	KeyTextConfig         = "text_config"
	KeyModelType          = "model_type"
	KeyLayerTypes         = "layer_types"
	KeyFullAttnInterval   = "full_attention_interval"
	KeyRMSNormEps         = "rms_norm_eps"
	KeyHiddenAct          = "hidden_act"
	KeyAttentionBias      = "attention_bias"
	KeyTieWordEmbeddings  = "tie_word_embeddings"
	KeyRopeParameters     = "rope_parameters"
	KeyRopeScaling        = "rope_scaling" // legacy name of rope_parameters
	KeyRopeType           = "rope_type"
	KeyRopeTheta          = "rope_theta"
	KeyPartialRotary      = "partial_rotary_factor"
	KeyBOSTokenID         = "bos_token_id"
	KeyEOSTokenID         = "eos_token_id"
	KeyQuantization       = "quantization"
	KeyQuantizationConfig = "quantization_config" // the same block, as transformers names it
	KeyBits               = "bits"
	KeyGroupSize          = "group_size"
	KeyMode               = "mode"
	KeyQuantMethod        = "quant_method"
)

// Values of model_type, hidden_act and rope_type that the model code implements.
const (
	ModelType     = "qwen3_5_moe"
	TextModelType = "qwen3_5_moe_text"
	Architecture  = "Qwen3_5MoeForConditionalGeneration"
	HiddenAct     = "silu"
	RopeDefault   = "default"
	ModeAffine    = "affine"
)

// IntKey is one integer size of the text config: its key, its Config field and transformers'
// Qwen3_5MoeTextConfig default (configuration_qwen3_5_moe.py) for a config.json that leaves it out.
type IntKey struct {
	Key     string
	Field   *int
	Default int
}

// IntKeys lists c's integer sizes in the order the real config.json writes them.
func (c *Config) IntKeys() []IntKey {
	return []IntKey{
		{"hidden_size", &c.HiddenSize, 2048},
		{"num_hidden_layers", &c.NumLayers, 40},
		{"vocab_size", &c.VocabSize, 248320},
		{"num_attention_heads", &c.NumHeads, 16},
		{"num_key_value_heads", &c.NumKVHeads, 2},
		{"head_dim", &c.HeadDim, 256},
		{"linear_num_key_heads", &c.LinearNumKeyHeads, 16},
		{"linear_num_value_heads", &c.LinearNumValueHeads, 32},
		{"linear_key_head_dim", &c.LinearKeyHeadDim, 128},
		{"linear_value_head_dim", &c.LinearValueHeadDim, 128},
		{"linear_conv_kernel_dim", &c.LinearConvKernel, 4},
		{"num_experts", &c.NumExperts, 256},
		{"num_experts_per_tok", &c.NumExpertsPerTok, 8},
		{"moe_intermediate_size", &c.MoEIntermediate, 512},
		{"shared_expert_intermediate_size", &c.SharedIntermediate, 512},
		{"max_position_embeddings", &c.MaxPositionEmbeddings, 32768}, // class default; the checkpoint says 262144
	}
}
