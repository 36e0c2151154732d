package ref

import "math"

// RMSNorm is the zero-centred RMSNorm of model.md §4.2a with its multiplier already applied by the
// loader (w = 1+weight for HF, the stored value for MLX):
//
//	r = 1/sqrt(mean(x²) + eps);  y[i] = (x[i]·r)·w[i]
//
// in HF's order (normalise, then multiply). x, w, out: [N]; out may alias x.
func RMSNorm(out, x, w []float32, eps float64) {
	r := invRMS(x, eps)
	for i := range x {
		out[i] = float32(x[i]*r) * w[i]
	}
}

// GatedRMSNorm is linear_attn.norm (model.md §4.2b), per value head, weight used as is:
//
//	r = 1/sqrt(mean(o²) + eps);  y[i] = ((o[i]·r)·w[i])·silu(z[i])
//
// o, z, w, out: [Dv]; out may alias o.
func GatedRMSNorm(out, o, z, w []float32, eps float64) {
	r := invRMS(o, eps)
	for i := range o {
		n := float32(o[i]*r) * w[i]
		out[i] = n * SiLU(z[i])
	}
}

// invRMS is float32(1/sqrt(mean(x²)+eps)) with the mean accumulated in float64.
func invRMS(x []float32, eps float64) float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	variance := float32(s / float64(len(x)))
	return float32(1 / math.Sqrt(float64(variance)+eps))
}

// SiLU is x·sigmoid(x) = x / (1 + e^(−x)), computed in float64 and rounded once.
func SiLU(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

// Sigmoid is 1 / (1 + e^(−x)), computed in float64 and rounded once.
func Sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// Softplus is log(1 + e^x) with torch's threshold: it returns x itself for x > 20.
func Softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}
