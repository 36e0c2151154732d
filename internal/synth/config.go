// Package synth writes random-weight checkpoints of the Qwen3.6-35B-A3B architecture in exactly the
// layouts of the real ones (model.md §2): the bf16 Hugging Face layout and the 4-bit MLX layout, with
// the same tensor names, dtypes, shapes, shards, index and config files. Weights are generated from a
// seed and streamed to disk, so a full-size checkpoint is written without holding it in memory.
//
// A Plan lists every shard and tensor without writing anything; Write streams a Plan to a directory.
package synth

import (
	"fmt"
	"sort"
)

// Config is the architecture of a synthetic checkpoint. Field names follow config.json's text_config
// (model.md §1.1).
type Config struct {
	HiddenSize            int     // hidden_size (H)
	NumLayers             int     // num_hidden_layers
	FullAttentionInterval int     // full_attention_interval: layer i is full attention iff (i+1)%interval == 0
	VocabSize             int     // vocab_size
	NumHeads              int     // num_attention_heads (Hq)
	NumKVHeads            int     // num_key_value_heads (Hkv)
	HeadDim               int     // head_dim (D)
	PartialRotaryFactor   float64 // rotary dim = HeadDim * PartialRotaryFactor
	RopeTheta             float64 // rope_parameters.rope_theta
	MRopeSection          []int   // rope_parameters.mrope_section; sums to rotary dim / 2
	LinearNumKeyHeads     int     // linear_num_key_heads (Hk)
	LinearNumValueHeads   int     // linear_num_value_heads (Hv)
	LinearKeyHeadDim      int     // linear_key_head_dim (Dk)
	LinearValueHeadDim    int     // linear_value_head_dim (Dv)
	LinearConvKernel      int     // linear_conv_kernel_dim (K)
	NumExperts            int     // num_experts (E)
	NumExpertsPerTok      int     // num_experts_per_tok (top-k)
	MoEIntermediate       int     // moe_intermediate_size (I)
	SharedIntermediate    int     // shared_expert_intermediate_size (Is)
	RMSNormEps            float64 // rms_norm_eps
	MaxPositionEmbeddings int     // max_position_embeddings
	GroupSize             int     // MLX quantization group size along the input axis (64)
}

// Preset names accepted by Preset.
const (
	PresetTiny  = "tiny"
	PresetQwen  = "qwen3.6-35b-a3b"
	minVocab    = TokenAudioPad + 1 // the bundled tokenizer's ids must fit in the embedding
	defaultBits = 4
	routerBits  = 8
)

// Preset returns a named configuration: "qwen3.6-35b-a3b" is the real model (model.md §1.1); "tiny" is
// a small model of the same architecture for quick tests (H=128, 8 layers, E=8, vocab 4352).
func Preset(name string) (Config, error) {
	switch name {
	case PresetQwen:
		return Config{
			HiddenSize: 2048, NumLayers: 40, FullAttentionInterval: 4, VocabSize: 248320,
			NumHeads: 16, NumKVHeads: 2, HeadDim: 256, PartialRotaryFactor: 0.25,
			RopeTheta: 10000000, MRopeSection: []int{11, 11, 10},
			LinearNumKeyHeads: 16, LinearNumValueHeads: 32, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
			LinearConvKernel: 4, NumExperts: 256, NumExpertsPerTok: 8, MoEIntermediate: 512,
			SharedIntermediate: 512, RMSNormEps: 1e-6, MaxPositionEmbeddings: 262144, GroupSize: 64,
		}, nil
	case PresetTiny:
		return Config{
			HiddenSize: 128, NumLayers: 8, FullAttentionInterval: 4, VocabSize: 4352,
			NumHeads: 4, NumKVHeads: 2, HeadDim: 64, PartialRotaryFactor: 0.25,
			RopeTheta: 10000000, MRopeSection: []int{3, 3, 2},
			LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 64, LinearValueHeadDim: 64,
			LinearConvKernel: 4, NumExperts: 8, NumExpertsPerTok: 2, MoEIntermediate: 64,
			SharedIntermediate: 64, RMSNormEps: 1e-6, MaxPositionEmbeddings: 262144, GroupSize: 64,
		}, nil
	}
	return Config{}, fmt.Errorf("unknown preset %q (want one of %v)", name, PresetNames())
}

// PresetNames lists the names Preset accepts, sorted.
func PresetNames() []string {
	n := []string{PresetTiny, PresetQwen}
	sort.Strings(n)
	return n
}

// WithLayers returns c with n layers of the same width; the layer types keep the every-interval-th
// full-attention pattern. n must be at least 1.
func (c Config) WithLayers(n int) (Config, error) {
	if n < 1 {
		return Config{}, fmt.Errorf("layers must be at least 1, got %d", n)
	}
	c.NumLayers = n
	c.MRopeSection = append([]int(nil), c.MRopeSection...)
	return c, nil
}

// IsFullAttention reports whether layer i is a gated-attention layer (else Gated DeltaNet).
func (c Config) IsFullAttention(i int) bool { return c.dims().IsFull(i) }

// LayerTypes is config.json's layer_types: "full_attention" or "linear_attention" per layer.
func (c Config) LayerTypes() []string {
	kinds := c.dims().LayerTypes
	t := make([]string, len(kinds))
	for i, k := range kinds {
		t[i] = k.String()
	}
	return t
}

// RotaryDim is the number of leading head dims that RoPE rotates.
func (c Config) RotaryDim() int { return int(float64(c.HeadDim) * c.PartialRotaryFactor) }

// KeyDim is Hk*Dk, the width of the DeltaNet query and key sections.
func (c Config) KeyDim() int { return c.dims().KeyDim() }

// ValueDim is Hv*Dv, the width of the DeltaNet value section and of out_proj's input.
func (c Config) ValueDim() int { return c.dims().ValueDim() }

// ConvDim is 2*KeyDim + ValueDim, the DeltaNet conv channel count.
func (c Config) ConvDim() int { return c.dims().ConvDim() }

// Validate checks that the dimensions are positive and consistent, and that every quantized
// matrix's input dimension is a multiple of the group size.
func (c Config) Validate() error {
	pos := []struct {
		name string
		v    int
	}{
		{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumLayers},
		{"full_attention_interval", c.FullAttentionInterval}, {"vocab_size", c.VocabSize},
		{"num_attention_heads", c.NumHeads}, {"num_key_value_heads", c.NumKVHeads}, {"head_dim", c.HeadDim},
		{"linear_num_key_heads", c.LinearNumKeyHeads}, {"linear_num_value_heads", c.LinearNumValueHeads},
		{"linear_key_head_dim", c.LinearKeyHeadDim}, {"linear_value_head_dim", c.LinearValueHeadDim},
		{"linear_conv_kernel_dim", c.LinearConvKernel}, {"num_experts", c.NumExperts},
		{"num_experts_per_tok", c.NumExpertsPerTok}, {"moe_intermediate_size", c.MoEIntermediate},
		{"shared_expert_intermediate_size", c.SharedIntermediate}, {"group_size", c.GroupSize},
	}
	for _, p := range pos {
		if p.v < 1 {
			return fmt.Errorf("config: %s must be positive, got %d", p.name, p.v)
		}
	}
	if err := c.dims().CheckGroups(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if r := c.RotaryDim(); r < 2 || r%2 != 0 || r > c.HeadDim {
		return fmt.Errorf("config: rotary dim %d (head_dim %d * partial_rotary_factor %g) must be even and in [2, head_dim]",
			r, c.HeadDim, c.PartialRotaryFactor)
	}
	sum := 0
	for _, s := range c.MRopeSection {
		sum += s
	}
	if sum != c.RotaryDim()/2 {
		return fmt.Errorf("config: mrope_section %v sums to %d, want rotary dim / 2 = %d", c.MRopeSection, sum, c.RotaryDim()/2)
	}
	if c.VocabSize < minVocab {
		return fmt.Errorf("config: vocab_size %d is smaller than the bundled tokenizer (%d ids)", c.VocabSize, minVocab)
	}
	ins := []struct {
		name string
		v    int
	}{
		{"hidden_size", c.HiddenSize}, {"linear value dim", c.ValueDim()}, {"attention output dim", c.NumHeads * c.HeadDim},
		{"moe_intermediate_size", c.MoEIntermediate}, {"shared_expert_intermediate_size", c.SharedIntermediate},
	}
	for _, in := range ins {
		if in.v%c.GroupSize != 0 {
			return fmt.Errorf("config: %s %d is not a multiple of the quantization group size %d", in.name, in.v, c.GroupSize)
		}
	}
	return nil
}
