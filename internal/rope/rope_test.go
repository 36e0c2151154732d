package rope

import (
	"math"
	"testing"
)

// TestCosSinMatchesDirectFormula checks the tables against the formula evaluated in float64 (they
// differ only by the float32 roundings transformers makes, so within a few ulps at small positions)
// and that position 0 is the identity rotation.
func TestCosSinMatchesDirectFormula(t *testing.T) {
	const rot, theta = 64, 1e7
	tb := New(rot, theta)
	if tb.Half() != rot/2 {
		t.Fatalf("Half() = %d, want %d", tb.Half(), rot/2)
	}
	cos, sin := make([]float32, rot/2), make([]float32, rot/2)
	tb.CosSin(0, cos, sin)
	for i := range cos {
		if cos[i] != 1 || sin[i] != 0 {
			t.Fatalf("pos 0, i %d: cos %g sin %g, want 1 and 0", i, cos[i], sin[i])
		}
	}
	for _, pos := range []int{1, 7, 100} {
		tb.CosSin(pos, cos, sin)
		for i := range cos {
			f := float64(pos) / math.Pow(theta, float64(2*i)/rot)
			if d := math.Abs(float64(cos[i]) - math.Cos(f)); d > 1e-5 {
				t.Errorf("pos %d i %d: cos %g, want %g", pos, i, cos[i], math.Cos(f))
			}
			if d := math.Abs(float64(sin[i]) - math.Sin(f)); d > 1e-5 {
				t.Errorf("pos %d i %d: sin %g, want %g", pos, i, sin[i], math.Sin(f))
			}
		}
	}
}

// TestCosSinDoesNotAllocate holds the per-token path to zero allocations (the Metal engine calls it
// for every token).
func TestCosSinDoesNotAllocate(t *testing.T) {
	tb := New(64, 1e7)
	cos, sin := make([]float32, 32), make([]float32, 32)
	if n := testing.AllocsPerRun(100, func() { tb.CosSin(12345, cos, sin) }); n != 0 {
		t.Fatalf("CosSin allocates %v times per call", n)
	}
}
