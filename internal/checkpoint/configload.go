package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/lily-engine/lily/internal/hfconfig"
	"github.com/lily-engine/lily/internal/safefile"
	"github.com/lily-engine/lily/internal/tensortable"
)

// Transformers' Qwen3_5MoeTextConfig defaults for the non-integer fields a config.json leaves out
// (the integer sizes' defaults are in intKeys).
const (
	defaultFullAttnInterval    = 4
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
	text, err := top.objectField(hfconfig.KeyTextConfig)
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
	for _, f := range c.IntKeys() {
		v, err := text.intField(f.Key, f.Default)
		if err != nil {
			return nil, err
		}
		if v < 1 || (v > maxDim && f.Field != &c.MaxPositionEmbeddings) {
			return nil, fmt.Errorf("%s = %d is out of range", f.Key, v)
		}
		*f.Field = v
	}
	if c.RMSNormEps, err = text.floatField(hfconfig.KeyRMSNormEps, defaultRMSNormEps); err != nil {
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
	mt, err := top.stringField(hfconfig.KeyModelType, "")
	if err != nil {
		return err
	}
	ok := map[string]bool{"": true, hfconfig.ModelType: true, hfconfig.TextModelType: true}
	if !ok[mt] {
		return fmt.Errorf("model_type %q is not qwen3_5_moe (Qwen3.5/3.6 MoE)", mt)
	}
	if nested {
		tmt, err := text.stringField(hfconfig.KeyModelType, "")
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
	if c.TieWordEmbeddings, err = text.boolField(hfconfig.KeyTieWordEmbeddings, false); err != nil {
		return err
	}
	if nested && top.has(hfconfig.KeyTieWordEmbeddings) {
		c.TieWordEmbeddings, err = top.boolField(hfconfig.KeyTieWordEmbeddings, false)
	}
	return err
}

// checkFixedChoices rejects settings the model code does not implement.
func checkFixedChoices(text object) error {
	act, err := text.stringField(hfconfig.KeyHiddenAct, hfconfig.HiddenAct)
	if err != nil {
		return err
	}
	if act != hfconfig.HiddenAct {
		return fmt.Errorf("hidden_act %q is not supported (only silu)", act)
	}
	bias, err := text.boolField(hfconfig.KeyAttentionBias, false)
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
	if !text.has(hfconfig.KeyLayerTypes) {
		iv, err := text.intField(hfconfig.KeyFullAttnInterval, defaultFullAttnInterval)
		if err != nil {
			return nil, err
		}
		if iv < 1 {
			return nil, fmt.Errorf("full_attention_interval = %d must be >= 1", iv)
		}
		return tensortable.Interleaved(n, iv), nil
	}
	var names []string
	if err := json.Unmarshal(text[hfconfig.KeyLayerTypes], &names); err != nil {
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
	rp, err := text.objectField(hfconfig.KeyRopeParameters)
	if err != nil {
		return err
	}
	if rp == nil {
		if rp, err = text.objectField(hfconfig.KeyRopeScaling); err != nil {
			return err
		}
	}
	if rp == nil {
		rp = object{}
	}
	rt, err := rp.stringField(hfconfig.KeyRopeType, hfconfig.RopeDefault)
	if err != nil {
		return fmt.Errorf("rope_parameters.%w", err)
	}
	if rt == hfconfig.RopeDefault && rp.has("type") {
		rt, _ = rp.stringField("type", hfconfig.RopeDefault)
	}
	if rt != hfconfig.RopeDefault {
		return fmt.Errorf("rope_parameters.rope_type %q is not supported (only default)", rt)
	}
	if c.RopeTheta, err = text.floatField(hfconfig.KeyRopeTheta, defaultRopeTheta); err != nil {
		return err
	}
	if c.RopeTheta, err = rp.floatField(hfconfig.KeyRopeTheta, c.RopeTheta); err != nil {
		return fmt.Errorf("rope_parameters.%w", err)
	}
	if c.PartialRotaryFactor, err = text.floatField(hfconfig.KeyPartialRotary, defaultPartialRotaryFactor); err != nil {
		return err
	}
	if c.PartialRotaryFactor, err = rp.floatField(hfconfig.KeyPartialRotary, c.PartialRotaryFactor); err != nil {
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
	if c.BOSTokenID, err = text.intField(hfconfig.KeyBOSTokenID, -1); err != nil {
		return err
	}
	if c.EOSTokenIDs, err = text.intList(hfconfig.KeyEOSTokenID); err != nil {
		return err
	}
	eosFromGen := false
	if generationJSON != nil {
		gen, err := parseObject(generationJSON)
		if err != nil {
			return genError{err}
		}
		if gen.has(hfconfig.KeyEOSTokenID) {
			if c.EOSTokenIDs, err = gen.intList(hfconfig.KeyEOSTokenID); err != nil {
				return genError{err}
			}
			eosFromGen = true
		}
		if c.BOSTokenID < 0 {
			if c.BOSTokenID, err = gen.intField(hfconfig.KeyBOSTokenID, -1); err != nil {
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
