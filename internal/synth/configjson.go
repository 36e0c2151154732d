package synth

import (
	"bytes"
	"encoding/json"
	"math"
)

// Token ids of the bundled tiny tokenizer (fixtures.TinyTokenizerJSON), whose 33 added tokens at
// 4256..4288 are Qwen3.6's 248044..248076 in the same order.
const (
	TokenEndOfText   = 4256 // <|endoftext|>
	TokenImStart     = 4257 // <|im_start|>
	TokenImEnd       = 4258 // <|im_end|>
	TokenVisionStart = 4265 // <|vision_start|>
	TokenVisionEnd   = 4266 // <|vision_end|>
	TokenImagePad    = 4268 // <|image_pad|>
	TokenVideoPad    = 4269 // <|video_pad|>
	TokenAudioPad    = 4288 // <|audio_pad|>, the last added token
)

// object is a JSON object that keeps its keys in order, as the real config files do.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// number spells integral floats without an exponent (10000000, not 1e+07), as Python's json does
// for the real config's integers.
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// marshalFile is the indented JSON of v with a trailing newline.
func marshalFile(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ConfigJSON is the checkpoint's config.json (model.md §1.1): the nested Qwen3_5MoeForConditionalGeneration
// config with text_config, a small vision_config stub, and for the MLX layout the identical quantization
// and quantization_config blocks with a per-module override for every router and shared-expert gate.
func (p *Plan) ConfigJSON() ([]byte, error) {
	c := p.Config
	text := object{
		{"model_type", "qwen3_5_moe_text"},
		{"hidden_size", c.HiddenSize},
		{"num_hidden_layers", c.NumLayers},
		{"layer_types", c.LayerTypes()},
		{"full_attention_interval", c.FullAttentionInterval},
		{"vocab_size", c.VocabSize},
		{"num_attention_heads", c.NumHeads},
		{"num_key_value_heads", c.NumKVHeads},
		{"head_dim", c.HeadDim},
		{"attention_bias", false},
		{"attn_output_gate", true},
		{"linear_num_key_heads", c.LinearNumKeyHeads},
		{"linear_num_value_heads", c.LinearNumValueHeads},
		{"linear_key_head_dim", c.LinearKeyHeadDim},
		{"linear_value_head_dim", c.LinearValueHeadDim},
		{"linear_conv_kernel_dim", c.LinearConvKernel},
		{"mamba_ssm_dtype", "float32"},
		{"num_experts", c.NumExperts},
		{"num_experts_per_tok", c.NumExpertsPerTok},
		{"moe_intermediate_size", c.MoEIntermediate},
		{"shared_expert_intermediate_size", c.SharedIntermediate},
		{"hidden_act", "silu"},
		{"rms_norm_eps", c.RMSNormEps},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
		{"rope_parameters", object{
			{"rope_type", "default"},
			{"rope_theta", number(c.RopeTheta)},
			{"partial_rotary_factor", c.PartialRotaryFactor},
			{"mrope_section", c.MRopeSection},
			{"mrope_interleaved", true},
		}},
		{"partial_rotary_factor", c.PartialRotaryFactor},
		{"tie_word_embeddings", false},
		{"mtp_num_hidden_layers", 1},
		{"mtp_use_dedicated_embeddings", false},
		{"bos_token_id", TokenEndOfText},
		{"eos_token_id", TokenEndOfText},
		{"pad_token_id", nil},
		{"router_aux_loss_coef", 0.001},
		{"output_router_logits", false},
		{"initializer_range", 0.02},
		{"attention_dropout", 0.0},
		{"use_cache", true},
		{"dtype", "bfloat16"},
	}
	vision := object{
		{"depth", 2},
		{"hidden_size", 64},
		{"num_heads", 2},
		{"in_channels", 3},
		{"patch_size", 16},
		{"spatial_merge_size", 2},
		{"temporal_patch_size", 2},
		{"out_hidden_size", c.HiddenSize},
	}
	cfg := object{
		{"architectures", []string{"Qwen3_5MoeForConditionalGeneration"}},
		{"model_type", "qwen3_5_moe"},
		{"image_token_id", TokenImagePad},
		{"video_token_id", TokenVideoPad},
		{"vision_start_token_id", TokenVisionStart},
		{"vision_end_token_id", TokenVisionEnd},
		{"tie_word_embeddings", false},
		{"text_config", text},
		{"vision_config", vision},
	}
	if p.Layout == LayoutMLX {
		q := object{{"group_size", c.GroupSize}, {"bits", defaultBits}, {"mode", "affine"}}
		for _, m := range routerModules(c) {
			q = append(q, member{m, object{{"group_size", c.GroupSize}, {"bits", routerBits}}})
		}
		cfg = append(cfg, member{"quantization", q}, member{"quantization_config", q})
	}
	return marshalFile(cfg)
}

// GenerationConfigJSON is generation_config.json (model.md §1.3) with the bundled tokenizer's ids:
// stop on <|im_end|> and <|endoftext|>.
func GenerationConfigJSON() ([]byte, error) {
	return marshalFile(object{
		{"bos_token_id", TokenEndOfText},
		{"do_sample", true},
		{"eos_token_id", []int{TokenImEnd, TokenEndOfText}},
		{"pad_token_id", TokenEndOfText},
		{"temperature", 1.0},
		{"top_k", 20},
		{"top_p", 0.95},
	})
}

// IndexJSON is model.safetensors.index.json: metadata.total_size (the data bytes of all shards) and
// weight_map from every tensor name to its shard's file name.
func (p *Plan) IndexJSON() ([]byte, error) {
	wm := map[string]string{}
	for _, s := range p.Shards {
		for _, t := range s.Tensors {
			wm[t.Name] = s.File
		}
	}
	return marshalFile(object{
		{"metadata", object{{"total_size", p.TotalBytes()}}},
		{"weight_map", wm}, // encoding/json sorts the keys
	})
}
