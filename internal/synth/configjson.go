package synth

import (
	"encoding/json"

	"github.com/lily-engine/lily/internal/hfconfig"
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
type object = hfconfig.Object

// marshalFile is the indented JSON of v with a trailing newline.
func marshalFile(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// HFConfig is c as the loader reads it from config.json (checkpoint.Config): the text model's
// sizes and the stop ids, without the quantization (ConfigJSON adds it for the MLX layout).
func (c Config) HFConfig() *hfconfig.Config {
	d := c.dims()
	return &hfconfig.Config{HiddenSize: c.HiddenSize, NumLayers: c.NumLayers, LayerTypes: d.LayerTypes,
		VocabSize: c.VocabSize, NumHeads: c.NumHeads, NumKVHeads: c.NumKVHeads, HeadDim: c.HeadDim,
		LinearNumKeyHeads: c.LinearNumKeyHeads, LinearNumValueHeads: c.LinearNumValueHeads,
		LinearKeyHeadDim: c.LinearKeyHeadDim, LinearValueHeadDim: c.LinearValueHeadDim,
		LinearConvKernel: c.LinearConvKernel, NumExperts: c.NumExperts, NumExpertsPerTok: c.NumExpertsPerTok,
		MoEIntermediate: c.MoEIntermediate, SharedIntermediate: c.SharedIntermediate, RMSNormEps: c.RMSNormEps,
		RopeTheta: c.RopeTheta, PartialRotaryFactor: c.PartialRotaryFactor,
		MaxPositionEmbeddings: c.MaxPositionEmbeddings, BOSTokenID: TokenEndOfText, EOSTokenIDs: []int{TokenEndOfText}}
}

// ConfigJSON is the checkpoint's config.json (model.md §1.1): the nested Qwen3_5MoeForConditionalGeneration
// config with text_config, a small vision_config stub, and for the MLX layout the identical quantization
// and quantization_config blocks with a per-module override for every router and shared-expert gate.
func (p *Plan) ConfigJSON() ([]byte, error) {
	c := p.Config
	hc := c.HFConfig()
	if p.Layout == LayoutMLX {
		hc.Quant = &hfconfig.Quantization{Bits: defaultBits, GroupSize: c.GroupSize, Mode: hfconfig.ModeAffine,
			Overrides: map[string]hfconfig.QuantParams{}}
		for _, m := range routerModules(c) {
			hc.Quant.Overrides[m] = hfconfig.QuantParams{Bits: routerBits, GroupSize: c.GroupSize}
		}
	}
	// The members the reader ignores, with the real config's values.
	text := object{
		{Key: hfconfig.KeyFullAttnInterval, Value: c.FullAttentionInterval},
		{Key: "attn_output_gate", Value: true},
		{Key: "mamba_ssm_dtype", Value: "float32"},
		{Key: "mtp_num_hidden_layers", Value: 1},
		{Key: "mtp_use_dedicated_embeddings", Value: false},
		{Key: "pad_token_id", Value: nil},
		{Key: "router_aux_loss_coef", Value: 0.001},
		{Key: "output_router_logits", Value: false},
		{Key: "initializer_range", Value: 0.02},
		{Key: "attention_dropout", Value: 0.0},
		{Key: "use_cache", Value: true},
		{Key: "dtype", Value: "bfloat16"},
	}
	rope := object{{Key: "mrope_section", Value: c.MRopeSection}, {Key: "mrope_interleaved", Value: true}}
	vision := object{
		{Key: "depth", Value: 2},
		{Key: "hidden_size", Value: 64},
		{Key: "num_heads", Value: 2},
		{Key: "in_channels", Value: 3},
		{Key: "patch_size", Value: 16},
		{Key: "spatial_merge_size", Value: 2},
		{Key: "temporal_patch_size", Value: 2},
		{Key: "out_hidden_size", Value: c.HiddenSize},
	}
	top := object{
		{Key: "image_token_id", Value: TokenImagePad},
		{Key: "video_token_id", Value: TokenVideoPad},
		{Key: "vision_start_token_id", Value: TokenVisionStart},
		{Key: "vision_end_token_id", Value: TokenVisionEnd},
		{Key: "vision_config", Value: vision},
	}
	return hfconfig.File{Config: hc, Top: top, Text: text, Rope: rope}.MarshalFile()
}

// GenerationConfigJSON is generation_config.json (model.md §1.3) with the bundled tokenizer's ids:
// stop on <|im_end|> and <|endoftext|>.
func GenerationConfigJSON() ([]byte, error) {
	return marshalFile(object{
		{Key: hfconfig.KeyBOSTokenID, Value: TokenEndOfText},
		{Key: "do_sample", Value: true},
		{Key: hfconfig.KeyEOSTokenID, Value: []int{TokenImEnd, TokenEndOfText}},
		{Key: "pad_token_id", Value: TokenEndOfText},
		{Key: "temperature", Value: 1.0},
		{Key: "top_k", Value: 20},
		{Key: "top_p", Value: 0.95},
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
		{Key: "metadata", Value: object{{Key: "total_size", Value: p.TotalBytes()}}},
		{Key: "weight_map", Value: wm}, // encoding/json sorts the keys
	})
}
