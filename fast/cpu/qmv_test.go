package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
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
					v := k.NewVec(in) // each variant's own kind: without the limb copy where it does not read it
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

// TestQMatVecQ16Budget checks the int16-activation path against its documented error budget:
// |y − oracle| ≤ Σ_g |scale_g|·(d_g/2)·Σ_i |q_i − qMid| (the bias term uses the exact Σx, and corr
// removes the qMid part of the rounding error) plus the float32 rounding tolerance qmvTol·mass.
func TestQMatVecQ16Budget(t *testing.T) {
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
				v.PrepareQ16(x)
				y := make([]float32, out)
				k.QMatVecQ16(y, m, v)
				want, mass := oracleQMatVec(m, x)
				rms := rmsOf(want)
				for o := range out {
					if out >= 200 {
						worst = math.Max(worst, math.Abs(float64(y[o])-want[o])/rms)
					}
					var budget float64
					for g := range m.Groups() {
						var qs float64
						for i := g * GroupSize; i < (g+1)*GroupSize; i++ {
							qs += math.Abs(oracleQ(m, o, i) - qMid)
						}
						budget += math.Abs(float64(safetensors.BF16ToFloat32(m.Scales[o*m.Groups()+g]))) * float64(v.d[g]) / 2 * qs
					}
					if d := math.Abs(float64(y[o]) - want[o]); d > budget+qmvTol*mass[o] {
						t.Fatalf("[%d,%d]: y[%d] = %g, oracle %g (|Δ| %g > budget %g)", out, in, o, y[o], want[o], d, budget)
					}
				}
			})
		})
	}
}

// TestQMatVecLimbBudget holds every variant to the VNNI kernels' budget on shapes they run (whole
// 8-group blocks), 4-bit and 8-bit rows: |y − oracle| ≤ Σ_g |scale_g|·(d_g/131072)·Σ_{i∈g} q_i (the
// limbs' rounding; the bias term uses the exact Σx) plus the float32 tolerance qmvTol·mass. It also
// logs the largest error relative to the rms output, beside which the float32 kernels' can be read.
func TestQMatVecLimbBudget(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			var worst float64
			defer func() { t.Logf("VNNI=%v: largest |y - oracle| / rms(y): %.2e", k.VNNI(), worst) }()
			rapid.Check(t, func(t *rapid.T) {
				bits := rapid.SampledFrom([]int{4, 8}).Draw(t, "bits")
				out := rapid.IntRange(1, 300).Draw(t, "out")
				in := 8 * GroupSize * rapid.IntRange(1, 16).Draw(t, "blocks")
				r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 5))
				m, x := randQMat(r, bits, out, in), randVec(r, in)
				x[r.IntN(in)] *= 50 // an outlier sets one group's limb scale
				v := NewVec(in)
				v.Prepare(x)
				y := make([]float32, out)
				k.QMatVec(y, m, v)
				want, mass := oracleQMatVec(m, x)
				rms := rmsOf(want)
				for o := range out {
					var budget float64
					for g := range m.Groups() {
						var qs float64
						for i := g * GroupSize; i < (g+1)*GroupSize; i++ {
							qs += oracleQ(m, o, i)
						}
						budget += math.Abs(float64(safetensors.BF16ToFloat32(m.Scales[o*m.Groups()+g]))) * float64(v.dl[g]) / 2 * qs
					}
					d := math.Abs(float64(y[o]) - want[o])
					worst = math.Max(worst, d/rms)
					if d > budget+qmvTol*mass[o] {
						t.Fatalf("%d-bit [%d,%d]: y[%d] = %g, oracle %g (|Δ| %g > budget %g + %g)", bits, out, in, o, y[o], want[o], d, budget, qmvTol*mass[o])
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
		v.PrepareQ16(x)
		_, mass := oracleQMatVec(m, x)
		check := func(what string, f func(k *Kernels, y []float32)) {
			for _, name := range []string{"simd", "simd512", "simd256"} {
				a, b := make([]float32, out), make([]float32, out)
				f(ks[name], a)
				f(ks["portable"], b)
				for o := range out {
					if d := math.Abs(float64(a[o] - b[o])); d > 2*qmvTol*mass[o] {
						t.Fatalf("%s %s bits %d [%d,%d] row %d: %g, portable %g", name, what, bits, out, in, o, a[o], b[o])
					}
				}
			}
		}
		check("QMatVec", func(k *Kernels, y []float32) { k.QMatVec(y, m, v) })
		check("QMatVecQ16", func(k *Kernels, y []float32) { k.QMatVecQ16(y, m, v) })
	})
}

// TestQMatVecQ16Formula checks that the int16 path computes exactly its formula on the prepared Vec,
// y[o] = Σ_g scale·(d·Σ_i q16_i·q_i + corr) + bias·Σx (oracle in float64 from v's own fields),
// within float32 rounding (qmvTol of the element-wise mass Σ_i |scale·d·q16_i·q_i| plus the corr
// and bias terms: the SIMD kernel rounds per-lane partial products, so the size of the exact
// group sum, which may cancel, is not the scale of its error); and that PrepareQ16's fields are what it documents: |x − d·q16| ≤ d/2
// and corr = qMid·Σ(x − d·q16). The budget test alone would not notice a kernel that drops corr.
func TestQMatVecQ16Formula(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				_, out, in := drawShape(t)
				r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 4))
				m, x := randQMat(r, 4, out, in), randVec(r, in)
				v := NewVec(in)
				v.PrepareQ16(x)
				for g := range m.Groups() {
					var e float64
					for j := range GroupSize {
						xi := float64(x[g*GroupSize+j])
						qi := float64(v.q[g*GroupSize+j/2+32*(j%2)]) // even elements first, then odd
						if d := math.Abs(xi - float64(v.d[g])*qi); d > float64(v.d[g])/2*(1+1e-6) {
							t.Fatalf("group %d element %d: |x − d·q16| = %g > d/2 = %g", g, j, d, v.d[g]/2)
						}
						e += xi - float64(v.d[g])*qi
					}
					if d := math.Abs(float64(v.corr[g]) - qMid*e); d > 1e-6*math.Abs(qMid*e)+1e-30 {
						t.Fatalf("group %d: corr %g, want %g", g, v.corr[g], qMid*e)
					}
				}
				// corr as PrepareQ16 makes it is too small against float32 rounding of the integer
				// part to show whether a kernel adds it; give it the size of Σx so that it does.
				copy(v.corr, v.sum)
				y := make([]float32, out)
				k.QMatVecQ16(y, m, v)
				for o := range out {
					var want, mass float64
					for g := range m.Groups() {
						var s, sAbs int64
						for j := range GroupSize {
							p := int64(v.q[g*GroupSize+j/2+32*(j%2)]) * int64(oracleQ(m, o, g*GroupSize+j))
							s += p
							sAbs += max(p, -p)
						}
						sc, bi := float64(safetensors.BF16ToFloat32(m.Scales[o*m.Groups()+g])), float64(safetensors.BF16ToFloat32(m.Biases[o*m.Groups()+g]))
						term := sc*(float64(v.d[g])*float64(s)+float64(v.corr[g])) + bi*float64(v.sum[g])
						want += term
						mass += math.Abs(sc*float64(v.d[g])*float64(sAbs)) + math.Abs(sc*float64(v.corr[g])) + math.Abs(bi*float64(v.sum[g]))
					}
					if d := math.Abs(float64(y[o]) - want); d > qmvTol*mass {
						t.Fatalf("[%d,%d]: y[%d] = %g, formula %g (|Δ| %g > %g)", out, in, o, y[o], want, d, qmvTol*mass)
					}
				}
			})
		})
	}
}
