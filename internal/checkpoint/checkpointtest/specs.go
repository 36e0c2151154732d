// Package checkpointtest builds small Qwen3.6-architecture checkpoints on disk for tests, in the
// real HF and MLX layouts (model.md §2). It is for tests only: it writes whole files in memory
// and makes no attempt at speed.
package checkpointtest

import (
	"github.com/lily-engine/lily/internal/hfconfig"
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// Dims are the sizes of a model to synthesize (tensortable.Dims, the one dimensions struct) and
// its MLX quantization.
type Dims struct {
	tensortable.Dims
	Bits, GroupSize int // MLX quantization: global bits and group size
	GateBits        int // bits of mlp.gate and mlp.shared_expert_gate (8 in the real model)
}

// Tiny is a 4-layer model (3 DeltaNet + 1 attention) small enough to write in milliseconds.
func Tiny() Dims {
	return Dims{Dims: tensortable.Dims{H: 64, LayerTypes: tensortable.Interleaved(4, 4), Vocab: 256,
		Hq: 4, Hkv: 2, D: 32, Rot: 8, Hk: 2, Hv: 4, Dk: 16, Dv: 16, K: 4, E: 8, TopK: 2, I: 32, Is: 32},
		Bits: 4, GroupSize: 32, GateBits: 8}
}

// TinyG64 is Tiny with the real quantization group of 64, which the fast/cpu and Metal kernels
// are compiled for: every matrix input width (the expert widths included) a multiple of 64.
func TinyG64() Dims {
	d := Tiny()
	d.I, d.Is, d.GroupSize = 64, 64, 64
	return d
}

// Real is Qwen3.6-35B-A3B as published (model.md §1) with the mlx-community 4-bit settings.
func Real() Dims {
	return Dims{Dims: tensortable.Dims{H: 2048, LayerTypes: tensortable.Interleaved(40, 4), Vocab: 248320,
		Hq: 16, Hkv: 2, D: 256, Rot: 64, Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4, E: 256, TopK: 8, I: 512, Is: 512},
		Bits: 4, GroupSize: 64, GateBits: 8}
}

// Spec is one tensor of a synthesized checkpoint.
type Spec struct {
	Name  string
	DType safetensors.DType
	Shape []int
}

// Specs lists every text-model tensor of the "hf" (bf16) or "mlx" (quantized) layout, in model
// order (tensortable.Text).
func (d Dims) Specs(layout string) []Spec {
	l := tensortable.HF
	if layout == "mlx" {
		l = tensortable.MLX
	}
	var out []Spec
	for _, t := range tensortable.Text(d.Dims, l) {
		switch {
		case t.Kind == tensortable.FusedExperts:
			out = append(out, Spec{t.Name, safetensors.BF16, t.Shape})
		case t.Kind == tensortable.Linear && l == tensortable.HF:
			out = append(out, Spec{t.Name + tensortable.WeightSuffix, safetensors.BF16, t.Shape})
		case t.Kind == tensortable.Linear:
			// U32 packed weight and BF16 scales and biases: [lead..., rows, in*bits/32], [..., in/GroupSize].
			bits := d.Bits
			if t.Router {
				bits = d.GateBits
			}
			n := len(t.Shape)
			w := append(append([]int{}, t.Shape[:n-1]...), t.Shape[n-1]*bits/32)
			g := append(append([]int{}, t.Shape[:n-1]...), t.Shape[n-1]/d.GroupSize)
			out = append(out, Spec{t.Name + tensortable.WeightSuffix, safetensors.U32, w},
				Spec{t.Name + tensortable.ScalesSuffix, safetensors.BF16, g}, Spec{t.Name + tensortable.BiasesSuffix, safetensors.BF16, g})
		default:
			out = append(out, Spec{t.Name, safetensors.BF16, t.Shape})
		}
	}
	return out
}

// ConfigJSON is a Qwen3_5MoeForConditionalGeneration config.json (text_config nested, written
// by hfconfig.File); for the "mlx" layout it carries the quantization block with the 8-bit router
// overrides, as mlx-lm writes it.
func (d Dims) ConfigJSON(layout string) []byte {
	c := &hfconfig.Config{HiddenSize: d.H, NumLayers: d.NumLayers(), LayerTypes: d.LayerTypes, VocabSize: d.Vocab,
		NumHeads: d.Hq, NumKVHeads: d.Hkv, HeadDim: d.D, LinearNumKeyHeads: d.Hk, LinearNumValueHeads: d.Hv,
		LinearKeyHeadDim: d.Dk, LinearValueHeadDim: d.Dv, LinearConvKernel: d.K, NumExperts: d.E,
		NumExpertsPerTok: d.TopK, MoEIntermediate: d.I, SharedIntermediate: d.Is, RMSNormEps: 1e-6,
		RopeTheta: 10000000, PartialRotaryFactor: float64(d.Rot) / float64(d.D), MaxPositionEmbeddings: 262144,
		BOSTokenID: d.Vocab - 2, EOSTokenIDs: []int{d.Vocab - 2}}
	if layout == "mlx" {
		c.Quant = &hfconfig.Quantization{Bits: d.Bits, GroupSize: d.GroupSize, Mode: hfconfig.ModeAffine,
			Overrides: map[string]hfconfig.QuantParams{}}
		for _, t := range tensortable.Text(d.Dims, tensortable.MLX) {
			if t.Router {
				c.Quant.Overrides[t.Name] = hfconfig.QuantParams{Bits: d.GateBits, GroupSize: d.GroupSize}
			}
		}
	}
	b, err := hfconfig.File{Config: c, Rope: hfconfig.Object{{Key: "mrope_section", Value: []int{11, 11, 10}},
		{Key: "mrope_interleaved", Value: true}}}.MarshalFile()
	if err != nil {
		panic(err) // plain values always marshal
	}
	return b
}
