package synth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lily-engine/lily/internal/safetensors"
)

// qwenMLXBytes is the text-tensor total of mlx-community/Qwen3.6-35B-A3B-4bit (model.md §2.3).
const qwenMLXBytes = 19_508_787_456

func mustPreset(t *testing.T, name string) Config {
	t.Helper()
	c, err := Preset(name)
	require.NoError(t, err)
	return c
}

func mustPlan(t *testing.T, c Config, l Layout, maxShard int64) *Plan {
	t.Helper()
	p, err := NewPlan(c, l, maxShard)
	require.NoError(t, err)
	return p
}

// tensorsByName indexes a plan's tensors, failing on duplicates.
func tensorsByName(t *testing.T, p *Plan) map[string]Tensor {
	t.Helper()
	m := map[string]Tensor{}
	for _, s := range p.Shards {
		for _, x := range s.Tensors {
			_, dup := m[x.Name]
			require.False(t, dup, "duplicate tensor %q", x.Name)
			m[x.Name] = x
		}
	}
	return m
}

func TestQwenMLXPlanTotal(t *testing.T) {
	p := mustPlan(t, mustPreset(t, PresetQwen), LayoutMLX, 0)
	assert.Equal(t, int64(qwenMLXBytes), p.TotalBytes())
	assert.Len(t, p.Shards, 4)
	for i, s := range p.Shards {
		assert.LessOrEqual(t, s.Bytes(), int64(DefaultMLXShardBytes), s.File)
		assert.Equal(t, fmt.Sprintf("model-%05d-of-00004.safetensors", i+1), s.File)
	}
}

func TestQwenMLXPlanShapes(t *testing.T) {
	m := tensorsByName(t, mustPlan(t, mustPreset(t, PresetQwen), LayoutMLX, 0))
	const P = "language_model.model.layers.0."
	want := []struct {
		name  string
		dtype safetensors.DType
		shape []int
	}{
		// the entries observed in the real checkpoint (✓ in model.md §2.3)
		{"language_model.model.embed_tokens.weight", safetensors.U32, []int{248320, 256}},
		{"language_model.model.embed_tokens.scales", safetensors.BF16, []int{248320, 32}},
		{P + "linear_attn.in_proj_qkv.weight", safetensors.U32, []int{8192, 256}},
		{P + "mlp.gate.weight", safetensors.U32, []int{256, 512}},
		{P + "linear_attn.conv1d.weight", safetensors.BF16, []int{8192, 4, 1}},
		{"language_model.lm_head.weight", safetensors.U32, []int{248320, 256}},
		// the rest of the table
		{P + "linear_attn.out_proj.scales", safetensors.BF16, []int{2048, 64}},
		{P + "linear_attn.A_log", safetensors.BF16, []int{32}},
		{P + "linear_attn.norm.weight", safetensors.BF16, []int{128}},
		{P + "mlp.shared_expert_gate.weight", safetensors.U32, []int{1, 512}},
		{P + "mlp.switch_mlp.gate_proj.weight", safetensors.U32, []int{256, 512, 256}},
		{P + "mlp.switch_mlp.down_proj.weight", safetensors.U32, []int{256, 2048, 64}},
		{P + "mlp.switch_mlp.down_proj.biases", safetensors.BF16, []int{256, 2048, 8}},
		{P + "mlp.shared_expert.down_proj.weight", safetensors.U32, []int{2048, 64}},
		{"language_model.model.layers.3.self_attn.q_proj.weight", safetensors.U32, []int{8192, 256}},
		{"language_model.model.layers.3.self_attn.o_proj.scales", safetensors.BF16, []int{2048, 64}},
		{"language_model.model.layers.3.self_attn.k_norm.weight", safetensors.BF16, []int{256}},
		{"language_model.model.norm.weight", safetensors.BF16, []int{2048}},
	}
	for _, w := range want {
		x, ok := m[w.name]
		if assert.True(t, ok, w.name) {
			assert.Equal(t, w.dtype, x.DType, w.name)
			assert.Equal(t, w.shape, x.Shape, w.name)
		}
	}
	// One routed expert is 3 x (524,288 packed + 65,536 scales/biases) bytes (model.md §2.3).
	var experts int64
	for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
		for _, part := range []string{"weight", "scales", "biases"} {
			experts += m[P+"mlp.switch_mlp."+proj+"."+part].Bytes()
		}
	}
	assert.Equal(t, int64(1_769_472), experts/256)
	_, hasAttn := m[P+"self_attn.q_proj.weight"]
	assert.False(t, hasAttn, "layer 0 is a DeltaNet layer")
}

// hfParams counts the text-model parameters of c from the shapes in model.md §2.1.
func hfParams(c Config) int64 {
	H, V := int64(c.HiddenSize), int64(c.VocabSize)
	conv, vd, hv := int64(c.ConvDim()), int64(c.ValueDim()), int64(c.LinearNumValueHeads)
	qd, kvd, D := int64(c.NumHeads*c.HeadDim), int64(c.NumKVHeads*c.HeadDim), int64(c.HeadDim)
	E, I, Is := int64(c.NumExperts), int64(c.MoEIntermediate), int64(c.SharedIntermediate)
	n := 2*V*H + H
	for i := range c.NumLayers {
		if c.IsFullAttention(i) {
			n += 2*qd*H + 2*kvd*H + H*qd + 2*D
		} else {
			n += conv*H + vd*H + 2*hv*H + conv*int64(c.LinearConvKernel) + 2*hv + int64(c.LinearValueHeadDim) + H*vd
		}
		n += 2*H + E*H + E*2*I*H + E*H*I + 3*Is*H + H
	}
	return n
}

func TestQwenHFPlan(t *testing.T) {
	c := mustPreset(t, PresetQwen)
	p := mustPlan(t, c, LayoutHF, 0)
	m := tensorsByName(t, p)
	for _, x := range m {
		assert.Equal(t, safetensors.BF16, x.DType, x.Name)
	}
	assert.Equal(t, 2*hfParams(c), p.TotalBytes())
	for _, s := range p.Shards {
		assert.LessOrEqual(t, s.Bytes(), int64(DefaultHFShardBytes), s.File)
	}
	const P = "model.language_model.layers.0."
	shapes := map[string][]int{
		"lm_head.weight":                                         {248320, 2048},
		"model.language_model.norm.weight":                       {2048},
		P + "mlp.experts.gate_up_proj":                           {256, 1024, 2048},
		P + "mlp.experts.down_proj":                              {256, 2048, 512},
		P + "linear_attn.conv1d.weight":                          {8192, 1, 4},
		P + "linear_attn.A_log":                                  {32},
		P + "linear_attn.in_proj_b.weight":                       {32, 2048},
		P + "mlp.shared_expert_gate.weight":                      {1, 2048},
		"model.language_model.layers.39.self_attn.q_proj.weight": {8192, 2048},
		"model.language_model.layers.39.self_attn.k_proj.weight": {512, 2048},
	}
	for name, shape := range shapes {
		if assert.Contains(t, m, name) {
			assert.Equal(t, shape, m[name].Shape, name)
		}
	}
}

func TestPlanLayers(t *testing.T) {
	for _, preset := range PresetNames() {
		c, err := mustPreset(t, preset).WithLayers(5)
		require.NoError(t, err)
		assert.Equal(t, []string{"linear_attention", "linear_attention", "linear_attention", "full_attention",
			"linear_attention"}, c.LayerTypes())
		for _, l := range []Layout{LayoutHF, LayoutMLX} {
			m := tensorsByName(t, mustPlan(t, c, l, 0))
			layers := map[string]bool{}
			attn := 0
			for name := range m {
				if _, rest, ok := strings.Cut(name, "layers."); ok {
					n, _, _ := strings.Cut(rest, ".")
					layers[n] = true
					if strings.Contains(name, "self_attn.") {
						assert.Equal(t, "3", n, "only layer 3 is full attention: %s", name)
						attn++
					}
					if strings.Contains(name, "linear_attn.") {
						assert.NotEqual(t, "3", n, "layer 3 is not DeltaNet: %s", name)
					}
				}
			}
			assert.Equal(t, map[string]bool{"0": true, "1": true, "2": true, "3": true, "4": true}, layers, "%s %v", preset, l)
			assert.Positive(t, attn, "layer 3 has attention tensors")
		}
	}
	_, err := mustPreset(t, PresetTiny).WithLayers(0)
	assert.ErrorContains(t, err, "at least 1")
	_, err = mustPreset(t, PresetTiny).WithLayers(-3)
	assert.Error(t, err)
}

func TestQwenMLXLayersScale(t *testing.T) {
	// Per-layer bytes are the same for every group of four layers, so 4 layers cost a tenth of 40
	// layers' layer bytes; embedding, lm_head and the final norm are shared.
	full := mustPlan(t, mustPreset(t, PresetQwen), LayoutMLX, 0).TotalBytes()
	c4, err := mustPreset(t, PresetQwen).WithLayers(4)
	require.NoError(t, err)
	four := mustPlan(t, c4, LayoutMLX, 0).TotalBytes()
	c8, err := mustPreset(t, PresetQwen).WithLayers(8)
	require.NoError(t, err)
	eight := mustPlan(t, c8, LayoutMLX, 0).TotalBytes()
	perGroup := eight - four
	assert.Equal(t, full, four+9*perGroup)
}

func TestPlanShardsSmallLimit(t *testing.T) {
	c := mustPreset(t, PresetTiny)
	const limit = 300_000
	p := mustPlan(t, c, LayoutMLX, limit)
	whole := mustPlan(t, c, LayoutMLX, 0)
	require.Len(t, whole.Shards, 1)
	assert.Greater(t, len(p.Shards), 3)
	assert.Equal(t, whole.TotalBytes(), p.TotalBytes())
	assert.Equal(t, whole.NumTensors(), p.NumTensors())
	for i, s := range p.Shards {
		assert.Equal(t, ShardName(i, len(p.Shards)), s.File)
		if len(s.Tensors) > 1 {
			assert.LessOrEqual(t, s.Bytes(), int64(limit), s.File)
		}
		for j := 1; j < len(s.Tensors); j++ {
			a, b := s.Tensors[j-1], s.Tensors[j]
			ordered := a.DType.Size() > b.DType.Size() || (a.DType.Size() == b.DType.Size() && a.Name < b.Name)
			assert.True(t, ordered, "%s: %s before %s", s.File, a.Name, b.Name)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	c := mustPreset(t, PresetTiny)
	_, err := NewPlan(c, Layout(9), 0)
	assert.ErrorContains(t, err, "layout")
	_, err = NewPlan(c, LayoutMLX, -1)
	assert.Error(t, err)

	bad := c
	bad.HiddenSize = 100 // not a multiple of 64
	_, err = NewPlan(bad, LayoutMLX, 0)
	assert.ErrorContains(t, err, "group size")
	bad = c
	bad.NumKVHeads = 3
	_, err = NewPlan(bad, LayoutHF, 0)
	assert.ErrorContains(t, err, "num_key_value_heads")
	bad = c
	bad.VocabSize = 1000
	_, err = NewPlan(bad, LayoutHF, 0)
	assert.ErrorContains(t, err, "tokenizer")
	bad = c
	bad.MRopeSection = []int{1, 1}
	_, err = NewPlan(bad, LayoutHF, 0)
	assert.ErrorContains(t, err, "mrope_section")
	bad = c
	bad.NumExperts = 0
	_, err = NewPlan(bad, LayoutHF, 0)
	assert.ErrorContains(t, err, "num_experts")

	_, err = Preset("qwen3-huge")
	assert.ErrorContains(t, err, "unknown preset")
	_, err = ParseLayout("gguf")
	assert.ErrorContains(t, err, "unknown layout")
	l, err := ParseLayout("mlx")
	require.NoError(t, err)
	assert.Equal(t, "mlx", l.String())
}
