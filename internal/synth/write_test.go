package synth

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lily-engine/lily/fixtures"
)

// headerEntry is one tensor of a safetensors header, parsed here independently of the writer.
type headerEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// readShard parses a written shard: its tensors and its data section.
func readShard(t *testing.T, path string) (map[string]headerEntry, map[string]string, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 8, path)
	n := binary.LittleEndian.Uint64(b[:8])
	require.Zero(t, n%8, "%s: header length %d is not a multiple of 8", path, n)
	require.LessOrEqual(t, n, uint64(len(b)-8))
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b[8:8+n], &raw), path)
	var meta map[string]string
	entries := map[string]headerEntry{}
	for k, v := range raw {
		if k == "__metadata__" {
			require.NoError(t, json.Unmarshal(v, &meta))
			continue
		}
		var e headerEntry
		require.NoError(t, json.Unmarshal(v, &e), k)
		entries[k] = e
	}
	return entries, meta, b[8+n:]
}

type indexFile struct {
	Metadata struct {
		TotalSize int64 `json:"total_size"`
	} `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// checkCheckpoint verifies every file of a written checkpoint against its plan and returns the
// tensors' bytes by name.
func checkCheckpoint(t *testing.T, p *Plan, dir string) map[string][]byte {
	t.Helper()
	var idx indexFile
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &idx))

	format := map[Layout]string{LayoutHF: "pt", LayoutMLX: "mlx"}[p.Layout]
	data := map[string][]byte{}
	var total int64
	for _, s := range p.Shards {
		entries, meta, body := readShard(t, filepath.Join(dir, s.File))
		assert.Equal(t, map[string]string{"format": format}, meta, s.File)
		require.Len(t, entries, len(s.Tensors), s.File)
		var end int64
		for _, x := range s.Tensors {
			e, ok := entries[x.Name]
			require.True(t, ok, "%s: %s missing", s.File, x.Name)
			assert.Equal(t, x.DType.String(), e.DType, x.Name)
			assert.Equal(t, x.Shape, e.Shape, x.Name)
			require.Len(t, e.DataOffsets, 2, x.Name)
			assert.Equal(t, end, e.DataOffsets[0], "%s starts where the previous tensor ends", x.Name)
			assert.Equal(t, x.Bytes(), e.DataOffsets[1]-e.DataOffsets[0], x.Name)
			assert.Zero(t, e.DataOffsets[0]%int64(x.DType.Size()), "%s is aligned", x.Name)
			end = e.DataOffsets[1]
			data[x.Name] = body[e.DataOffsets[0]:e.DataOffsets[1]]
			assert.Equal(t, s.File, idx.WeightMap[x.Name], "index places %s", x.Name)
		}
		assert.Equal(t, end, int64(len(body)), "%s: data section is exactly the tensors", s.File)
		total += end
	}
	assert.Len(t, idx.WeightMap, len(data), "index lists exactly the tensors")
	assert.Equal(t, total, idx.Metadata.TotalSize)
	assert.Equal(t, p.TotalBytes(), total)

	for name, want := range map[string][]byte{
		"tokenizer.json":        fixtures.TinyTokenizerJSON,
		"tokenizer_config.json": fixtures.TinyTokenizerConfigJSON,
		"chat_template.jinja":   []byte(fixtures.ChatTemplate),
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
	var gen struct {
		BOS int   `json:"bos_token_id"`
		EOS []int `json:"eos_token_id"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "generation_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &gen))
	assert.Equal(t, 4256, gen.BOS)
	assert.Equal(t, []int{4258, 4256}, gen.EOS)
	return data
}

// realConfig is the part of config.json a loader reads, parsed independently of ConfigJSON.
type realConfig struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`
	TextConfig    struct {
		ModelType      string   `json:"model_type"`
		HiddenSize     int      `json:"hidden_size"`
		NumLayers      int      `json:"num_hidden_layers"`
		LayerTypes     []string `json:"layer_types"`
		VocabSize      int      `json:"vocab_size"`
		HeadDim        int      `json:"head_dim"`
		NumExperts     int      `json:"num_experts"`
		TopK           int      `json:"num_experts_per_tok"`
		RMSNormEps     float64  `json:"rms_norm_eps"`
		PartialRotary  float64  `json:"partial_rotary_factor"`
		RopeParameters struct {
			RopeTheta     float64 `json:"rope_theta"`
			PartialRotary float64 `json:"partial_rotary_factor"`
			MRopeSection  []int   `json:"mrope_section"`
		} `json:"rope_parameters"`
		TieWordEmbeddings *bool `json:"tie_word_embeddings"`
	} `json:"text_config"`
	VisionConfig       map[string]any             `json:"vision_config"`
	Quantization       map[string]json.RawMessage `json:"quantization"`
	QuantizationConfig map[string]json.RawMessage `json:"quantization_config"`
}

func readConfig(t *testing.T, dir string) realConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var c realConfig
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

func writeTiny(t *testing.T, l Layout, maxShard int64, opt Options) (*Plan, string) {
	t.Helper()
	p := mustPlan(t, mustPreset(t, PresetTiny), l, maxShard)
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, Write(context.Background(), p, dir, opt))
	return p, dir
}

func TestWriteTinyHF(t *testing.T) {
	p, dir := writeTiny(t, LayoutHF, 0, Options{Seed: 1})
	data := checkCheckpoint(t, p, dir)
	assert.Contains(t, data, "lm_head.weight")
	assert.Contains(t, data, "model.language_model.layers.0.mlp.experts.gate_up_proj")

	c := readConfig(t, dir)
	assert.Equal(t, []string{"Qwen3_5MoeForConditionalGeneration"}, c.Architectures)
	assert.Equal(t, "qwen3_5_moe", c.ModelType)
	tc := c.TextConfig
	assert.Equal(t, "qwen3_5_moe_text", tc.ModelType)
	assert.Equal(t, 128, tc.HiddenSize)
	assert.Equal(t, 8, tc.NumLayers)
	assert.Equal(t, "full_attention", tc.LayerTypes[3])
	assert.Equal(t, "full_attention", tc.LayerTypes[7])
	assert.Equal(t, "linear_attention", tc.LayerTypes[6])
	assert.Equal(t, 4352, tc.VocabSize)
	assert.Equal(t, 1e-6, tc.RMSNormEps)
	assert.Equal(t, 0.25, tc.PartialRotary)
	assert.Equal(t, 1e7, tc.RopeParameters.RopeTheta)
	assert.Equal(t, 0.25, tc.RopeParameters.PartialRotary)
	assert.Equal(t, []int{3, 3, 2}, tc.RopeParameters.MRopeSection)
	require.NotNil(t, tc.TieWordEmbeddings)
	assert.False(t, *tc.TieWordEmbeddings)
	assert.NotEmpty(t, c.VisionConfig)
	assert.Nil(t, c.Quantization, "the HF layout is not quantized")
	assert.Nil(t, c.QuantizationConfig)
}

func TestWriteTinyMLX(t *testing.T) {
	p, dir := writeTiny(t, LayoutMLX, 0, Options{Seed: 1})
	data := checkCheckpoint(t, p, dir)
	assert.Contains(t, data, "language_model.lm_head.scales")

	c := readConfig(t, dir)
	require.NotNil(t, c.Quantization)
	assert.Equal(t, c.Quantization, c.QuantizationConfig, "quantization_config is an identical copy")
	var gs, bits int
	var mode string
	require.NoError(t, json.Unmarshal(c.Quantization["group_size"], &gs))
	require.NoError(t, json.Unmarshal(c.Quantization["bits"], &bits))
	require.NoError(t, json.Unmarshal(c.Quantization["mode"], &mode))
	assert.Equal(t, []any{64, 4, "affine"}, []any{gs, bits, mode})
	assert.Len(t, c.Quantization, 3+2*8, "global fields plus two overrides per layer")
	for i := range 8 {
		for _, m := range []string{"mlp.gate", "mlp.shared_expert_gate"} {
			key := "language_model.model.layers." + strconv.Itoa(i) + "." + m
			raw, ok := c.Quantization[key]
			if assert.True(t, ok, key) {
				assert.JSONEq(t, `{"group_size":64,"bits":8}`, string(raw), key)
			}
		}
	}
	// The bits implied by the shapes agree with the config: bits = 32*packed_cols/(groups*group_size).
	byName := tensorsByName(t, p)
	for name, x := range byName {
		if module, ok := strings.CutSuffix(name, ".scales"); ok {
			w := byName[module+".weight"]
			packed, groups := w.Shape[len(w.Shape)-1], x.Shape[len(x.Shape)-1]
			want := 4
			if strings.HasSuffix(module, "mlp.gate") || strings.HasSuffix(module, "shared_expert_gate") {
				want = 8
			}
			assert.Equal(t, want, 32*packed/(groups*64), name)
		}
	}
}

func TestWriteManyShards(t *testing.T) {
	p, dir := writeTiny(t, LayoutHF, 200_000, Options{Seed: 3})
	require.Greater(t, len(p.Shards), 3)
	checkCheckpoint(t, p, dir)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, len(p.Shards)+6, "shards, index, config, generation config, tokenizer x2, template")
}

func TestWriteDeterministic(t *testing.T) {
	p, a := writeTiny(t, LayoutMLX, 0, Options{Seed: 42, Workers: 1})
	_, b := writeTiny(t, LayoutMLX, 0, Options{Seed: 42, Workers: 4})
	_, c := writeTiny(t, LayoutMLX, 0, Options{Seed: 43})
	for _, s := range p.Shards {
		fa, err := os.ReadFile(filepath.Join(a, s.File))
		require.NoError(t, err)
		fb, err := os.ReadFile(filepath.Join(b, s.File))
		require.NoError(t, err)
		fc, err := os.ReadFile(filepath.Join(c, s.File))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(fa, fb), "same seed, different worker counts: identical %s", s.File)
		assert.False(t, bytes.Equal(fa, fc), "different seeds differ: %s", s.File)
	}
	// Distinct tensors of the same shape get distinct values.
	data := checkCheckpoint(t, p, a)
	const l = "language_model.model.layers.0.mlp.shared_expert."
	assert.NotEqual(t, data[l+"gate_proj.weight"], data[l+"up_proj.weight"])
	assert.NotEqual(t, data[l+"gate_proj.scales"], data[l+"up_proj.scales"])
}

func TestWriteRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	p := mustPlan(t, mustPreset(t, PresetTiny), LayoutMLX, 0)
	err := Write(context.Background(), p, dir, Options{})
	assert.ErrorContains(t, err, "not empty")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.Error(t, Write(context.Background(), p, file, Options{}))
}

func TestWriteCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := mustPlan(t, mustPreset(t, PresetTiny), LayoutMLX, 0)
	dir := filepath.Join(t.TempDir(), "ckpt")
	err := Write(ctx, p, dir, Options{})
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, p.Shards[0].Tensors[0].Name, "the error names the tensor")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "the partial shard is removed and no config is written")
}

func TestWriteRejectsBadInit(t *testing.T) {
	p := mustPlan(t, mustPreset(t, PresetTiny), LayoutHF, 0)
	p.Shards[0].Tensors[0].Init = Init{}
	dir := filepath.Join(t.TempDir(), "a")
	err := Write(context.Background(), p, dir, Options{})
	assert.ErrorContains(t, err, "unknown init kind")
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "a bad plan is rejected before anything is created")

	p = mustPlan(t, mustPreset(t, PresetTiny), LayoutMLX, 0)
	p.Shards[0].Tensors[0].Init = Init{Kind: InitUniform, Lo: -1, Hi: 1} // a U32 tensor
	err = Write(context.Background(), p, filepath.Join(t.TempDir(), "b"), Options{})
	assert.ErrorContains(t, err, "generates BF16")
}

func TestConfigJSONTextFields(t *testing.T) {
	p := mustPlan(t, mustPreset(t, PresetQwen), LayoutHF, 0)
	b, err := p.ConfigJSON()
	require.NoError(t, err)
	var cfg struct {
		TextConfig map[string]json.RawMessage `json:"text_config"`
	}
	require.NoError(t, json.Unmarshal(b, &cfg))
	// every text_config field of model.md §1.1, except norm_topk_prob, which the real config omits
	for _, f := range []string{"model_type", "hidden_size", "num_hidden_layers", "layer_types",
		"full_attention_interval", "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim",
		"attention_bias", "attn_output_gate", "linear_num_key_heads", "linear_num_value_heads",
		"linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "mamba_ssm_dtype",
		"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
		"hidden_act", "rms_norm_eps", "max_position_embeddings", "rope_parameters", "partial_rotary_factor",
		"tie_word_embeddings", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "bos_token_id",
		"eos_token_id", "pad_token_id", "router_aux_loss_coef", "output_router_logits", "initializer_range",
		"attention_dropout", "use_cache", "dtype"} {
		assert.Contains(t, cfg.TextConfig, f)
	}
	assert.NotContains(t, cfg.TextConfig, "norm_topk_prob")
	assert.JSONEq(t, `{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25,
		"mrope_section":[11,11,10],"mrope_interleaved":true}`, string(cfg.TextConfig["rope_parameters"]))
	assert.Contains(t, string(b), `"rope_theta": 10000000,`, "written as an integer, like the real config")
	var types []string
	require.NoError(t, json.Unmarshal(cfg.TextConfig["layer_types"], &types))
	require.Len(t, types, 40)
	for i, ty := range types {
		want := "linear_attention"
		if i%4 == 3 {
			want = "full_attention"
		}
		assert.Equal(t, want, ty, "layer %d", i)
	}
	var ids [2]int
	require.NoError(t, json.Unmarshal(cfg.TextConfig["bos_token_id"], &ids[0]))
	require.NoError(t, json.Unmarshal(cfg.TextConfig["eos_token_id"], &ids[1]))
	assert.Equal(t, [2]int{4256, 4256}, ids, "<|endoftext|> of the bundled tokenizer")
}
