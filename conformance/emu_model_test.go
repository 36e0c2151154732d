package conformance

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/ref"
)

// smallConfig is a Qwen3.6-shaped config for the layer tests: GQA Hq = 2·Hkv with partial RoPE on
// a quarter of the head, GVA Hv = 2·Hk, a shared expert wider than the routed ones, and every
// matrix input a multiple of the kernels' 64-wide quantization group. experts and topK vary per test.
func smallConfig(experts, topK int) *checkpoint.Config {
	return &checkpoint.Config{
		HiddenSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 64,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 64, LinearValueHeadDim: 64, LinearConvKernel: 4,
		NumExperts: experts, NumExpertsPerTok: topK, MoEIntermediate: 64, SharedIntermediate: 128,
		RMSNormEps: 1e-6, RopeTheta: 1e7, PartialRotaryFactor: 0.25, MaxPositionEmbeddings: 4096,
	}
}

// normWeight is an MLX-style norm multiplier near 1 (bf16(1 + w)).
func normWeight(rng *rand.Rand, n int) []float32 {
	v := randVec(rng, n, 0.1)
	for i := range v {
		v[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v[i] + 1))
	}
	return v
}

func smallAttention(t *testing.T, rng *rand.Rand, c *checkpoint.Config, bits int) *checkpoint.Attention {
	h, d := c.HiddenSize, c.HeadDim
	return &checkpoint.Attention{
		Q: qmat(t, rng, "q", 0, 2*c.NumHeads*d, h, bits), K: qmat(t, rng, "k", 0, c.NumKVHeads*d, h, bits),
		V: qmat(t, rng, "v", 0, c.NumKVHeads*d, h, bits), O: qmat(t, rng, "o", 0, h, c.NumHeads*d, bits),
		QNorm: normWeight(rng, d), KNorm: normWeight(rng, d),
	}
}

func smallDeltaNet(t *testing.T, rng *rand.Rand, c *checkpoint.Config, bits int) *checkpoint.DeltaNet {
	h, hv := c.HiddenSize, c.LinearNumValueHeads
	return &checkpoint.DeltaNet{
		QKV: qmat(t, rng, "qkv", 0, c.ConvDim(), h, bits), Z: qmat(t, rng, "z", 0, c.ValueDim(), h, bits),
		B: qmat(t, rng, "b", 0, hv, h, bits), A: qmat(t, rng, "a", 0, hv, h, bits),
		Out:  qmat(t, rng, "out", 0, h, c.ValueDim(), bits),
		Conv: randVec(rng, c.ConvDim()*c.LinearConvKernel, 0.5), ALog: randVec(rng, hv, 1),
		DtBias: randVec(rng, hv, 1), Norm: normWeight(rng, c.LinearValueHeadDim),
	}
}

// smallMoE has bits-bit experts and an 8-bit router and shared-expert gate, as the MLX checkpoint.
func smallMoE(t *testing.T, rng *rand.Rand, c *checkpoint.Config, bits int) *checkpoint.MoE {
	h, e, in, is := c.HiddenSize, c.NumExperts, c.MoEIntermediate, c.SharedIntermediate
	return &checkpoint.MoE{
		Router: qmat(t, rng, "router", 0, e, h, 8),
		Gate:   qmat(t, rng, "gate", e, in, h, bits), Up: qmat(t, rng, "up", e, in, h, bits),
		Down:       qmat(t, rng, "down", e, h, in, bits),
		SharedGate: qmat(t, rng, "sg", 0, is, h, bits), SharedUp: qmat(t, rng, "su", 0, is, h, bits),
		SharedDown: qmat(t, rng, "sd", 0, h, is, bits), SharedEG: qmat(t, rng, "seg", 0, 1, h, 8),
	}
}

// routeMargin is the smallest gap between consecutive router logits among the top k+1 of a
// token that the tests accept: the kernel's float32 logits differ from ref's by ~1e-6, so a larger
// gap makes the selected ids and their order a property of the data, not of rounding.
const routeMargin = 1e-3

// clearRoute reports whether x's router logits have no near-tie among their top k+1.
func clearRoute(t *testing.T, router *checkpoint.Matrix, x []float32, k int) bool {
	logits := make([]float32, router.Out)
	if err := ref.MatVec(router, 0, x, logits); err != nil {
		t.Fatal(err)
	}
	sorted := make([]float64, len(logits))
	for i, v := range logits {
		sorted[i] = -float64(v)
	}
	sort.Float64s(sorted) // descending logits, negated
	for j := 0; j < k && j+1 < len(sorted); j++ {
		if sorted[j+1]-sorted[j] < routeMargin {
			return false
		}
	}
	return true
}

// routedInputs draws T inputs of std 1 whose routing has no near-tie.
func routedInputs(t *testing.T, rng *rand.Rand, router *checkpoint.Matrix, T, k int) [][]float32 {
	x := make([][]float32, T)
	for i := range x {
		for tries := 0; ; tries++ {
			if tries == 100 {
				t.Fatal("no input without router near-ties in 100 draws")
			}
			x[i] = randVec(rng, router.In, 1)
			if clearRoute(t, router, x[i], k) {
				break
			}
		}
	}
	return x
}
