package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGatedRMSNormAndMulAddMatchFloat64: every variant, lengths around the 16-lane vectors, against
// float64. Budgets: GatedRMSNorm relative opsTol (the float32 sum of squares and four roundings)
// plus siluTol (the float32 exp) of each element's magnitude; MulAdd opsTol of |y| + |a·b|.
func TestGatedRMSNormAndMulAddMatchFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, n := range []int{1, 15, 16, 37, 128} {
			x, g, w := randVec(r, n), randVec(r, n), randVec(r, n)
			for i := range g {
				g[i] *= 4 // silu's range
			}
			out := make([]float32, n)
			const eps = 1e-6
			k.GatedRMSNorm(out, x, g, w, eps)
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			rs := 1 / math.Sqrt(ss/float64(n)+eps)
			for i := range n {
				gi := float64(g[i])
				want := float64(x[i]) * rs * float64(w[i]) * gi / (1 + math.Exp(-gi))
				if math.Abs(float64(out[i])-want) > (opsTol+siluTol)*math.Abs(want)+1e-30 {
					t.Fatalf("%s GatedRMSNorm n %d [%d]: %g, want %g", name, n, i, out[i], want)
				}
			}
			y0, a, b := randVec(r, n), randVec(r, n), randVec(r, n)
			y := append([]float32(nil), y0...)
			k.MulAdd(y, a, b)
			for i := range n {
				e := float64(a[i]) * float64(b[i])
				if !near(float64(y[i]), float64(y0[i])+e, math.Abs(float64(y0[i]))+math.Abs(e)) {
					t.Fatalf("%s MulAdd n %d [%d]: %g, want %g", name, n, i, y[i], float64(y0[i])+e)
				}
			}
		}
	}
}
