package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// qmvTol bounds |y − oracle| relative to Σ|terms| (the weight·x products and the fused scale·q·x and
// bias·x products): float32 accumulation over ≤ 2560 terms in a few partial sums stays far below
// 2^-24·sqrt(n)·8 ≈ 2.4e-5; 1e-5 leaves margin for the typical case and still catches a wrong element.
const qmvTol = 1e-5

func TestQMatVecMatchesOracle(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		p := NewPool(workers)
		defer p.Close()
		for name, k := range variants(p) {
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					bits, out, in := drawShape(t)
					r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
					m, x := randQMat(r, bits, out, in), randVec(r, in)
					v := NewVec(in)
					v.Prepare(x)
					y := make([]float32, out)
					k.QMatVec(y, m, v)
					want, mass := oracleQMatVec(m, x)
					for o := range out {
						if d := math.Abs(float64(y[o]) - want[o]); d > qmvTol*mass[o] {
							t.Fatalf("workers %d bits %d [%d,%d]: y[%d] = %g, oracle %g (|Δ| %g > %g)",
								workers, bits, out, in, o, y[o], want[o], d, qmvTol*mass[o])
						}
					}
				})
			})
		}
	}
}

// TestQMatVecQ8Budget checks the int8-activation path against its documented error budget:
// |y − oracle| ≤ Σ_g |scale_g|·(d_g/2)·Σ_i q_i + |bias_g|·0 (the bias term uses the exact Σx) plus
// the float32 rounding tolerance qmvTol·mass.
func TestQMatVecQ8Budget(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			var worst float64 // largest |Δ| / rms(oracle y) over outputs of ≥ 200 rows, for the budget note
			defer func() { t.Logf("largest |y - oracle| / rms(y) (≥ 200 rows): %.2e", worst) }()
			rapid.Check(t, func(t *rapid.T) {
				_, out, in := drawShape(t)
				r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 2))
				m, x := randQMat(r, 4, out, in), randVec(r, in)
				v := NewVec(in)
				v.PrepareQ8(x)
				y := make([]float32, out)
				k.QMatVecQ8(y, m, v)
				want, mass := oracleQMatVec(m, x)
				var ms float64
				for _, w := range want {
					ms += w * w
				}
				rms := math.Sqrt(ms / float64(out))
				for o := range out {
					if out >= 200 {
						worst = math.Max(worst, math.Abs(float64(y[o])-want[o])/rms)
					}
					var budget float64
					for g := range m.Groups() {
						var qs float64
						for i := g * GroupSize; i < (g+1)*GroupSize; i++ {
							qs += oracleQ(m, o, i)
						}
						budget += math.Abs(float64(BF16(m.Scales[o*m.Groups()+g]))) * float64(v.d[g]) / 2 * qs
					}
					if d := math.Abs(float64(y[o]) - want[o]); d > budget+qmvTol*mass[o] {
						t.Fatalf("[%d,%d]: y[%d] = %g, oracle %g (|Δ| %g > budget %g)", out, in, o, y[o], want[o], d, budget)
					}
				}
			})
		})
	}
}

// TestSIMDMatchesPortable runs both versions on the same inputs. They sum in different orders, so
// they agree to the same float32 tolerance as each has against the oracle.
func TestSIMDMatchesPortable(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	ks := variants(p)
	if ks["simd"] == nil {
		t.Skip("no SIMD kernels in this build or CPU (needs GOEXPERIMENT=simd on amd64 with AVX2+FMA)")
	}
	rapid.Check(t, func(t *rapid.T) {
		bits, out, in := drawShape(t)
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 3))
		m, x := randQMat(r, bits, out, in), randVec(r, in)
		v := NewVec(in)
		v.PrepareQ8(x)
		_, mass := oracleQMatVec(m, x)
		check := func(what string, f func(k *Kernels, y []float32)) {
			a, b := make([]float32, out), make([]float32, out)
			f(ks["simd"], a)
			f(ks["portable"], b)
			for o := range out {
				if d := math.Abs(float64(a[o] - b[o])); d > 2*qmvTol*mass[o] {
					t.Fatalf("%s bits %d [%d,%d] row %d: simd %g portable %g", what, bits, out, in, o, a[o], b[o])
				}
			}
		}
		check("QMatVec", func(k *Kernels, y []float32) { k.QMatVec(y, m, v) })
		check("QMatVecQ8", func(k *Kernels, y []float32) { k.QMatVecQ8(y, m, v) })
	})
}
