package enginetest

import (
	"math"
	"math/rand/v2"
)

// RandomTokens is n token ids drawn uniformly from [0, vocab), the same for the same seed.
func RandomTokens(n, vocab int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

// SpreadDiff is max|a−b| over the spread (max − min) of a: how backends' logits are compared,
// since a shift of all logits by one constant does not change the distribution but their spread
// sets the scale of the differences that do. a, b: [V].
func SpreadDiff(a, b []float32) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	var d float64
	for i := range a {
		lo, hi = math.Min(lo, float64(a[i])), math.Max(hi, float64(a[i]))
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d / math.Max(hi-lo, 1e-30)
}
