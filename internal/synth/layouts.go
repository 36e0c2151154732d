package synth

import (
	"fmt"
	"slices"

	"github.com/lily-engine/lily/internal/safetensors"
)

// hfTensors lists the text-model tensors of the transformers bf16 checkpoint (model.md §2.1), in
// model order. The vision tower and the MTP head are not written.
//
// Shapes are [out, in]; stacked experts are [E, out, in]. Every matrix is uniform with standard
// deviation 1/sqrt(in); the layer norms are zero-centred (applied as 1+w).
func hfTensors(c Config) []Tensor {
	H, V := c.HiddenSize, c.VocabSize
	const p = "model.language_model."
	dense := func(name string, shape ...int) Tensor {
		return bf16Tensor(name, uniformStd(fanIn(shape[len(shape)-1])), shape...)
	}
	zeroCentred := func(name string, n int) Tensor { return bf16Tensor(name, around(0, normSpread), n) }

	ts := []Tensor{dense(p+"embed_tokens.weight", V, H)}
	for i := range c.NumLayers {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		ts = append(ts, zeroCentred(l+"input_layernorm.weight", H))
		if c.IsFullAttention(i) {
			a := l + "self_attn."
			ts = append(ts,
				dense(a+"q_proj.weight", 2*c.NumHeads*c.HeadDim, H), // query and output gate
				dense(a+"k_proj.weight", c.NumKVHeads*c.HeadDim, H),
				dense(a+"v_proj.weight", c.NumKVHeads*c.HeadDim, H),
				dense(a+"o_proj.weight", H, c.NumHeads*c.HeadDim),
				zeroCentred(a+"q_norm.weight", c.HeadDim),
				zeroCentred(a+"k_norm.weight", c.HeadDim))
		} else {
			a := l + "linear_attn."
			ts = append(ts,
				dense(a+"in_proj_qkv.weight", c.ConvDim(), H),
				dense(a+"in_proj_z.weight", c.ValueDim(), H),
				dense(a+"in_proj_b.weight", c.LinearNumValueHeads, H),
				dense(a+"in_proj_a.weight", c.LinearNumValueHeads, H),
				bf16Tensor(a+"conv1d.weight", uniformStd(fanIn(c.LinearConvKernel)), c.ConvDim(), 1, c.LinearConvKernel),
				bf16Tensor(a+"A_log", Init{Kind: InitLogUniform, Lo: aLogLo, Hi: aLogHi}, c.LinearNumValueHeads),
				bf16Tensor(a+"dt_bias", around(0, dtBiasSpread), c.LinearNumValueHeads),
				bf16Tensor(a+"norm.weight", around(1, normSpread), c.LinearValueHeadDim), // plain, not zero-centred
				dense(a+"out_proj.weight", H, c.ValueDim()))
		}
		ts = append(ts, zeroCentred(l+"post_attention_layernorm.weight", H))
		m := l + "mlp."
		ts = append(ts,
			dense(m+"gate.weight", c.NumExperts, H),
			dense(m+"experts.gate_up_proj", c.NumExperts, 2*c.MoEIntermediate, H), // gate rows, then up rows
			dense(m+"experts.down_proj", c.NumExperts, H, c.MoEIntermediate),
			dense(m+"shared_expert.gate_proj.weight", c.SharedIntermediate, H),
			dense(m+"shared_expert.up_proj.weight", c.SharedIntermediate, H),
			dense(m+"shared_expert.down_proj.weight", H, c.SharedIntermediate),
			dense(m+"shared_expert_gate.weight", 1, H))
	}
	return append(ts,
		zeroCentred(p+"norm.weight", H),
		dense("lm_head.weight", V, H))
}

// mlxTensors lists the tensors of the mlx-community 4-bit checkpoint (model.md §2.3), in model order.
//
// Every linear module (embedding and lm_head included) is affine-quantized with group size
// c.GroupSize: 4-bit, except the router mlp.gate and mlp.shared_expert_gate at 8-bit. conv1d is
// [C, K, 1]; the layer norms have +1 baked in (values near 1); linear_attn.norm is not shifted.
func mlxTensors(c Config) []Tensor {
	H, V := c.HiddenSize, c.VocabSize
	const p = "language_model.model."
	quant := func(module string, bits int, shape ...int) []Tensor {
		return quantized(module, bits, c.GroupSize, shape...)
	}
	q4 := func(module string, shape ...int) []Tensor { return quant(module, defaultBits, shape...) }
	norm := func(name string, n int) Tensor { return bf16Tensor(name, around(1, normSpread), n) }

	ts := q4(p+"embed_tokens", V, H)
	for i := range c.NumLayers {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		ts = append(ts, norm(l+"input_layernorm.weight", H))
		if c.IsFullAttention(i) {
			a := l + "self_attn."
			ts = slices.Concat(ts,
				q4(a+"q_proj", 2*c.NumHeads*c.HeadDim, H),
				q4(a+"k_proj", c.NumKVHeads*c.HeadDim, H),
				q4(a+"v_proj", c.NumKVHeads*c.HeadDim, H),
				q4(a+"o_proj", H, c.NumHeads*c.HeadDim),
				[]Tensor{norm(a+"q_norm.weight", c.HeadDim), norm(a+"k_norm.weight", c.HeadDim)})
		} else {
			a := l + "linear_attn."
			ts = slices.Concat(ts,
				q4(a+"in_proj_qkv", c.ConvDim(), H),
				q4(a+"in_proj_z", c.ValueDim(), H),
				q4(a+"in_proj_b", c.LinearNumValueHeads, H),
				q4(a+"in_proj_a", c.LinearNumValueHeads, H),
				[]Tensor{
					bf16Tensor(a+"conv1d.weight", uniformStd(fanIn(c.LinearConvKernel)), c.ConvDim(), c.LinearConvKernel, 1),
					bf16Tensor(a+"A_log", Init{Kind: InitLogUniform, Lo: aLogLo, Hi: aLogHi}, c.LinearNumValueHeads),
					bf16Tensor(a+"dt_bias", around(0, dtBiasSpread), c.LinearNumValueHeads),
					bf16Tensor(a+"norm.weight", around(1, normSpread), c.LinearValueHeadDim),
				},
				q4(a+"out_proj", H, c.ValueDim()))
		}
		ts = append(ts, norm(l+"post_attention_layernorm.weight", H))
		m := l + "mlp."
		ts = slices.Concat(ts,
			quant(m+"gate", routerBits, c.NumExperts, H),
			q4(m+"switch_mlp.gate_proj", c.NumExperts, c.MoEIntermediate, H),
			q4(m+"switch_mlp.up_proj", c.NumExperts, c.MoEIntermediate, H),
			q4(m+"switch_mlp.down_proj", c.NumExperts, H, c.MoEIntermediate),
			q4(m+"shared_expert.gate_proj", c.SharedIntermediate, H),
			q4(m+"shared_expert.up_proj", c.SharedIntermediate, H),
			q4(m+"shared_expert.down_proj", H, c.SharedIntermediate),
			quant(m+"shared_expert_gate", routerBits, 1, H))
	}
	ts = append(ts, norm(p+"norm.weight", H))
	return append(ts, q4("language_model.lm_head", V, H)...)
}

// quantized returns the weight, scales and biases of an affine-quantized matrix of logical shape
// [..., out, in]: weight U32 [..., out, in*bits/32], scales and biases BF16 [..., out, in/groupSize].
// The dequantized values have standard deviation 1/sqrt(in).
func quantized(module string, bits, groupSize int, shape ...int) []Tensor {
	last := len(shape) - 1
	in := shape[last]
	packed := append(slices.Clone(shape[:last]), in*bits/32)
	groups := append(slices.Clone(shape[:last]), in/groupSize)
	std := fanIn(in)
	return []Tensor{
		{Name: module + ".weight", DType: safetensors.U32, Shape: packed, Init: Init{Kind: InitPacked}},
		{Name: module + ".scales", DType: safetensors.BF16, Shape: groups,
			Init: Init{Kind: InitScales, Std: std, Bits: bits, Stream: module + ".groups"}},
		{Name: module + ".biases", DType: safetensors.BF16, Shape: slices.Clone(groups),
			Init: Init{Kind: InitBiases, Std: std, Bits: bits, Stream: module + ".groups"}},
	}
}

// routerModules are the module paths (without ".weight") quantized at routerBits, as listed in the
// per-module overrides of config.json's quantization block.
func routerModules(c Config) []string {
	var m []string
	for i := range c.NumLayers {
		l := fmt.Sprintf("language_model.model.layers.%d.mlp.", i)
		m = append(m, l+"gate", l+"shared_expert_gate")
	}
	return m
}
