// Package rope holds the rotary position tables (model.md §4.4) in transformers' float32 steps, written
// once below the engines so that ref (the oracle) and the Metal engine build the same tables.
package rope

import "math"

// Table holds a model's inverse frequencies; CosSin fills one position's tables from it without
// allocating. A Table is immutable after New and safe for concurrent use.
type Table struct {
	inv []float32 // inv_freq: [rot/2]
}

// New returns the table for rotary dimension rot and base theta:
//
//	inv_freq[i] = 1 / θ^(2i/rot)   for i in [0, rot/2), each step rounded to float32 as transformers does.
func New(rot int, theta float64) *Table {
	inv := make([]float32, max(rot/2, 0))
	for i := range inv {
		exponent := float32(2*i) / float32(rot)
		inv[i] = float32(1 / float64(float32(math.Pow(theta, float64(exponent)))))
	}
	return &Table{inv: inv}
}

// Half is rot/2, the length of one position's cos and sin tables.
func (t *Table) Half() int { return len(t.inv) }

// CosSin writes position pos's tables, f_i = pos·inv_freq[i], cos[i] = cos f_i, sin[i] = sin f_i, each
// rounded to float32. cos, sin: [rot/2] (shorter slices get a prefix).
func (t *Table) CosSin(pos int, cos, sin []float32) {
	for i := range min(len(cos), len(sin), len(t.inv)) {
		f := float32(float64(pos) * float64(t.inv[i]))
		cos[i] = float32(math.Cos(float64(f)))
		sin[i] = float32(math.Sin(float64(f)))
	}
}
