package cpu

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
)

// bf16Tol bounds |y − oracle| relative to Σ|w·x|: float32 accumulation of ≤ 4096 exact products.
const bf16Tol = 1e-5

func TestBF16MatVecMatchesOracle(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				out := rapid.OneOf(rapid.Just(1), rapid.IntRange(2, 37), rapid.IntRange(200, 300)).Draw(t, "out")
				in := rapid.OneOf(rapid.IntRange(1, 40), rapid.Just(16*rapid.IntRange(1, 128).Draw(t, "in16"))).Draw(t, "in")
				r := newRand(rapid.Uint64().Draw(t, "seed"))
				w := make([]uint16, out*in)
				for i := range w {
					w[i] = safetensors.Float32ToBF16(float32(r.NormFloat64()))
				}
				x := randVec(r, in)
				y := make([]float32, out)
				k.BF16MatVec(y, w, out, in, x)
				for o := range out {
					var want, mass float64
					for i := range in {
						p := float64(safetensors.BF16ToFloat32(w[o*in+i])) * float64(x[i])
						want += p
						mass += math.Abs(p)
					}
					if d := math.Abs(float64(y[o]) - want); d > bf16Tol*mass {
						t.Fatalf("[%d,%d] y[%d] = %g, oracle %g", out, in, o, y[o], want)
					}
				}
			})
		})
	}
}
