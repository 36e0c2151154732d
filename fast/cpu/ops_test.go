package cpu

import (
	"math"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// opsTol is the relative tolerance of the float32 helpers against float64 oracles: a few float32
// roundings per element plus float32 reductions over ≤ 3000 terms.
const opsTol = 1e-5

func drawVec(t *rapid.T, n int) []float32 {
	r := newRand(rapid.Uint64().Draw(t, "seed"))
	return randVec(r, n)
}

func near(got, want, scale float64) bool { return math.Abs(got-want) <= opsTol*scale+1e-30 }

func TestHelpersMatchOracles(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				n := rapid.IntRange(1, 3000).Draw(t, "n")
				a, b := drawVec(t, n), drawVec(t, n)

				var dot, mass, ss float64
				for i := range n {
					dot += float64(a[i]) * float64(b[i])
					mass += math.Abs(float64(a[i]) * float64(b[i]))
					ss += float64(a[i]) * float64(a[i])
				}
				if got := k.Dot(a, b); !near(float64(got), dot, mass) {
					t.Fatalf("Dot n %d: %g, oracle %g", n, got, dot)
				}

				y := append([]float32(nil), b...)
				k.Axpy(y, 0.75, a)
				for i := range n {
					if want := float64(b[i]) + 0.75*float64(a[i]); !near(float64(y[i]), want, math.Abs(float64(b[i]))+math.Abs(float64(a[i]))) {
						t.Fatalf("Axpy[%d]: %g, oracle %g", i, y[i], want)
					}
				}

				y = append(y[:0], b...)
				k.ScaleAxpy(y, 0.9, -0.6, a)
				for i := range n {
					if want := 0.9*float64(b[i]) - 0.6*float64(a[i]); !near(float64(y[i]), want, math.Abs(float64(b[i]))+math.Abs(float64(a[i]))) {
						t.Fatalf("ScaleAxpy[%d]: %g, oracle %g", i, y[i], want)
					}
				}

				out := make([]float32, n)
				k.RMSNorm(out, a, b, 1e-6)
				inv := 1 / math.Sqrt(ss/float64(n)+1e-6)
				for i := range n {
					want := float64(a[i]) * inv * float64(b[i])
					if !near(float64(out[i]), want, math.Abs(want)) {
						t.Fatalf("RMSNorm[%d]: %g, oracle %g", i, out[i], want)
					}
				}

				k.SiLUMul(out, a, b)
				for i := range n {
					g := float64(a[i])
					want := g / (1 + math.Exp(-g)) * float64(b[i])
					if !near(float64(out[i]), want, math.Abs(want)) {
						t.Fatalf("SiLUMul[%d]: %g, oracle %g", i, out[i], want)
					}
				}

				sm := append([]float32(nil), a...)
				k.Softmax(sm)
				mx := math.Inf(-1)
				for _, e := range a {
					mx = math.Max(mx, float64(e))
				}
				var z float64
				for _, e := range a {
					z += math.Exp(float64(e) - mx)
				}
				for i := range n {
					want := math.Exp(float64(a[i])-mx) / z
					if !near(float64(sm[i]), want, want) {
						t.Fatalf("Softmax[%d]: %g, oracle %g", i, sm[i], want)
					}
				}
			})
		})
	}
}

func TestTopK(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	k := New(p)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "n")
		kk := rapid.IntRange(1, n).Draw(t, "k")
		// Few distinct values, so ties are common.
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rapid.IntRange(-5, 5).Draw(t, "v"))
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(i, j int) bool { return x[want[i]] > x[want[j]] })
		got := make([]int, kk)
		k.TopK(got, x)
		for i := range kk {
			if got[i] != want[i] {
				t.Fatalf("TopK(%v, %d) = %v, want %v", x, kk, got, want[:kk])
			}
		}
	})
}
