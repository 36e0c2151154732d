package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
)

// Tests for the layout pitfalls of model.md §7: the q_proj query/gate interleave and the GVA head
// mapping. Both use f32 matrices so that the expected values are exact.

func f32Matrix(t *testing.T, name string, w []float32, out, in int) checkpoint.Matrix {
	m, err := DenseMatrix(name, w, 0, out, in, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func identity(n int) []float32 {
	w := make([]float32, n*n)
	for i := 0; i < n; i++ {
		w[i*n+i] = 1
	}
	return w
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func TestAttentionQueryGateInterleave(t *testing.T) {
	// Hq = 2, Hkv = 1, D = 4, H = 8. For one token at position 0 attention returns v, so
	// out = W_o (v ⊙ sigmoid(gate_h)) per head. q_proj rows: per head 4 query rows (large) then 4
	// gate rows (zero), so the gate is sigmoid(0) = ½ and out_h = ½·v. A flat [queries | gates] split
	// would read head 0's gate from head 1's query rows.
	cfg := &checkpoint.Config{HiddenSize: 8, NumHeads: 2, NumKVHeads: 1, HeadDim: 4, RMSNormEps: 1e-6,
		RopeTheta: 1e7, PartialRotaryFactor: 0.5}
	const h, d = 8, 4
	q := make([]float32, 2*2*d*h)
	for h0 := 0; h0 < 2; h0++ {
		for r := 0; r < d; r++ { // query rows of head h0
			for i := 0; i < h; i++ {
				q[(h0*2*d+r)*h+i] = 10
			}
		}
	}
	v := make([]float32, d*h) // v = a[0:4]
	for i := 0; i < d; i++ {
		v[i*h+i] = 1
	}
	w := &checkpoint.Attention{
		Q: f32Matrix(t, "q", q, 2*2*d, h), K: f32Matrix(t, "k", ones(d*h), d, h), V: f32Matrix(t, "v", v, d, h),
		O: f32Matrix(t, "o", identity(h), h, h), QNorm: ones(d), KNorm: ones(d),
	}
	a := []float32{1, -2, 3, 0.5, 1, 1, 1, 1}
	cache := &KVCache{}
	out, err := GatedAttention(cfg, w, [][]float32{a}, 0, cache)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0.5, -1, 1.5, 0.25, 0.5, -1, 1.5, 0.25}
	if maxAbsDiff(t, out[0], want) > 1e-7 {
		t.Errorf("out = %v, want %v (½·v in both heads)", out[0], want)
	}
	if len(cache.K) != 1 || len(cache.V) != 1 {
		t.Errorf("cache holds %d keys, %d values; want 1", len(cache.K), len(cache.V))
	}
}

func TestDeltaNetValueHeadsReadKeyHeadsInterleaved(t *testing.T) {
	// Hk = 2, Hv = 4, Dk = Dv = 2, H = 8, W_out = I. Changing key head 1's q/k projection rows must
	// change value heads 2 and 3 only (repeat_interleave: hv → hv/2), not heads 1 and 3 (tiling).
	cfg := &checkpoint.Config{HiddenSize: 8, LinearNumKeyHeads: 2, LinearNumValueHeads: 4,
		LinearKeyHeadDim: 2, LinearValueHeadDim: 2, LinearConvKernel: 4, RMSNormEps: 1e-6}
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	const h, c = 8, 16 // conv channels: q 4, k 4, v 8
	qkv := rnd(c * h)
	base := &checkpoint.DeltaNet{
		QKV: f32Matrix(t, "qkv", qkv, c, h), Z: f32Matrix(t, "z", rnd(8*h), 8, h),
		B: f32Matrix(t, "b", rnd(4*h), 4, h), A: f32Matrix(t, "a", rnd(4*h), 4, h),
		Out: f32Matrix(t, "out", identity(h), h, h), Conv: rnd(c * 4), ALog: rnd(4), DtBias: rnd(4), Norm: ones(2),
	}
	changed := *base
	qkv2 := append([]float32(nil), qkv...)
	for _, row := range []int{2, 3, 6, 7} { // key head 1: q rows 2..3, k rows 6..7
		for i := 0; i < h; i++ {
			qkv2[row*h+i] += 0.7
		}
	}
	changed.QKV = f32Matrix(t, "qkv", qkv2, c, h)
	a := [][]float32{rnd(h), rnd(h), rnd(h)}
	run := func(w *checkpoint.DeltaNet) [][]float32 {
		out, err := GatedDeltaNet(cfg, w, a, NewDeltaNetState(cfg), true)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	y0, y1 := run(base), run(&changed)
	for tok := range a {
		for vh := 0; vh < 4; vh++ {
			d := maxAbsDiff(t, y0[tok][2*vh:2*vh+2], y1[tok][2*vh:2*vh+2])
			if reads := vh/2 == 1; reads != (d > 0) {
				t.Errorf("token %d value head %d: changed by %g after editing key head 1 (reads it: %v)", tok, vh, d, reads)
			}
		}
	}
	if math.IsNaN(float64(y0[2][0])) {
		t.Fatal("NaN output")
	}
}
