package cpu

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestArgmaxMatchesPortable checks every kernel set's Argmax against the plain loop on rows with
// ties, NaNs (first, last, everywhere) and infinities, at lengths around the 16-lane step.
func TestArgmaxMatchesPortable(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				n := rapid.IntRange(0, 100).Draw(t, "n")
				x := make([]float32, n)
				vals := []float32{-1, 0, 2, 2, 7, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
				for i := range x {
					if rapid.Bool().Draw(t, "special") {
						x[i] = vals[rapid.IntRange(0, len(vals)-1).Draw(t, "v")]
					} else {
						x[i] = rapid.Float32Range(-10, 10).Draw(t, "x")
					}
				}
				if got, want := k.Argmax(x), argmaxPortable(x); got != want {
					t.Fatalf("Argmax(%v) = %d, want %d", x, got, want)
				}
			})
		})
	}
	// The portable loop's own rules, the ones engine.NewStepResult follows.
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		x    []float32
		want int
	}{{nil, 0}, {[]float32{nan, nan}, 0}, {[]float32{nan, 1, 3, 3}, 2}, {[]float32{-inf, -inf}, 0},
		{[]float32{nan, -inf}, 1}, {[]float32{1, nan, 5, inf, inf}, 3}} {
		if got := argmaxPortable(c.x); got != c.want {
			t.Errorf("argmaxPortable(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

// BenchmarkArgmax scans a row of the real vocabulary's size (248,320 logits) with the plain loop
// (engine.NewStepResult's) and with the kernels' Argmax.
func BenchmarkArgmax(b *testing.B) {
	p := NewPool(1)
	defer p.Close()
	x := randVec(newRand(4), 248320)
	for name, f := range map[string]func([]float32) int{"portable": argmaxPortable, "kernels": New(p).Argmax} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_ = f(x)
			}
		})
	}
}
