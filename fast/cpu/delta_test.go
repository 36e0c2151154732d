package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestDeltaUpdateMatchesFloat64: DeltaUpdate on every variant against float64, on value sizes the
// SIMD path takes (multiples of 128) and ones it hands to the portable loop, and key sizes up to
// past its stack table. Budgets: each new state element within opsTol of |decay·s| + |k·delta|
// (one multiply and one FMA in float32); out within opsTol of Σ|q_i|·(|decay·s_i| + |k_i·delta|)
// (the new rows' own rounding carried through the sum).
func TestDeltaUpdateMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		dv := rapid.SampledFrom([]int{5, 64, 128, 256}).Draw(t, "dv")
		dk := rapid.OneOf(rapid.IntRange(1, 20), rapid.Just(128), rapid.Just(maxDeltaRows+3)).Draw(t, "dk")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 13))
		f := func(n int) []float32 { return randVec(r, n) }
		s0, kv, q, delta := f(dk*dv), f(dk), f(dk), f(dv)
		decay := float32(r.Float64())
		for name, k := range ks {
			s, out := append([]float32(nil), s0...), f(dv)
			k.DeltaUpdate(s, decay, kv, q, delta, out)
			want := make([]float64, dv)
			mass := make([]float64, dv)
			for i := range dk {
				for j := range dv {
					a, b := float64(decay)*float64(s0[i*dv+j]), float64(kv[i])*float64(delta[j])
					if !near(float64(s[i*dv+j]), a+b, math.Abs(a)+math.Abs(b)) {
						t.Fatalf("%s dk %d dv %d state (%d, %d): %g, want %g", name, dk, dv, i, j, s[i*dv+j], a+b)
					}
					want[j] += float64(q[i]) * (a + b)
					mass[j] += math.Abs(float64(q[i])) * (math.Abs(a) + math.Abs(b))
				}
			}
			for j := range dv {
				if !near(float64(out[j]), want[j], mass[j]) {
					t.Fatalf("%s dk %d dv %d out %d: %g, want %g", name, dk, dv, j, out[j], want[j])
				}
			}
		}
	})
}
