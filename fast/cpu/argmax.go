package cpu

// Argmax returns the index of the first largest value of x, NaNs ignored (0 when x is empty or
// holds only NaNs): the greedy token of a row of logits, as engine.NewStepResult picks it.
func (k *Kernels) Argmax(x []float32) int { return k.f.argmax(x) }

// argmaxPortable is Argmax as one plain loop: a value replaces the best only when larger, or when
// the best so far is a NaN (x[0] may be one) and it is not.
func argmaxPortable(x []float32) int {
	if len(x) == 0 {
		return 0
	}
	best, bv := 0, x[0]
	for i, e := range x {
		if e > bv || (bv != bv && e == e) {
			best, bv = i, e
		}
	}
	return best
}
