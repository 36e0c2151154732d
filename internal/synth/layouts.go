package synth

import (
	"slices"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// dims are c's sizes as the tensor table takes them.
func (c Config) dims() tensortable.Dims {
	return tensortable.Dims{H: c.HiddenSize, Vocab: c.VocabSize,
		LayerTypes: tensortable.Interleaved(c.NumLayers, c.FullAttentionInterval),
		Hq:         c.NumHeads, Hkv: c.NumKVHeads, D: c.HeadDim, Rot: c.RotaryDim(),
		Hk: c.LinearNumKeyHeads, Hv: c.LinearNumValueHeads, Dk: c.LinearKeyHeadDim, Dv: c.LinearValueHeadDim,
		K: c.LinearConvKernel, E: c.NumExperts, TopK: c.NumExpertsPerTok, I: c.MoEIntermediate, Is: c.SharedIntermediate}
}

// hfTensors lists the text-model tensors of the transformers bf16 checkpoint (model.md §2.1), in
// model order (tensortable.Text).
//
// Every matrix is uniform with standard deviation 1/sqrt(in); the layer norms are zero-centred
// (applied as 1+w); the gated norm is a plain weight near 1.
func hfTensors(c Config) []Tensor {
	var ts []Tensor
	for _, t := range tensortable.Text(c.dims(), tensortable.HF) {
		switch t.Kind {
		case tensortable.Linear:
			ts = append(ts, bf16Tensor(t.Name+tensortable.WeightSuffix, uniformStd(fanIn(t.Shape[len(t.Shape)-1])), t.Shape...))
		case tensortable.FusedExperts:
			ts = append(ts, bf16Tensor(t.Name, uniformStd(fanIn(t.Shape[len(t.Shape)-1])), t.Shape...))
		case tensortable.Norm:
			ts = append(ts, bf16Tensor(t.Name, around(0, normSpread), t.Shape...))
		default:
			ts = append(ts, vectorTensor(c, t))
		}
	}
	return ts
}

// mlxTensors lists the tensors of the mlx-community 4-bit checkpoint (model.md §2.3), in model order.
//
// Every linear module (embedding and lm_head included) is affine-quantized with group size
// c.GroupSize: 4-bit, except the router mlp.gate and mlp.shared_expert_gate at 8-bit. The layer
// norms have +1 baked in (values near 1); linear_attn.norm is not shifted.
func mlxTensors(c Config) []Tensor {
	var ts []Tensor
	for _, t := range tensortable.Text(c.dims(), tensortable.MLX) {
		switch t.Kind {
		case tensortable.Linear:
			bits := defaultBits
			if t.Router {
				bits = routerBits
			}
			ts = append(ts, quantized(t.Name, bits, c.GroupSize, t.Shape...)...)
		case tensortable.Norm:
			ts = append(ts, bf16Tensor(t.Name, around(1, normSpread), t.Shape...))
		default:
			ts = append(ts, vectorTensor(c, t))
		}
	}
	return ts
}

// vectorTensor is a DeltaNet tensor stored alike in both layouts but for its shape: the conv
// weight, A_log, dt_bias and the gated norm.
func vectorTensor(c Config, t tensortable.Tensor) Tensor {
	var init Init
	switch t.Kind {
	case tensortable.Conv:
		init = uniformStd(fanIn(c.LinearConvKernel))
	case tensortable.ALog:
		init = Init{Kind: InitLogUniform, Lo: aLogLo, Hi: aLogHi}
	case tensortable.DtBias:
		init = around(0, dtBiasSpread)
	default: // tensortable.GatedNorm
		init = around(1, normSpread)
	}
	return bf16Tensor(t.Name, init, t.Shape...)
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
		{Name: module + tensortable.WeightSuffix, DType: safetensors.U32, Shape: packed, Init: Init{Kind: InitPacked}},
		{Name: module + tensortable.ScalesSuffix, DType: safetensors.BF16, Shape: groups,
			Init: Init{Kind: InitScales, Std: std, Bits: bits, Stream: module + ".groups"}},
		{Name: module + tensortable.BiasesSuffix, DType: safetensors.BF16, Shape: slices.Clone(groups),
			Init: Init{Kind: InitBiases, Std: std, Bits: bits, Stream: module + ".groups"}},
	}
}

// routerModules are the module paths (without ".weight") quantized at routerBits, as listed in the
// per-module overrides of config.json's quantization block.
func routerModules(c Config) []string {
	var m []string
	for _, t := range tensortable.Text(c.dims(), tensortable.MLX) {
		if t.Router {
			m = append(m, t.Name)
		}
	}
	return m
}
