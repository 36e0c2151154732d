package cpu

import (
	"fmt"
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
					// T up to 20: several 2-token register tiles and an odd last token; several
					// token blocks in the simdBlocks variant.
					tok := rapid.IntRange(1, 20).Draw(t, "T")
					r := newRand(rapid.Uint64().Draw(t, "seed"))
					m, x := randQMat(r, bits, out, in), randVec(r, tok*in)
					y := make([]float32, tok*out)
					k.QMatMat(y, m, x, tok)
					checkQMatMat(t, fmt.Sprintf("workers %d", workers), m, x, y, tok)
				})
			})
		}
	}
}

// checkQMatMat fails t unless y = X·Wᵀ within qmmTol of the oracle.
func checkQMatMat(t interface {
	Helper()
	Fatalf(string, ...any)
}, what string, m *QMat, x, y []float32, tok int) {
	t.Helper()
	out, in := m.Out, m.In
	for tt := range tok {
		want, mass := oracleQMatVec(m, x[tt*in:(tt+1)*in])
		for o := range out {
			if d := math.Abs(float64(y[tt*out+o]) - want[o]); d > qmmTol*mass[o] {
				t.Fatalf("%s bits %d [%d,%d] T %d: Y[%d,%d] = %g, oracle %g",
					what, m.Bits, out, in, tok, tt, o, y[tt*out+o], want[o])
			}
		}
	}
}

// TestQMatMatLargeX runs shapes past qmmLargeX through every variant (in token blocks of
// qmmTokenBlock): In 4096 and 8192, T not a multiple of the block, Out not a multiple of 4, both bit
// widths.
func TestQMatMatLargeX(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		for _, sh := range []struct{ bits, out, in, t int }{{4, 37, 4096, 131}, {8, 33, 8192, 67}} {
			r := newRand(uint64(sh.in))
			m, x := randQMat(r, sh.bits, sh.out, sh.in), randVec(r, sh.t*sh.in)
			y := make([]float32, sh.t*sh.out)
			k.QMatMat(y, m, x, sh.t)
			checkQMatMat(t, name, m, x, y, sh.t)
		}
	}
}
