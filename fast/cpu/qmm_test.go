package cpu

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// qmmTol bounds |Y − oracle| relative to Σ|terms|, as qmvTol: the mat-mat dequantizes w = scale·q+bias
// in float32 (one FMA rounding, ≤ 2^-24 relative per weight) and sums ≤ 2560 products in float32.
const qmmTol = 1e-5

func TestQMatMatMatchesOracle(t *testing.T) {
	for _, workers := range []int{1, 3} {
		p := NewPool(workers)
		defer p.Close()
		for name, k := range variants(p) {
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					bits, out, in := drawShape(t)
					tok := rapid.IntRange(1, 9).Draw(t, "T")
					r := newRand(rapid.Uint64().Draw(t, "seed"))
					m, x := randQMat(r, bits, out, in), randVec(r, tok*in)
					y := make([]float32, tok*out)
					k.QMatMat(y, m, x, tok)
					for tt := range tok {
						want, mass := oracleQMatVec(m, x[tt*in:(tt+1)*in])
						for o := range out {
							if d := math.Abs(float64(y[tt*out+o]) - want[o]); d > qmmTol*mass[o] {
								t.Fatalf("workers %d bits %d [%d,%d] T %d: Y[%d,%d] = %g, oracle %g",
									workers, bits, out, in, tok, tt, o, y[tt*out+o], want[o])
							}
						}
					}
				})
			})
		}
	}
}
