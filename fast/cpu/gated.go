package cpu

import "math"

// GatedRMSNorm computes out: [n] = x: [n] · rsqrt(mean(x²) + eps) · w: [n] · silu(gate: [n]), the
// DeltaNet output norm of one value head (model.md §4.2b), the sum of squares in float32 as in
// RMSNorm. out may alias gate; len(gate), len(w) and len(out) must be at least len(x).
func (k *Kernels) GatedRMSNorm(out, x, gate, w []float32, eps float32) {
	n := len(x)
	ss := k.f.dot(x, x)
	r := float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
	k.f.gatedScale(out[:n], x, gate[:n], w[:n], r, k.exp)
}

// MulAdd computes y += a ⊙ b elementwise (a depthwise conv tap over a row of channels); len(a)
// and len(b) must be at least len(y).
func (k *Kernels) MulAdd(y, a, b []float32) { k.f.mulAdd(y, a[:len(y)], b[:len(y)]) }

// gatedScalePortable: out = x·r·w·silu(gate).
func gatedScalePortable(out, x, gate, w []float32, r float32, _ *expConsts) {
	for i, v := range x {
		g := gate[i]
		out[i] = v * r * w[i] * (g / (1 + float32(math.Exp(float64(-g)))))
	}
}

func mulAddPortable(y, a, b []float32) {
	for i := range y {
		y[i] += a[i] * b[i]
	}
}
