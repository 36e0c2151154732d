package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/safetensors"
)

// editSpec returns an edit that applies f to the spec called name.
func editSpec(name string, f func(*checkpointtest.Spec)) func([]checkpointtest.Spec) []checkpointtest.Spec {
	return func(specs []checkpointtest.Spec) []checkpointtest.Spec {
		for i := range specs {
			if specs[i].Name == name {
				f(&specs[i])
			}
		}
		return specs
	}
}

// dropSpec returns an edit that removes the spec called name.
func dropSpec(name string) func([]checkpointtest.Spec) []checkpointtest.Spec {
	return func(specs []checkpointtest.Spec) []checkpointtest.Spec {
		var out []checkpointtest.Spec
		for _, s := range specs {
			if s.Name != name {
				out = append(out, s)
			}
		}
		return out
	}
}

func TestOpenRejectsBadTensors(t *testing.T) {
	const hfL0 = "model.language_model.layers.0."
	const mlxL1 = "language_model.model.layers.1."
	cases := []struct {
		name, layout string
		edit         func([]checkpointtest.Spec) []checkpointtest.Spec
		want         []string
	}{
		{"missing tensor", "hf", dropSpec(hfL0 + "linear_attn.in_proj_z.weight"),
			[]string{`tensor "` + hfL0 + `linear_attn.in_proj_z.weight" missing`}},
		{"missing norm", "mlx", dropSpec(mlxL1 + "post_attention_layernorm.weight"),
			[]string{`tensor "` + mlxL1 + `post_attention_layernorm.weight" missing`}},
		{"missing scales", "mlx", dropSpec(mlxL1 + "mlp.switch_mlp.down_proj.biases"),
			[]string{`tensor "` + mlxL1 + `mlp.switch_mlp.down_proj.biases" missing`}},
		{"missing experts", "hf", dropSpec(hfL0 + "mlp.experts.gate_up_proj"),
			[]string{`tensor "` + hfL0 + `mlp.experts.gate_up_proj" missing`}},
		{"wrong shape", "hf", editSpec(hfL0+"mlp.shared_expert.down_proj.weight", func(s *checkpointtest.Spec) { s.Shape = []int{64, 16} }),
			[]string{`tensor "` + hfL0 + `mlp.shared_expert.down_proj.weight"`, "shape [64 16], want [64 32]"}},
		{"wrong vector shape", "hf", editSpec(hfL0+"linear_attn.A_log", func(s *checkpointtest.Spec) { s.Shape = []int{5} }),
			[]string{`tensor "` + hfL0 + `linear_attn.A_log"`, "want [4]"}},
		{"wrong dtype", "hf", editSpec(hfL0+"linear_attn.in_proj_a.weight", func(s *checkpointtest.Spec) { s.DType = safetensors.I32 }),
			[]string{`tensor "` + hfL0 + `linear_attn.in_proj_a.weight"`, "dtype I32"}},
		{"wrong bits", "mlx", editSpec(mlxL1+"mlp.gate.weight", func(s *checkpointtest.Spec) { s.Shape = []int{8, 8} }),
			[]string{`tensor "` + mlxL1 + `mlp.gate.weight"`, "mean 4-bit", "config.json says 8-bit"}},
		{"wrong scales shape", "mlx", editSpec(mlxL1+"linear_attn.in_proj_b.scales", func(s *checkpointtest.Spec) { s.Shape = []int{4, 1} }),
			[]string{`tensor "` + mlxL1 + `linear_attn.in_proj_b`}},
		{"conv layout mixed", "mlx", editSpec(mlxL1+"linear_attn.conv1d.weight", func(s *checkpointtest.Spec) { s.Shape = []int{128, 1, 4} }),
			[]string{`tensor "` + mlxL1 + `linear_attn.conv1d.weight"`, "want [128 4 1] (mlx layout)"}},
		{"extra for layer", "hf", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			return append(s, checkpointtest.Spec{Name: hfL0 + "self_attn.q_proj.weight", DType: safetensors.BF16, Shape: []int{256, 64}})
		}, []string{`unexpected tensor "` + hfL0 + `self_attn.q_proj.weight"`, "layer 0 is linear_attention"}},
		{"extra layer", "mlx", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			return append(s, checkpointtest.Spec{Name: "language_model.model.layers.4.input_layernorm.weight", DType: safetensors.BF16, Shape: []int{64}})
		}, []string{`unexpected tensor "language_model.model.layers.4.input_layernorm.weight"`, "config.json has 4 layers"}},
		{"negative layer", "hf", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			return append(s, checkpointtest.Spec{Name: "model.language_model.layers.-1.input_layernorm.weight", DType: safetensors.BF16, Shape: []int{64}})
		}, []string{`unexpected tensor "model.language_model.layers.-1.input_layernorm.weight"`}},
		{"per-expert layout", "hf", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			s = dropSpec(hfL0 + "mlp.experts.gate_up_proj")(s)
			return append(s, checkpointtest.Spec{Name: hfL0 + "mlp.experts.0.gate_proj.weight", DType: safetensors.BF16, Shape: []int{32, 64}})
		}, []string{`tensor "` + hfL0 + `mlp.experts.0.gate_proj.weight"`, "per-expert MoE weights are not supported"}},
		{"no experts", "mlx", dropSpec(mlxL1 + "mlp.switch_mlp.gate_proj.weight"),
			[]string{`tensor "language_model.model.layers.1.mlp.experts.gate_up_proj" missing (or "` + mlxL1 + `mlp.switch_mlp.gate_proj.weight"; layer 1`}},
		{"no lm_head", "mlx", dropSpec("language_model.lm_head.weight"),
			[]string{`tensor "lm_head.weight" missing (or "language_model.lm_head.weight"; tie_word_embeddings is false)`}},
		{"two lm_heads", "hf", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			return append(s, checkpointtest.Spec{Name: "language_model.lm_head.weight", DType: safetensors.BF16, Shape: []int{256, 64}})
		}, []string{`lm_head stored as both "lm_head.weight" and "language_model.lm_head.weight"`}},
		{"two prefixes", "hf", func(s []checkpointtest.Spec) []checkpointtest.Spec {
			return append(s, checkpointtest.Spec{Name: "model.embed_tokens.weight", DType: safetensors.BF16, Shape: []int{256, 64}})
		}, []string{`embed_tokens.weight under prefixes ["model.language_model." "model."]`}},
		{"no embedding", "mlx", dropSpec("language_model.model.embed_tokens.weight"),
			[]string{`tensor "model.language_model.embed_tokens.weight" missing: no embed_tokens.weight under any known prefix`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(writeTiny(t, c.layout, 2, c.edit))
			errHas(t, err, c.want...)
		})
	}
}

func TestOpenRejectsConfigDisagreeingWithTensors(t *testing.T) {
	d := checkpointtest.Tiny()
	for _, c := range []struct {
		name string
		edit func(top, text map[string]any)
		want string
	}{
		{"hidden size", func(_, text map[string]any) { text["hidden_size"] = 128 }, "shape [256 8], want [256 16]"},
		{"experts", func(_, text map[string]any) { text["num_experts"] = 4 }, "shape [8 16], want [4 16]"},
		{"layer types", func(_, text map[string]any) {
			text["layer_types"] = []string{"full_attention", "linear_attention", "linear_attention", "full_attention"}
		}, `layers.0.self_attn.q_proj.weight" missing`},
		{"bits", func(top, _ map[string]any) {
			top["quantization"] = map[string]any{"bits": 8, "group_size": 32}
		}, "config.json says 8-bit"},
		{"unquantized", func(top, _ map[string]any) { delete(top, "quantization"); delete(top, "quantization_config") },
			"config.json has no quantization"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTiny(t, "mlx", 1, nil)
			cfg := editConfig(t, d.ConfigJSON("mlx"), c.edit)
			noErr(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
			_, err := Open(dir)
			errHas(t, err, c.want)
		})
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	t.Run("truncated shard", func(t *testing.T) {
		dir := writeTiny(t, "hf", 3, nil)
		p := filepath.Join(dir, "model-00002-of-00003.safetensors")
		st, err := os.Stat(p)
		noErr(t, err)
		noErr(t, os.Truncate(p, st.Size()-100))
		_, err = Open(dir)
		errHas(t, err, p, "truncated")
	})
	t.Run("bad header", func(t *testing.T) {
		dir := writeTiny(t, "mlx", 1, nil)
		p := filepath.Join(dir, "model.safetensors")
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		noErr(t, err)
		_, err = f.WriteAt(binary.LittleEndian.AppendUint64(nil, 1<<40), 0)
		noErr(t, err)
		noErr(t, f.Close())
		_, err = Open(dir)
		errHas(t, err, p, "header length")
	})
	t.Run("bad header json", func(t *testing.T) {
		dir := writeTiny(t, "mlx", 1, nil)
		p := filepath.Join(dir, "model.safetensors")
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		noErr(t, err)
		_, err = f.WriteAt([]byte("[ "), 8)
		noErr(t, err)
		noErr(t, f.Close())
		_, err = Open(dir)
		errHas(t, err, p, "JSON")
	})
	t.Run("no weights", func(t *testing.T) {
		dir := t.TempDir()
		noErr(t, os.WriteFile(filepath.Join(dir, "config.json"), checkpointtest.Tiny().ConfigJSON("hf"), 0o644))
		_, err := Open(dir)
		errHas(t, err, "no model.safetensors.index.json or model.safetensors")
	})
	t.Run("index lists absent tensor", func(t *testing.T) {
		dir := writeTiny(t, "hf", 2, nil)
		editIndex(t, dir, func(m map[string]string) { m["model.language_model.extra"] = "model-00001-of-00002.safetensors" })
		_, err := Open(dir)
		errHas(t, err, `tensor "model.language_model.extra"`, "does not hold it")
	})
	t.Run("index misses tensor", func(t *testing.T) {
		dir := writeTiny(t, "hf", 2, nil)
		editIndex(t, dir, func(m map[string]string) { delete(m, "lm_head.weight") })
		_, err := Open(dir)
		errHas(t, err, `tensor "lm_head.weight"`, "not listed")
	})
	t.Run("index escapes dir", func(t *testing.T) {
		dir := writeTiny(t, "hf", 2, nil)
		editIndex(t, dir, func(m map[string]string) { m["lm_head.weight"] = "../x.safetensors" })
		_, err := Open(dir)
		errHas(t, err, `bad shard file name "../x.safetensors"`)
	})
	t.Run("missing shard", func(t *testing.T) {
		dir := writeTiny(t, "hf", 2, nil)
		noErr(t, os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors")))
		_, err := Open(dir)
		errHas(t, err, "model-00002-of-00002.safetensors")
	})
}

func editIndex(t *testing.T, dir string, edit func(map[string]string)) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors.index.json")
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	b, err := os.ReadFile(p)
	noErr(t, err)
	noErr(t, json.Unmarshal(b, &idx))
	edit(idx.WeightMap)
	b, err = json.Marshal(idx)
	noErr(t, err)
	noErr(t, os.WriteFile(p, b, 0o644))
}
