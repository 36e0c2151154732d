package ref

// CausalConv1D is the DeltaNet short convolution of model.md §4.3 step 2: depthwise over time, K taps,
// no bias, then SiLU:
//
//	y[t,c] = silu( Σ_{j=0..K-1} w[c,j] · x[t−(K−1)+j, c] )
//
// where rows before the first new token come from state (the last K−1 pre-conv rows, oldest first;
// zeros at sequence start). The sum accumulates in float64. On return state holds the last K−1 rows
// of state ++ x, so a later call continues the sequence exactly.
//
// x: [T][C] pre-conv rows; state: [K−1][C]; w: [C·K], w[c·K+K−1] multiplies the current token
// → [T][C] post-SiLU rows.
func CausalConv1D(x, state [][]float32, w []float32, K int) [][]float32 {
	// window: [K−1+T][C], the cached rows followed by the new ones.
	window := make([][]float32, 0, len(state)+len(x))
	window = append(window, state...)
	window = append(window, x...)
	out := make([][]float32, len(x))
	for t := range x {
		row := make([]float32, len(x[t]))
		for c := range row {
			var s float64
			for j := 0; j < K; j++ {
				s += float64(w[c*K+j]) * float64(window[t+j][c])
			}
			row[c] = SiLU(float32(s))
		}
		out[t] = row
	}
	for i := range state { // keep the last K−1 rows (copied: x belongs to the caller)
		copy(state[i], window[len(x)+i])
	}
	return out
}
