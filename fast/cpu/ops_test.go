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

// siluTol is SiLU's budget against float64: the float32 exp (≈2 ulp) and the division, relative;
// results below 1e-30 in magnitude (e^-x past float32's range) may flush to zero.
const siluTol = 1e-6

// drawExpArgs draws the arguments of an exp-based kernel (SiLU, SigmoidMul): e, lengths around the
// 16-lane blocks, random and extreme (±100 and beyond, where e^-e overflows or underflows; ±0,
// tiny, huge), and a multiplier u of each in [-4, 4].
func drawExpArgs(t *rapid.T) (e, u []float32) {
	n := rapid.IntRange(1, 70).Draw(t, "n")
	e, u = make([]float32, n), make([]float32, n)
	for i := range e {
		e[i] = rapid.OneOf(rapid.Float32Range(-20, 20), rapid.Float32Range(-200, 200),
			rapid.SampledFrom([]float32{0, -0, 1e-30, -1e-30, 88.8, -88.8, 104, -104, 3e38, -3e38})).Draw(t, "e")
		u[i] = rapid.Float32Range(-4, 4).Draw(t, "u")
	}
	return e, u
}

// TestSiLUMatchesFloat64: every variant on random and extreme inputs (±100 and beyond, where e^-x
// overflows or underflows; lengths around the 16-lane blocks), with and without the multiplier.
func TestSiLUMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		x, u := drawExpArgs(t)
		n := len(x)
		for name, k := range ks {
			out := make([]float32, n)
			k.SiLU(out, x)
			mul := make([]float32, n)
			k.SiLUMul(mul, x, u)
			for i, v := range x {
				g := float64(v)
				want := g / (1 + math.Exp(-g))
				if d := math.Abs(float64(out[i]) - want); d > siluTol*math.Abs(want)+1e-30 {
					t.Fatalf("%s SiLU(%g) = %g, want %g", name, v, out[i], want)
				}
				want *= float64(u[i])
				if math.Abs(want) > math.MaxFloat32 {
					continue // not a float32: either answer is as good
				}
				if d := math.Abs(float64(mul[i]) - want); d > 2*siluTol*math.Abs(want)+1e-30 {
					t.Fatalf("%s SiLUMul(%g, %g) = %g, want %g", name, v, u[i], mul[i], want)
				}
			}
		}
	})
}

// TestSigmoidMulMatchesFloat64: every variant against x·σ(g) in float64, within siluTol (the same
// float32 exp and division), on random and extreme gates around the 16-lane blocks.
func TestSigmoidMulMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		g, x := drawExpArgs(t)
		for name, k := range ks {
			got := append([]float32(nil), x...)
			k.SigmoidMul(got, g)
			for i := range x {
				want := float64(x[i]) / (1 + math.Exp(-float64(g[i])))
				if d := math.Abs(float64(got[i]) - want); d > siluTol*math.Abs(want)+1e-30 {
					t.Fatalf("%s SigmoidMul(%g, %g) = %g, want %g", name, x[i], g[i], got[i], want)
				}
			}
		}
	})
}

// rmsNorm64Tol: RMSNorm64 against float64 arithmetic throughout, relative: the float32 rounding of
// 1/rms and of the two products (3 roundings of 2^-24), the float64 sum's order aside.
const rmsNorm64Tol = 4 * 0x1p-24

// TestRMSNorm64 holds every variant to the float64 norm on lengths around the vector blocks and
// values over a wide range (the hidden state's outliers), in place and not.
func TestRMSNorm64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{1, 31, 32, 33, 64, 100, 256, 2048, 2049}).Draw(t, "n")
		x := make([]float32, n)
		w := make([]float32, n)
		for i := range x {
			x[i] = rapid.Float32Range(-1, 1).Draw(t, "x") * float32(math.Pow(10, float64(rapid.IntRange(-3, 3).Draw(t, "e"))))
			w[i] = rapid.Float32Range(-2, 2).Draw(t, "w")
		}
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(n)+1e-6)
		inPlace := rapid.Bool().Draw(t, "inPlace")
		for name, k := range ks {
			out := make([]float32, n)
			src := x
			if inPlace {
				src = append([]float32(nil), x...)
				out = src
			}
			k.RMSNorm64(out, src, w, 1e-6)
			for i := range x {
				want := float64(x[i]) * r * float64(w[i])
				if d := math.Abs(float64(out[i]) - want); d > rmsNorm64Tol*math.Abs(want)+1e-38 {
					t.Fatalf("%s n=%d: out[%d] = %g, want %g", name, n, i, out[i], want)
				}
			}
		}
	})
}
