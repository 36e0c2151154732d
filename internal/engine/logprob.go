package engine

import "math"

// LogprobFloor stands in JSON for a log-probability that is not a finite number (NaN or ±Inf,
// e.g. from NaN weights): JSON has no such numbers, and OpenAI uses this value for tokens too
// unlikely to score, so its clients accept it.
const LogprobFloor = -9999.0

// FiniteLogprob returns v, or LogprobFloor (and false) when v is NaN or infinite.
func FiniteLogprob(v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return LogprobFloor, false
	}
	return v, true
}
