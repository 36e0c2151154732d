package cpu

import "fmt"

// ConvSiLU4 is one row of a 4-tap causal depthwise conv with its SiLU (the DeltaNet's):
// out[i] = silu(Σ_j w[j][i]·x[j][i]), the taps multiplied and added in order from zero — what
// clearing out, MulAdd of each tap and SiLU compute, in one pass over the row instead of a clear,
// a read and write of out per tap and one for the SiLU (bit for bit the same on each kernel set:
// TestConvSiLUMatchesSteps). w[j] and x[j] are at least len(out) long; out must not alias any x[j].
// The taps travel by value, so a call allocates nothing.
func (k *Kernels) ConvSiLU4(out []float32, w, x [4][]float32) {
	n := len(out)
	for j := range w {
		if len(w[j]) < n || len(x[j]) < n {
			panic(fmt.Sprintf("cpu: ConvSiLU4: tap %d: weights %d, input %d for %d outputs", j, len(w[j]), len(x[j]), n))
		}
	}
	if k.f.convSiLU4 != nil {
		k.f.convSiLU4(out, w, x, k.exp)
		return
	}
	clear(out)
	for j := range w {
		k.f.mulAdd(out, w[j][:n], x[j][:n])
	}
	k.f.siluMul(out, out, nil, k.exp)
}
