package cpu

import "math"

// The attention helpers: one decode attention head over a block of cached keys is
// scores = K·q (Dots), p = e^{scores − max} (ExpShift), acc += Σ_t p_t·V_t (AxpyRows). Each is one
// call over the whole block, so the SIMD versions keep their accumulators in registers across keys.

// Dots computes out[t] = Σ_i q[i]·rows[t·stride + i] for t < len(out) (a row per cached key).
func (k *Kernels) Dots(out, q, rows []float32, stride int) {
	if n := len(out); n > 0 && (stride < len(q) || len(rows) < (n-1)*stride+len(q)) {
		panic("cpu: Dots: rows too short for the keys")
	}
	k.f.dots(out, q, rows, stride)
}

// ExpShift replaces x by e^{x − m} and returns Σ e^{x − m} (float64 sum of the float32 values).
func (k *Kernels) ExpShift(x []float32, m float32) float64 { return k.f.expShift(x, m, k.exp) }

// MaxOf returns the largest element of x (len(x) ≥ 1; a NaN element may or may not be returned).
// The softmax folds take each block's maximum with it: the builtin max's NaN and signed-zero
// checks made the plain loop a chain of compares and branches, a fifth of an attention profile.
func (k *Kernels) MaxOf(x []float32) float32 {
	if len(x) == 0 {
		panic("cpu: MaxOf of no elements")
	}
	return k.f.maxOf(x)
}

func maxOfPortable(x []float32) float32 {
	m := x[0]
	for _, e := range x[1:] {
		if e > m {
			m = e
		}
	}
	return m
}

// AxpyRows computes acc[i] += Σ_t p[t]·rows[t·stride + i] for t < len(p), i < len(acc).
func (k *Kernels) AxpyRows(acc, p, rows []float32, stride int) {
	if n := len(p); n > 0 && (stride < len(acc) || len(rows) < (n-1)*stride+len(acc)) {
		panic("cpu: AxpyRows: rows too short")
	}
	k.f.axpyRows(acc, p, rows, stride)
}

func dotsPortable(out, q, rows []float32, stride int) {
	for t := range out {
		out[t] = dotPortable(q, rows[t*stride:t*stride+len(q)])
	}
}

func expShiftPortable(x []float32, m float32, _ *expConsts) float64 {
	var s float64
	for i, v := range x {
		x[i] = float32(math.Exp(float64(v - m)))
		s += float64(x[i])
	}
	return s
}

func axpyRowsPortable(acc, p, rows []float32, stride int) {
	for t, a := range p {
		axpyPortable(acc, a, rows[t*stride:t*stride+len(acc)])
	}
}

// attnMaxKeys is how many keys the SIMD AxpyRows takes per pass (its broadcast copy of p lives on
// the stack); longer blocks run in passes.
const attnMaxKeys = 1024
