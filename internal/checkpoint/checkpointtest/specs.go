// Package checkpointtest builds small Qwen3.6-architecture checkpoints on disk for tests, in the
// real HF and MLX layouts (model.md §2). It is for tests only: it writes whole files in memory
// and makes no attempt at speed.
package checkpointtest

import (
	"encoding/json"
	"fmt"

	"github.com/lily-engine/lily/internal/safetensors"
)

// Dims are the sizes of a model to synthesize (names as in model.md §1.2).
type Dims struct {
	H, Layers, Interval, Vocab int
	Hq, Hkv, D                 int
	Hk, Hv, Dk, Dv, K          int
	E, TopK, I, Is             int
	Bits, GroupSize            int // MLX quantization: global bits and group size
	GateBits                   int // bits of mlp.gate and mlp.shared_expert_gate (8 in the real model)
}

// Tiny is a 4-layer model (3 GDN + 1 attention) small enough to write in milliseconds.
func Tiny() Dims {
	return Dims{H: 64, Layers: 4, Interval: 4, Vocab: 256, Hq: 4, Hkv: 2, D: 32,
		Hk: 2, Hv: 4, Dk: 16, Dv: 16, K: 4, E: 8, TopK: 2, I: 32, Is: 32, Bits: 4, GroupSize: 32, GateBits: 8}
}

// Real is Qwen3.6-35B-A3B as published (model.md §1) with the mlx-community 4-bit settings.
func Real() Dims {
	return Dims{H: 2048, Layers: 40, Interval: 4, Vocab: 248320, Hq: 16, Hkv: 2, D: 256,
		Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4, E: 256, TopK: 8, I: 512, Is: 512, Bits: 4, GroupSize: 64, GateBits: 8}
}

// Spec is one tensor of a synthesized checkpoint.
type Spec struct {
	Name  string
	DType safetensors.DType
	Shape []int
}

// ConvDim is 2*Hk*Dk + Hv*Dv.
func (d Dims) ConvDim() int { return 2*d.Hk*d.Dk + d.Hv*d.Dv }

// IsFull reports whether layer i is full attention.
func (d Dims) IsFull(i int) bool { return (i+1)%d.Interval == 0 }

// Specs lists every text-model tensor of the "hf" (bf16) or "mlx" (quantized) layout.
func (d Dims) Specs(layout string) []Spec {
	mlx := layout == "mlx"
	var out []Spec
	vec := func(name string, shape ...int) { out = append(out, Spec{name, safetensors.BF16, shape}) }
	// mat adds a linear module [lead..., rows, in]: bf16 .weight for HF (or the bare name for
	// HF fused experts), U32 weight + BF16 scales/biases for MLX.
	mat := func(path string, bits int, bare bool, shape ...int) {
		if !mlx {
			name := path + ".weight"
			if bare {
				name = path
			}
			out = append(out, Spec{name, safetensors.BF16, shape})
			return
		}
		n := len(shape)
		w := append(append([]int{}, shape[:n-1]...), shape[n-1]*bits/32)
		s := append(append([]int{}, shape[:n-1]...), shape[n-1]/d.GroupSize)
		out = append(out, Spec{path + ".weight", safetensors.U32, w},
			Spec{path + ".scales", safetensors.BF16, s}, Spec{path + ".biases", safetensors.BF16, s})
	}
	p, head := "model.language_model.", "lm_head"
	if mlx {
		p, head = "language_model.model.", "language_model.lm_head"
	}
	b, gb := d.Bits, d.GateBits
	mat(p+"embed_tokens", b, false, d.Vocab, d.H)
	mat(head, b, false, d.Vocab, d.H)
	vec(p+"norm.weight", d.H)
	for i := 0; i < d.Layers; i++ {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		vec(l+"input_layernorm.weight", d.H)
		vec(l+"post_attention_layernorm.weight", d.H)
		if d.IsFull(i) {
			a := l + "self_attn."
			mat(a+"q_proj", b, false, 2*d.Hq*d.D, d.H)
			mat(a+"k_proj", b, false, d.Hkv*d.D, d.H)
			mat(a+"v_proj", b, false, d.Hkv*d.D, d.H)
			mat(a+"o_proj", b, false, d.H, d.Hq*d.D)
			vec(a+"q_norm.weight", d.D)
			vec(a+"k_norm.weight", d.D)
		} else {
			g := l + "linear_attn."
			mat(g+"in_proj_qkv", b, false, d.ConvDim(), d.H)
			mat(g+"in_proj_z", b, false, d.Hv*d.Dv, d.H)
			mat(g+"in_proj_b", b, false, d.Hv, d.H)
			mat(g+"in_proj_a", b, false, d.Hv, d.H)
			mat(g+"out_proj", b, false, d.H, d.Hv*d.Dv)
			if mlx {
				vec(g+"conv1d.weight", d.ConvDim(), d.K, 1)
			} else {
				vec(g+"conv1d.weight", d.ConvDim(), 1, d.K)
			}
			vec(g+"A_log", d.Hv)
			vec(g+"dt_bias", d.Hv)
			vec(g+"norm.weight", d.Dv)
		}
		m := l + "mlp."
		mat(m+"gate", gb, false, d.E, d.H)
		if mlx {
			mat(m+"switch_mlp.gate_proj", b, false, d.E, d.I, d.H)
			mat(m+"switch_mlp.up_proj", b, false, d.E, d.I, d.H)
			mat(m+"switch_mlp.down_proj", b, false, d.E, d.H, d.I)
		} else {
			mat(m+"experts.gate_up_proj", b, true, d.E, 2*d.I, d.H)
			mat(m+"experts.down_proj", b, true, d.E, d.H, d.I)
		}
		mat(m+"shared_expert.gate_proj", b, false, d.Is, d.H)
		mat(m+"shared_expert.up_proj", b, false, d.Is, d.H)
		mat(m+"shared_expert.down_proj", b, false, d.H, d.Is)
		mat(m+"shared_expert_gate", gb, false, 1, d.H)
	}
	return out
}

// ConfigJSON is a Qwen3_5MoeForConditionalGeneration config.json (text_config nested); for the
// "mlx" layout it carries the quantization block with the 8-bit router overrides, as mlx-lm
// writes it.
func (d Dims) ConfigJSON(layout string) []byte {
	types := make([]string, d.Layers)
	for i := range types {
		types[i] = "linear_attention"
		if d.IsFull(i) {
			types[i] = "full_attention"
		}
	}
	text := map[string]any{
		"model_type": "qwen3_5_moe_text", "hidden_size": d.H, "num_hidden_layers": d.Layers,
		"layer_types": types, "full_attention_interval": d.Interval, "vocab_size": d.Vocab,
		"num_attention_heads": d.Hq, "num_key_value_heads": d.Hkv, "head_dim": d.D,
		"linear_num_key_heads": d.Hk, "linear_num_value_heads": d.Hv, "linear_key_head_dim": d.Dk,
		"linear_value_head_dim": d.Dv, "linear_conv_kernel_dim": d.K, "num_experts": d.E,
		"num_experts_per_tok": d.TopK, "moe_intermediate_size": d.I, "shared_expert_intermediate_size": d.Is,
		"hidden_act": "silu", "rms_norm_eps": 1e-6, "max_position_embeddings": 262144,
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000000,
			"partial_rotary_factor": 0.25, "mrope_section": []int{11, 11, 10}, "mrope_interleaved": true},
		"partial_rotary_factor": 0.25, "tie_word_embeddings": false, "attention_bias": false,
		"bos_token_id": d.Vocab - 2, "eos_token_id": d.Vocab - 2,
	}
	top := map[string]any{"architectures": []string{"Qwen3_5MoeForConditionalGeneration"},
		"model_type": "qwen3_5_moe", "tie_word_embeddings": false, "text_config": text}
	if layout == "mlx" {
		q := map[string]any{"group_size": d.GroupSize, "bits": d.Bits, "mode": "affine"}
		for i := 0; i < d.Layers; i++ {
			for _, m := range []string{"mlp.gate", "mlp.shared_expert_gate"} {
				q[fmt.Sprintf("language_model.model.layers.%d.%s", i, m)] = map[string]int{"group_size": d.GroupSize, "bits": d.GateBits}
			}
		}
		top["quantization"], top["quantization_config"] = q, q
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		panic(err) // maps of plain values always marshal
	}
	return b
}
