package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/lily-engine/lily/internal/safefile"
	"github.com/lily-engine/lily/internal/tensortable"
)

// Transformers' Qwen3_5MoeTextConfig defaults (configuration_qwen3_5_moe.py), applied to fields a
// config.json leaves out. The real checkpoint sets all of them explicitly except where noted.
var textDefaults = map[string]int{
	"vocab_size":                      248320,
	"hidden_size":                     2048,
	"num_hidden_layers":               40,
	"num_attention_heads":             16,
	"num_key_value_heads":             2,
	"head_dim":                        256,
	"linear_conv_kernel_dim":          4,
	"linear_key_head_dim":             128,
	"linear_value_head_dim":           128,
	"linear_num_key_heads":            16,
	"linear_num_value_heads":          32,
	"moe_intermediate_size":           512,
	"shared_expert_intermediate_size": 512,
	"num_experts_per_tok":             8,
	"num_experts":                     256,
	"max_position_embeddings":         32768, // class default; the checkpoint says 262144
	"full_attention_interval":         4,
}

const (
	defaultRMSNormEps          = 1e-6
	defaultRopeTheta           = 10000.0 // transformers' RoPE default; the checkpoint says 1e7
	defaultPartialRotaryFactor = 0.25
	maxDim                     = 1 << 24 // sanity bound on any size in config.json
)

// LoadConfig reads dir/config.json and, when present, dir/generation_config.json.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	cfg, err := safefile.ReadFile(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	genPath := filepath.Join(dir, "generation_config.json")
	gen, err := safefile.ReadFile(genPath, maxConfigBytes)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	c, err := ParseConfig(cfg, gen)
	var ge genError
	switch {
	case errors.As(err, &ge):
		return nil, fmt.Errorf("checkpoint: %s: %w", genPath, ge.err)
	case err != nil:
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig validates config.json (nested text_config or flat) and the optional
// generation_config.json (nil when absent), applying transformers' defaults.
func ParseConfig(configJSON, generationJSON []byte) (*Config, error) {
	top, err := parseObject(configJSON)
	if err != nil {
		return nil, err
	}
	text, err := top.objectField("text_config")
	if err != nil {
		return nil, err
	}
	nested := text != nil
	if !nested {
		text = top
	}
	if err := checkModelType(top, text, nested); err != nil {
		return nil, err
	}
	c := &Config{BOSTokenID: -1}
	ints := []struct {
		dst *int
		key string
	}{
		{&c.VocabSize, "vocab_size"}, {&c.HiddenSize, "hidden_size"}, {&c.NumLayers, "num_hidden_layers"},
		{&c.NumHeads, "num_attention_heads"}, {&c.NumKVHeads, "num_key_value_heads"}, {&c.HeadDim, "head_dim"},
		{&c.LinearConvKernel, "linear_conv_kernel_dim"}, {&c.LinearKeyHeadDim, "linear_key_head_dim"},
		{&c.LinearValueHeadDim, "linear_value_head_dim"}, {&c.LinearNumKeyHeads, "linear_num_key_heads"},
		{&c.LinearNumValueHeads, "linear_num_value_heads"}, {&c.MoEIntermediate, "moe_intermediate_size"},
		{&c.SharedIntermediate, "shared_expert_intermediate_size"}, {&c.NumExpertsPerTok, "num_experts_per_tok"},
		{&c.NumExperts, "num_experts"}, {&c.MaxPositionEmbeddings, "max_position_embeddings"},
	}
	for _, f := range ints {
		v, err := text.intField(f.key, textDefaults[f.key])
		if err != nil {
			return nil, err
		}
		if v < 1 || (v > maxDim && f.key != "max_position_embeddings") {
			return nil, fmt.Errorf("%s = %d is out of range", f.key, v)
		}
		*f.dst = v
	}
	if c.RMSNormEps, err = text.floatField("rms_norm_eps", defaultRMSNormEps); err != nil {
		return nil, err
	}
	if !(c.RMSNormEps > 0 && c.RMSNormEps < 1) {
		return nil, fmt.Errorf("rms_norm_eps = %g is out of range (0, 1)", c.RMSNormEps)
	}
	if err := parseTie(c, top, text, nested); err != nil {
		return nil, err
	}
	if err := checkFixedChoices(text); err != nil {
		return nil, err
	}
	if c.LayerTypes, err = parseLayerTypes(text, c.NumLayers); err != nil {
		return nil, err
	}
	if err := parseRope(c, text); err != nil {
		return nil, err
	}
	if err := checkHeads(c); err != nil {
		return nil, err
	}
	if c.Quant, err = parseQuantization(top, text); err != nil {
		return nil, err
	}
	if err := parseTokenIDs(c, text, generationJSON); err != nil {
		return nil, err
	}
	return c, nil
}

// checkModelType rejects configs of other architectures; a missing model_type is accepted.
func checkModelType(top, text object, nested bool) error {
	mt, err := top.stringField("model_type", "")
	if err != nil {
		return err
	}
	ok := map[string]bool{"": true, "qwen3_5_moe": true, "qwen3_5_moe_text": true}
	if !ok[mt] {
		return fmt.Errorf("model_type %q is not qwen3_5_moe (Qwen3.5/3.6 MoE)", mt)
	}
	if nested {
		tmt, err := text.stringField("model_type", "")
		if err != nil {
			return fmt.Errorf("text_config.%w", err)
		}
		if !ok[tmt] {
			return fmt.Errorf("text_config.model_type %q is not qwen3_5_moe_text", tmt)
		}
	}
	return nil
}

// parseTie reads tie_word_embeddings; in the nested layout the top level (the model's own
// config) wins over text_config.
func parseTie(c *Config, top, text object, nested bool) error {
	var err error
	if c.TieWordEmbeddings, err = text.boolField("tie_word_embeddings", false); err != nil {
		return err
	}
	if nested && top.has("tie_word_embeddings") {
		c.TieWordEmbeddings, err = top.boolField("tie_word_embeddings", false)
	}
	return err
}

// checkFixedChoices rejects settings the model code does not implement.
func checkFixedChoices(text object) error {
	act, err := text.stringField("hidden_act", "silu")
	if err != nil {
		return err
	}
	if act != "silu" {
		return fmt.Errorf("hidden_act %q is not supported (only silu)", act)
	}
	bias, err := text.boolField("attention_bias", false)
	if err != nil {
		return err
	}
	if bias {
		return errors.New("attention_bias = true is not supported")
	}
	return nil
}

// parseLayerTypes reads layer_types, or builds it from full_attention_interval as transformers
// does: layer i is full attention iff (i+1) % interval == 0.
func parseLayerTypes(text object, n int) ([]LayerKind, error) {
	if !text.has("layer_types") {
		iv, err := text.intField("full_attention_interval", textDefaults["full_attention_interval"])
		if err != nil {
			return nil, err
		}
		if iv < 1 {
			return nil, fmt.Errorf("full_attention_interval = %d must be >= 1", iv)
		}
		return tensortable.Interleaved(n, iv), nil
	}
	var names []string
	if err := json.Unmarshal(text["layer_types"], &names); err != nil {
		return nil, fmt.Errorf("layer_types: want a list of strings: %w", err)
	}
	if len(names) != n {
		return nil, fmt.Errorf("layer_types has %d entries but num_hidden_layers = %d", len(names), n)
	}
	kinds := make([]LayerKind, n)
	for i, s := range names {
		switch s {
		case LinearAttention.String():
			kinds[i] = LinearAttention
		case FullAttention.String():
			kinds[i] = FullAttention
		default:
			return nil, fmt.Errorf("layer_types[%d] = %q: want linear_attention or full_attention", i, s)
		}
	}
	return kinds, nil
}

// parseRope reads rope_parameters (or legacy rope_scaling); rope_theta and partial_rotary_factor
// may also sit at the top of the text config, where they apply when rope_parameters lacks them.
func parseRope(c *Config, text object) error {
	rp, err := text.objectField("rope_parameters")
	if err != nil {
		return err
	}
	if rp == nil {
		if rp, err = text.objectField("rope_scaling"); err != nil {
			return err
		}
	}
	if rp == nil {
		rp = object{}
	}
	rt, err := rp.stringField("rope_type", "default")
	if err != nil {
		return fmt.Errorf("rope_parameters.%w", err)
	}
	if rt == "default" && rp.has("type") {
		rt, _ = rp.stringField("type", "default")
	}
	if rt != "default" {
		return fmt.Errorf("rope_parameters.rope_type %q is not supported (only default)", rt)
	}
	if c.RopeTheta, err = text.floatField("rope_theta", defaultRopeTheta); err != nil {
		return err
	}
	if c.RopeTheta, err = rp.floatField("rope_theta", c.RopeTheta); err != nil {
		return fmt.Errorf("rope_parameters.%w", err)
	}
	if c.PartialRotaryFactor, err = text.floatField("partial_rotary_factor", defaultPartialRotaryFactor); err != nil {
		return err
	}
	if c.PartialRotaryFactor, err = rp.floatField("partial_rotary_factor", c.PartialRotaryFactor); err != nil {
		return fmt.Errorf("rope_parameters.%w", err)
	}
	if !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("rope_theta = %g is out of range", c.RopeTheta)
	}
	f := c.PartialRotaryFactor
	rot := float64(c.HeadDim) * f
	if !(f > 0 && f <= 1) || rot != math.Trunc(rot) || int(rot)%2 != 0 {
		return fmt.Errorf("partial_rotary_factor = %g: head_dim %d * factor must be an even integer in (0, head_dim]", f, c.HeadDim)
	}
	return nil
}

// checkHeads checks that attention and DeltaNet heads group evenly and top-k fits
// (Dims.CheckGroups).
func checkHeads(c *Config) error { return c.Dims().CheckGroups() }

// genError marks an error in generation_config.json.
type genError struct{ err error }

func (e genError) Error() string { return "generation_config.json: " + e.err.Error() }
func (e genError) Unwrap() error { return e.err }

// parseTokenIDs reads bos/eos from the text config, with generation_config.json's eos winning.
func parseTokenIDs(c *Config, text object, generationJSON []byte) error {
	var err error
	if c.BOSTokenID, err = text.intField("bos_token_id", -1); err != nil {
		return err
	}
	if c.EOSTokenIDs, err = text.intList("eos_token_id"); err != nil {
		return err
	}
	eosFromGen := false
	if generationJSON != nil {
		gen, err := parseObject(generationJSON)
		if err != nil {
			return genError{err}
		}
		if gen.has("eos_token_id") {
			if c.EOSTokenIDs, err = gen.intList("eos_token_id"); err != nil {
				return genError{err}
			}
			eosFromGen = true
		}
		if c.BOSTokenID < 0 {
			if c.BOSTokenID, err = gen.intField("bos_token_id", -1); err != nil {
				return genError{err}
			}
		}
	}
	if c.BOSTokenID < -1 || c.BOSTokenID >= c.VocabSize {
		return fmt.Errorf("bos_token_id %d is outside the vocabulary (%d)", c.BOSTokenID, c.VocabSize)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || id >= c.VocabSize {
			err := fmt.Errorf("eos_token_id %d is outside the vocabulary (%d)", id, c.VocabSize)
			if eosFromGen {
				return genError{err} // blamed on the file it came from
			}
			return err
		}
	}
	return nil
}

// Bounds on the JSON files read from a checkpoint directory (the real ones are a few KB).
const (
	maxConfigBytes = 16 << 20
	maxIndexBytes  = 64 << 20
)
