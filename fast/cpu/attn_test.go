package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestAttentionHelpersMatchFloat64: Dots, ExpShift and AxpyRows on every variant against float64
// sums, on head sizes the SIMD paths take (multiples of 16 and of 128) and ones they hand to the
// plain loops, key counts around their 8-key blocks and past AxpyRows' pass length, rows with a
// stride wider than the head (the KV cache holds all KV heads of a position in one row). Budgets:
// opsTol of the summed magnitudes for the two sums, siluTol (the float32 exp) for ExpShift.
func TestAttentionHelpersMatchFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom([]int{3, 16, 48, 128, 256}).Draw(t, "d")
		n := rapid.OneOf(rapid.IntRange(1, 40), rapid.Just(attnMaxKeys+9)).Draw(t, "n")
		stride := d + rapid.SampledFrom([]int{0, 5, d}).Draw(t, "extra")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 11))
		f := func(n int) []float32 { return randVec(r, n) }
		q, rows, pw := f(d), f((n-1)*stride+d), f(n)
		m := float32(r.NormFloat64() * 3)
		for name, k := range ks {
			out := make([]float32, n)
			k.Dots(out, q, rows, stride)
			for j := range n {
				var want, mass float64
				for i := range d {
					v := float64(q[i]) * float64(rows[j*stride+i])
					want, mass = want+v, mass+math.Abs(v)
				}
				if !near(float64(out[j]), want, mass) {
					t.Fatalf("%s Dots d %d n %d key %d: %g, want %g", name, d, n, j, out[j], want)
				}
			}
			x := append([]float32(nil), out...)
			sum := k.ExpShift(x, m)
			var wantSum float64
			for j, v := range out {
				want := math.Exp(float64(v - m)) // the difference rounds to float32 in every version
				wantSum += want
				if math.Abs(float64(x[j])-want) > siluTol*want+1e-30 {
					t.Fatalf("%s ExpShift(%g − %g) = %g, want %g", name, v, m, x[j], want)
				}
			}
			if math.Abs(sum-wantSum) > siluTol*wantSum {
				t.Fatalf("%s ExpShift sum %g, want %g", name, sum, wantSum)
			}
			acc := f(d)
			acc0 := append([]float32(nil), acc...)
			k.AxpyRows(acc, pw, rows, stride)
			for i := range d {
				want, mass := float64(acc0[i]), math.Abs(float64(acc0[i]))
				for j := range n {
					v := float64(pw[j]) * float64(rows[j*stride+i])
					want, mass = want+v, mass+math.Abs(v)
				}
				if !near(float64(acc[i]), want, mass) {
					t.Fatalf("%s AxpyRows d %d n %d dim %d: %g, want %g", name, d, n, i, acc[i], want)
				}
			}
		}
	})
}

// TestMaxOf checks MaxOf on every variant against a plain loop: lengths around the 16-lane step,
// values of both signs, the maximum anywhere (including the scalar tail).
func TestMaxOf(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				n := rapid.IntRange(1, 100).Draw(t, "n")
				x := randVec(rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 8)), n)
				x[rapid.IntRange(0, n-1).Draw(t, "at")] = float32(rapid.Float64Range(-1, 6).Draw(t, "peak"))
				want := x[0]
				for _, e := range x {
					want = max(want, e)
				}
				if got := k.MaxOf(x); got != want {
					t.Fatalf("n %d: MaxOf = %g, want %g", n, got, want)
				}
			})
		})
	}
}
