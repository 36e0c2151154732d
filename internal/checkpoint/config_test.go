package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

func TestParseConfigRealNested(t *testing.T) {
	c, err := ParseConfig(checkpointtest.Real().ConfigJSON("mlx"), []byte(`{"eos_token_id":[248046,248044],"bos_token_id":248044}`))
	noErr(t, err)
	eq(t, c.HiddenSize, 2048)
	eq(t, c.NumLayers, 40)
	eq(t, c.NumLayersOf(FullAttention), 10)
	eq(t, c.LayerTypes[3], FullAttention)
	eq(t, c.LayerTypes[4], LinearAttention)
	eq(t, c.ConvDim(), 8192)
	eq(t, c.RotaryDim(), 64)
	eq(t, c.RopeTheta, 1e7)
	eq(t, c.MaxPositionEmbeddings, 262144)
	eq(t, c.EOSTokenIDs, []int{248046, 248044})
	eq(t, c.BOSTokenID, 248318) // from text_config, which the generation config does not override
	eq(t, c.Quant.Bits, 4)
	eq(t, c.Quant.GroupSize, 64)
	eq(t, c.Quant.Mode, "affine")
	eq(t, len(c.Quant.Overrides), 80)
	eq(t, c.Quant.Params("language_model.model.layers.7.mlp.gate"), QuantParams{Bits: 8, GroupSize: 64})
	eq(t, c.Quant.Params("language_model.model.layers.7.mlp.switch_mlp.up_proj"), QuantParams{Bits: 4, GroupSize: 64})
}

func TestParseConfigDefaultsLikeTransformers(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type":"qwen3_5_moe_text"}`), nil)
	noErr(t, err)
	eq(t, c.VocabSize, 248320)
	eq(t, c.NumHeads, 16)
	eq(t, c.NumKVHeads, 2)
	eq(t, c.LinearNumValueHeads, 32)
	eq(t, c.MaxPositionEmbeddings, 32768)
	eq(t, c.RopeTheta, 10000.0)
	eq(t, c.PartialRotaryFactor, 0.25)
	eq(t, c.RMSNormEps, 1e-6)
	eq(t, c.NumLayersOf(FullAttention), 10) // built from full_attention_interval = 4
	eq(t, c.BOSTokenID, -1)
	eq(t, c.EOSTokenIDs, []int(nil))
	if c.Quant != nil {
		t.Fatal("no quantization block, want nil Quant")
	}
}

func TestParseConfigFlatAndVariants(t *testing.T) {
	c, err := ParseConfig([]byte(`{"num_hidden_layers":6,"full_attention_interval":3,"rope_theta":5e6,
		"partial_rotary_factor":0.5,"eos_token_id":7,"tie_word_embeddings":true}`), []byte(`{"do_sample":true}`))
	noErr(t, err)
	eq(t, c.LayerTypes, []LayerKind{LinearAttention, LinearAttention, FullAttention, LinearAttention, LinearAttention, FullAttention})
	eq(t, c.RopeTheta, 5e6)   // top-level value used when rope_parameters is absent
	eq(t, c.RotaryDim(), 128) // 256 * 0.5
	eq(t, c.EOSTokenIDs, []int{7})
	eq(t, c.TieWordEmbeddings, true)

	// rope_parameters wins over the top level; the top-level tie flag wins in the nested layout.
	c, err = ParseConfig([]byte(`{"tie_word_embeddings":false,"text_config":{"tie_word_embeddings":true,
		"rope_theta":5,"rope_parameters":{"rope_theta":1e7}}}`), nil)
	noErr(t, err)
	eq(t, c.RopeTheta, 1e7)
	eq(t, c.TieWordEmbeddings, false)

	// Older mlx-lm omits "mode"; a false override leaves a module unquantized.
	c, err = ParseConfig([]byte(`{"quantization":{"bits":8,"group_size":32,"lm_head":false}}`), nil)
	noErr(t, err)
	eq(t, c.Quant.Mode, "affine")
	eq(t, c.Quant.Params("lm_head"), QuantParams{})
	eq(t, c.Quant.Params("x"), QuantParams{Bits: 8, GroupSize: 32})
}

func TestParseConfigRejects(t *testing.T) {
	cases := []struct{ name, cfg, gen, want string }{
		{"not json", `{`, "", "unexpected end"},
		{"not object", `[]`, "", "not a JSON object"},
		{"string int", `{"hidden_size":"2048"}`, "", "hidden_size: want an integer"},
		{"float int", `{"hidden_size":20.5}`, "", "hidden_size: want an integer"},
		{"zero", `{"num_experts":0}`, "", "num_experts = 0 is out of range"},
		{"huge", `{"hidden_size":1e12}`, "", "hidden_size"},
		{"layer types length", `{"num_hidden_layers":3,"layer_types":["full_attention"]}`, "", "layer_types has 1 entries but num_hidden_layers = 3"},
		{"layer type name", `{"num_hidden_layers":1,"layer_types":["sliding"]}`, "", `layer_types[0] = "sliding"`},
		{"interval", `{"full_attention_interval":0}`, "", "full_attention_interval = 0"},
		{"kv heads", `{"num_attention_heads":16,"num_key_value_heads":3}`, "", "not a multiple of num_key_value_heads 3"},
		{"deltanet heads", `{"linear_num_key_heads":5}`, "", "linear_num_value_heads 32 is not a multiple of linear_num_key_heads 5"},
		{"topk", `{"num_experts":4,"num_experts_per_tok":8}`, "", "num_experts_per_tok 8 exceeds"},
		{"rope type", `{"rope_parameters":{"rope_type":"yarn","factor":4}}`, "", `rope_type "yarn" is not supported`},
		{"rotary factor", `{"partial_rotary_factor":0.3}`, "", "partial_rotary_factor = 0.3"},
		{"rope theta type", `{"rope_parameters":{"rope_theta":"big"}}`, "", "rope_theta: want a number"},
		{"eps", `{"rms_norm_eps":0}`, "", "rms_norm_eps"},
		{"act", `{"hidden_act":"gelu"}`, "", `hidden_act "gelu"`},
		{"bias", `{"attention_bias":true}`, "", "attention_bias"},
		{"model type", `{"model_type":"llama"}`, "", `model_type "llama"`},
		{"text model type", `{"text_config":{"model_type":"qwen3_next"}}`, "", `text_config.model_type "qwen3_next"`},
		{"text config type", `{"text_config":[1]}`, "", "text_config: not a JSON object"},
		{"bits", `{"quantization":{"bits":3,"group_size":64}}`, "", "quantization: bits = 3"},
		{"group", `{"quantization":{"bits":4,"group_size":48}}`, "", "group_size = 48"},
		{"mode", `{"quantization":{"bits":4,"group_size":64,"mode":"mxfp4"}}`, "", `mode "mxfp4"`},
		{"override", `{"quantization":{"bits":4,"group_size":64,"a.b":{"bits":5}}}`, "", `quantization["a.b"]: bits = 5`},
		{"override type", `{"quantization":{"bits":4,"group_size":64,"a.b":7}}`, "", `quantization["a.b"]: want an object`},
		{"hf quantizer", `{"quantization_config":{"quant_method":"fp8"}}`, "", `quant_method "fp8"`},
		{"eos range", `{"eos_token_id":[1,248320]}`, "", "eos_token_id 248320 is outside"},
		{"eos type", `{"eos_token_id":"x"}`, "", "eos_token_id: want an integer"},
		{"gen eos", `{}`, `{"eos_token_id":[1,"x"]}`, "generation_config.json: eos_token_id"},
		{"gen json", `{}`, `nope`, "generation_config.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var gen []byte
			if c.gen != "" {
				gen = []byte(c.gen)
			}
			_, err := ParseConfig([]byte(c.cfg), gen)
			errHas(t, err, c.want)
		})
	}
}

func TestLoadConfigNamesFile(t *testing.T) {
	dir := t.TempDir()
	cfgPath, genPath := filepath.Join(dir, "config.json"), filepath.Join(dir, "generation_config.json")
	_, err := LoadConfig(dir)
	errHas(t, err, cfgPath)

	noErr(t, os.WriteFile(cfgPath, []byte(`{"eos_token_id":1}`), 0o644))
	c, err := LoadConfig(dir)
	noErr(t, err)
	eq(t, c.EOSTokenIDs, []int{1}) // no generation_config.json: the config's own eos

	noErr(t, os.WriteFile(genPath, []byte(`{"eos_token_id":[5,6]}`), 0o644))
	c, err = LoadConfig(dir)
	noErr(t, err)
	eq(t, c.EOSTokenIDs, []int{5, 6})

	noErr(t, os.WriteFile(genPath, []byte(`{"eos_token_id":"x"}`), 0o644))
	_, err = LoadConfig(dir)
	errHas(t, err, genPath, "eos_token_id")

	noErr(t, os.WriteFile(cfgPath, []byte(`{"hidden_size":0}`), 0o644))
	_, err = LoadConfig(dir)
	errHas(t, err, cfgPath, "hidden_size")
}
