package ref

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestAttendOneTokenReturnsV(t *testing.T) {
	v := []float32{0.25, -3, 7, 1e-3}
	got := AttendHead([]float32{5, -1, 2, 0.5}, [][]float32{{0.3, 0.1, -2, 4}}, [][]float32{v}, 0.5)
	if maxAbsDiff(t, got, v) != 0 {
		t.Errorf("one-key attention = %v, want v = %v", got, v)
	}
	// Two keys with equal scores average their values.
	got = AttendHead([]float32{1, 0}, [][]float32{{0, 1}, {0, -1}}, [][]float32{{2, 0}, {0, 4}}, 1)
	if maxAbsDiff(t, got, []float32{1, 2}) != 0 {
		t.Errorf("equal-score attention = %v, want [1 2]", got)
	}
}

func TestRoPEByHand(t *testing.T) {
	// rot = 2: inv_freq = [1], so position p rotates (x0, x1) by p radians; dims ≥ 2 are untouched.
	cos, sin := RopeCosSin(1, 2, 1e7)
	x := []float32{1, 0, 9}
	ApplyRoPE(x, cos, sin)
	if x[0] != float32(math.Cos(1)) || x[1] != float32(math.Sin(1)) || x[2] != 9 {
		t.Errorf("rope(1,0,9) at pos 1 = %v, want [cos 1, sin 1, 9]", x)
	}
	// rot = 4, θ = 100: inv_freq = [1, 1/10]; the second pair (x1, x3) turns by pos/10.
	cos, sin = RopeCosSin(5, 4, 100)
	x = []float32{0, 1, 0, 0}
	ApplyRoPE(x, cos, sin)
	if math.Abs(float64(x[1])-math.Cos(0.5)) > 1e-7 || math.Abs(float64(x[3])-math.Sin(0.5)) > 1e-7 || x[0] != 0 || x[2] != 0 {
		t.Errorf("rope(0,1,0,0) at pos 5, θ=100 = %v, want [0 cos .5 0 sin .5]", x)
	}
}

// ropeNormTol is the relative change allowed in a rotated pair's norm: cos/sin and the products are
// each rounded to float32, so the norm drifts by a few float32 ulps.
const ropeNormTol = 1e-6

func TestRoPEPreservesNormsAndPassThrough(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := 2 * rapid.IntRange(1, 64).Draw(rt, "half d")
		rot := 2 * rapid.IntRange(1, d/2).Draw(rt, "half rot")
		pos := rapid.IntRange(0, 300000).Draw(rt, "pos")
		theta := rapid.SampledFrom([]float64{1e4, 1e6, 1e7}).Draw(rt, "theta")
		x := make([]float32, d)
		for i := range x {
			x[i] = float32(rapid.Float64Range(-10, 10).Draw(rt, "x"))
		}
		y := append([]float32(nil), x...)
		cos, sin := RopeCosSin(pos, rot, theta)
		ApplyRoPE(y, cos, sin)
		half := rot / 2
		for i := 0; i < half; i++ {
			n0 := math.Hypot(float64(x[i]), float64(x[i+half]))
			n1 := math.Hypot(float64(y[i]), float64(y[i+half]))
			if math.Abs(n1-n0) > ropeNormTol*n0+1e-30 {
				rt.Fatalf("pair %d: norm %g → %g", i, n0, n1)
			}
		}
		for i := rot; i < d; i++ {
			if y[i] != x[i] {
				rt.Fatalf("dim %d ≥ rot %d changed: %g → %g", i, rot, x[i], y[i])
			}
		}
		if pos == 0 && maxAbsDiff(t, x, y) != 0 {
			rt.Fatal("position 0 must be the identity")
		}
	})
}
