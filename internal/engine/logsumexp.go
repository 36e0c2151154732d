package engine

import "math"

// LogSumExp returns log Z for logits (computed in float64), so that logprob(i) = logits[i] − lse: the
// one log-softmax of the engine, the commands and fidelity.
func LogSumExp(logits []float32) float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		if float64(l) > m {
			m = float64(l)
		}
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, l := range logits {
		s += math.Exp(float64(l) - m)
	}
	return m + math.Log(s)
}
