package ref

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestDeltaRuleRecurrentByHand(t *testing.T) {
	// Dk = Dv = 1, S0 = 0, k = q = 1, v = 2, β = 0.5.
	// t=0: g=0:       S = 0;   δ = 0.5·(2−0) = 1;       S = 1;    o = 1
	// t=1: g=ln 0.5:  S = 0.5; δ = 0.5·(2−0.5) = 0.75;  S = 1.25; o = 1.25
	S := []float32{0}
	one := [][]float32{{1}, {1}}
	o := DeltaRuleRecurrent(S, one, one, [][]float32{{2}, {2}}, []float32{0, float32(math.Log(0.5))}, []float32{0.5, 0.5})
	if o[0][0] != 1 || o[1][0] != 1.25 || S[0] != 1.25 {
		t.Errorf("o = %v, S = %v; want [[1] [1.25]], [1.25]", o, S)
	}
	// The same two steps in one chunk give the same answer.
	S = []float32{0}
	o = DeltaRuleChunked(S, one, one, [][]float32{{2}, {2}}, []float32{0, float32(math.Log(0.5))}, []float32{0.5, 0.5}, ChunkSize)
	if math.Abs(float64(o[1][0])-1.25) > 1e-6 || math.Abs(float64(S[0])-1.25) > 1e-6 {
		t.Errorf("chunked o = %v, S = %v; want [[1] [1.25]], [1.25]", o, S)
	}
}

// deltaChunkTol bounds |chunked − recurrent| on outputs and final state: both are exact float32
// stores of float64 sums, but the chunked form reassociates (decay products, the triangular inverse),
// so they differ by float32 rounding amplified by 64-step chains; observed ≲2e-6 at these sizes.
const deltaChunkTol = 2e-5

// deltaInputs draws one head's normalised q, k, values in [−1, 1], β ∈ (0, 1) and realistic log-decays
// g = −exp(A)·softplus(α) with A ∈ [−2, 2], α ∈ [−4, 4].
func deltaInputs(t *rapid.T, T, dk, dv int) (q, k, v [][]float32, g, beta []float32) {
	vec := func(n int, label string) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rapid.Float64Range(-1, 1).Draw(t, label))
		}
		return x
	}
	scale := float32(1 / math.Sqrt(float64(dk)))
	for i := 0; i < T; i++ {
		qi := L2Normalize(vec(dk, "q"), l2NormEps)
		for j := range qi {
			qi[j] *= scale
		}
		q = append(q, qi)
		k = append(k, L2Normalize(vec(dk, "k"), l2NormEps))
		v = append(v, vec(dv, "v"))
		a := rapid.Float64Range(-2, 2).Draw(t, "A")
		g = append(g, -float32(math.Exp(a))*Softplus(float32(rapid.Float64Range(-4, 4).Draw(t, "alpha"))))
		beta = append(beta, Sigmoid(float32(rapid.Float64Range(-4, 4).Draw(t, "b"))))
	}
	return q, k, v, g, beta
}

func TestDeltaRuleChunkedMatchesRecurrent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		T := rapid.SampledFrom([]int{1, 2, 63, 64, 65, 127, 128, 129}).Draw(rt, "T")
		dk := rapid.IntRange(1, 8).Draw(rt, "dk")
		dv := rapid.IntRange(1, 8).Draw(rt, "dv")
		q, k, v, g, beta := deltaInputs(rt, T, dk, dv)
		s0 := make([]float32, dk*dv)
		if rapid.Bool().Draw(rt, "initial state") {
			for i := range s0 {
				s0[i] = float32(rapid.Float64Range(-2, 2).Draw(rt, "S0"))
			}
		}
		sr, sc := append([]float32(nil), s0...), append([]float32(nil), s0...)
		or := DeltaRuleRecurrent(sr, q, k, v, g, beta)
		oc := DeltaRuleChunked(sc, q, k, v, g, beta, ChunkSize)
		if len(oc) != T {
			rt.Fatalf("chunked returned %d rows for T = %d", len(oc), T)
		}
		for i := range or {
			if d := maxAbsDiff(t, or[i], oc[i]); d > deltaChunkTol {
				rt.Fatalf("T=%d position %d: |chunked − recurrent| = %g > %g", T, i, d, deltaChunkTol)
			}
		}
		if d := maxAbsDiff(t, sr, sc); d > deltaChunkTol {
			rt.Fatalf("T=%d final state: |chunked − recurrent| = %g > %g", T, d, deltaChunkTol)
		}
	})
}

func TestDeltaRuleChunkedSplitsAnywhere(t *testing.T) {
	// Running a sequence as two chunked calls (state carried) equals one call: this is what
	// prefill-after-prefill relies on. Same tolerance reason as deltaChunkTol.
	rapid.Check(t, func(rt *rapid.T) {
		T := rapid.IntRange(2, 140).Draw(rt, "T")
		cut := rapid.IntRange(1, T-1).Draw(rt, "cut")
		q, k, v, g, beta := deltaInputs(rt, T, 4, 3)
		s1, s2 := make([]float32, 12), make([]float32, 12)
		whole := DeltaRuleChunked(s1, q, k, v, g, beta, ChunkSize)
		parts := DeltaRuleChunked(s2, q[:cut], k[:cut], v[:cut], g[:cut], beta[:cut], ChunkSize)
		parts = append(parts, DeltaRuleChunked(s2, q[cut:], k[cut:], v[cut:], g[cut:], beta[cut:], ChunkSize)...)
		for i := range whole {
			if d := maxAbsDiff(t, whole[i], parts[i]); d > deltaChunkTol {
				rt.Fatalf("position %d: |whole − split at %d| = %g", i, cut, d)
			}
		}
	})
}

func TestSoftplusThreshold(t *testing.T) {
	if Softplus(25) != 25 || Softplus(20.5) != 20.5 {
		t.Error("softplus above 20 must return x (torch threshold)")
	}
	if got, want := Softplus(0), float32(math.Ln2); got != want {
		t.Errorf("softplus(0) = %v, want ln 2", got)
	}
}

func TestL2Normalize(t *testing.T) {
	got := L2Normalize([]float32{3, 4}, 0)
	if got[0] != 0.6 || got[1] != 0.8 {
		t.Errorf("l2norm(3,4) = %v, want [0.6 0.8]", got)
	}
	if z := L2Normalize([]float32{0, 0}, l2NormEps); z[0] != 0 || z[1] != 0 {
		t.Errorf("l2norm(0) = %v, want zeros (eps inside the sum)", z)
	}
}

func TestCausalConv1DState(t *testing.T) {
	// C = 1, K = 3, w = [1, 10, 100] (100 multiplies the current token): y_t = silu(x_{t−2} + 10x_{t−1} + 100x_t).
	w := []float32{1, 10, 100}
	x := [][]float32{{1}, {2}, {3}, {4}}
	state := [][]float32{{0}, {0}}
	whole := CausalConv1D(x, state, w, 3)
	for i, want := range []float32{100, 210, 321, 432} {
		if whole[i][0] != SiLU(want) {
			t.Errorf("y[%d] = %v, want silu(%v)", i, whole[i][0], want)
		}
	}
	if state[0][0] != 3 || state[1][0] != 4 {
		t.Errorf("state = %v, want the last two inputs [[3] [4]]", state)
	}
	// One token at a time from the carried state gives the same outputs.
	state = [][]float32{{0}, {0}}
	for i := range x {
		if y := CausalConv1D(x[i:i+1], state, w, 3); y[0][0] != whole[i][0] {
			t.Errorf("step %d: %v, want %v", i, y[0][0], whole[i][0])
		}
	}
}
