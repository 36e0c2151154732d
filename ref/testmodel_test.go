package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
)

// tinyConfig is a Qwen3.6-shaped config small enough for property tests: 4 layers (3 DeltaNet, then one
// full attention), GVA with Hv = 2·Hk, GQA with Hq = 2·Hkv, partial RoPE on a quarter of the head.
func tinyConfig() *checkpoint.Config {
	return &checkpoint.Config{
		HiddenSize: 32, NumLayers: 4,
		LayerTypes: []checkpoint.LayerKind{checkpoint.LinearAttention, checkpoint.LinearAttention,
			checkpoint.LinearAttention, checkpoint.FullAttention},
		VocabSize: 64, NumHeads: 4, NumKVHeads: 2, HeadDim: 16,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 8, LinearValueHeadDim: 8, LinearConvKernel: 4,
		NumExperts: 8, NumExpertsPerTok: 3, MoEIntermediate: 16, SharedIntermediate: 16,
		RMSNormEps: 1e-6, RopeTheta: 1e7, PartialRotaryFactor: 0.25, MaxPositionEmbeddings: 4096,
		EOSTokenIDs: []int{1}, BOSTokenID: -1,
	}
}

// tinyGroupSize is the quantization group of the tiny model (the real checkpoint uses 64; 16 keeps
// several groups per row at these widths).
const tinyGroupSize = 16

// builder makes random weights in every stored form: each matrix is randomly dense (BF16, F16,
// F32) or quantized (4 or 8 bits) unless forced.
type builder struct {
	t     testing.TB
	rng   *rand.Rand
	force int // -1 random; 0 dense bf16; 4 or 8 quantized
}

func (b *builder) values(n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(b.rng.NormFloat64() * std)
	}
	return v
}

// stored encodes w: [experts or 1, rows, in] in a random stored form.
func (b *builder) stored(name string, w []float32, experts, rows, in int) checkpoint.Matrix {
	kind := b.force
	if kind < 0 {
		kind = []int{0, 1, 2, 4, 8}[b.rng.IntN(5)]
	}
	var m checkpoint.Matrix
	var err error
	switch kind {
	case 4, 8:
		m, err = Quantize(name, w, experts, rows, in, kind, tinyGroupSize)
	default:
		m, err = DenseMatrix(name, w, experts, rows, in, []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32}[kind])
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return m
}

func (b *builder) matrix(name string, out, in int) checkpoint.Matrix {
	return b.stored(name, b.values(out*in, 1/math.Sqrt(float64(in))), 0, out, in)
}

// norm returns a multiplier near 1: HF style (1 + w in float32) or MLX style (bf16(1 + w)).
func (b *builder) norm(n int, mlx bool) []float32 {
	v := b.values(n, 0.1)
	for i := range v {
		v[i]++
		if mlx {
			v[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v[i]))
		}
	}
	return v
}

// tinyWeights builds a random model; layout picks the norm convention the multipliers follow.
func tinyWeights(t testing.TB, seed uint64, force int, layout checkpoint.Layout) *checkpoint.Weights {
	c := tinyConfig()
	b := &builder{t: t, rng: rand.New(rand.NewPCG(seed, 7)), force: force}
	mlx := layout == checkpoint.LayoutMLX
	h := c.HiddenSize
	w := &checkpoint.Weights{Config: c, Layout: layout,
		Embed: b.matrix("embed", c.VocabSize, h), LMHead: b.matrix("lm_head", c.VocabSize, h),
		FinalNorm: b.norm(h, mlx)}
	for l := 0; l < c.NumLayers; l++ {
		layer := checkpoint.Layer{Index: l, Kind: c.LayerTypes[l], InputNorm: b.norm(h, mlx), PostNorm: b.norm(h, mlx)}
		if layer.Kind == checkpoint.LinearAttention {
			hv, dv := c.LinearNumValueHeads, c.LinearValueHeadDim
			g := &checkpoint.DeltaNet{
				QKV: b.matrix("qkv", c.ConvDim(), h), Z: b.matrix("z", hv*dv, h),
				B: b.matrix("b", hv, h), A: b.matrix("a", hv, h), Out: b.matrix("out", h, hv*dv),
				Conv: b.values(c.ConvDim()*c.LinearConvKernel, 0.5), ALog: b.values(hv, 1),
				DtBias: b.values(hv, 1), Norm: b.norm(dv, false),
			}
			layer.DeltaNet = g
		} else {
			d := c.HeadDim
			layer.Attn = &checkpoint.Attention{
				Q: b.matrix("q", c.NumHeads*d*2, h), K: b.matrix("k", c.NumKVHeads*d, h),
				V: b.matrix("v", c.NumKVHeads*d, h), O: b.matrix("o", h, c.NumHeads*d),
				QNorm: b.norm(d, mlx), KNorm: b.norm(d, mlx),
			}
		}
		e, in := c.NumExperts, c.MoEIntermediate
		// The fused HF gate_up tensor [E, 2I, H]: gate and up are row windows of one stored tensor.
		fused := b.stored("gate_up", b.values(e*2*in*h, 1/math.Sqrt(float64(h))), e, 2*in, h)
		gate, up := fused, fused
		gate.Out, gate.StoredRows, gate.RowOffset = in, 2*in, 0
		up.Out, up.StoredRows, up.RowOffset = in, 2*in, in
		layer.MoE = checkpoint.MoE{
			Router: b.matrix("router", e, h), Gate: gate, Up: up,
			Down:       b.stored("down", b.values(e*h*in, 1/math.Sqrt(float64(in))), e, h, in),
			SharedGate: b.matrix("sg", c.SharedIntermediate, h), SharedUp: b.matrix("su", c.SharedIntermediate, h),
			SharedDown: b.matrix("sd", h, c.SharedIntermediate), SharedEG: b.matrix("seg", 1, h),
		}
		w.Layers = append(w.Layers, layer)
	}
	return w
}

func tinyModel(t testing.TB, seed uint64, force int, layout checkpoint.Layout) *Model {
	m, err := New(tinyWeights(t, seed, force, layout))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// maxAbsDiff is max_i |a[i] − b[i]|; lengths must match.
func maxAbsDiff(t testing.TB, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d", len(a), len(b))
	}
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}
