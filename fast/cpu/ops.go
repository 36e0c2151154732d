package cpu

import "math"

// The helpers below run on the calling goroutine: each touches at most a few hundred KB, less
// than a pool hand-off is worth.

// Dot returns Σ a_i·b_i in float32; len(b) must be at least len(a).
func (k *Kernels) Dot(a, b []float32) float32 { return k.f.dot(a, b[:len(a)]) }

// Axpy computes y += a·x; len(x) must be at least len(y).
func (k *Kernels) Axpy(y []float32, a float32, x []float32) { k.f.axpy(y, a, x[:len(y)]) }

// ScaleAxpy computes y = b·y + a·x (the delta rule's decay-and-update of one state row); len(x)
// must be at least len(y).
func (k *Kernels) ScaleAxpy(y []float32, b, a float32, x []float32) {
	k.f.scaleAxpy(y, b, a, x[:len(y)])
}

// RMSNorm computes out: [n] = x: [n] · rsqrt(mean(x²) + eps) · w: [n] (the multiplier as stored,
// 1+w already applied; model.md §4.2). out may alias x.
func (k *Kernels) RMSNorm(out, x, w []float32, eps float32) {
	n := len(x)
	ss := k.f.dot(x, x)
	inv := float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
	for i, e := range x {
		out[i] = e * inv * w[i]
	}
}

// RMSNorm64 computes out: [n] = x·w/√(mean(x²)+eps) with the sum of squares in float64 (ref's
// accumulation; the squares of float32 values are exact in float64, so only the order of the adds
// differs between the variants) and the products in float32, x·r then ·w. out may alias x.
func (k *Kernels) RMSNorm64(out, x, w []float32, eps float64) {
	k.f.rmsNorm64(out[:len(x)], x, w[:len(x)], eps)
}

// rmsNorm64Portable is RMSNorm64 in plain Go.
func rmsNorm64Portable(out, x, w []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(ss/float64(len(x))+eps))
	for i, v := range x {
		out[i] = v * r * w[i]
	}
}

// SiLUMul computes out: [n] = silu(gate: [n]) · up: [n] (SwiGLU), silu(g) = g/(1+e^-g).
// out may alias gate or up; len(up) and len(out) must be at least len(gate).
func (k *Kernels) SiLUMul(out, gate, up []float32) {
	k.f.siluMul(out[:len(gate)], gate, up[:len(gate)], k.exp)
}

// SiLU computes out: [n] = silu(x: [n]); out may alias x, len(out) ≥ len(x). The SIMD version
// evaluates e^-x in float32 (exp by range reduction and a degree-7 polynomial, about 2 ulp), the
// portable one in float64. A 40-layer decode step takes ~5·10⁵ of them (the DeltaNet conv and output
// gate, the SwiGLU of every expert), so the float32 exp is a visible part of the step.
func (k *Kernels) SiLU(out, x []float32) { k.f.siluMul(out[:len(x)], x, nil, k.exp) }

// SigmoidMul multiplies x: [n] by sigmoid(g: [n]) in place (attention's output gate); len(g) ≥
// len(x). The SIMD version evaluates e^-g in float32 as SiLU does, the portable one in float64.
func (k *Kernels) SigmoidMul(x, g []float32) { k.f.sigmoidMul(x, g[:len(x)], k.exp) }

// sigmoidMulPortable: x *= 1/(1+e^-g).
func sigmoidMulPortable(x, g []float32, _ *expConsts) {
	for i, v := range g {
		x[i] *= 1 / (1 + float32(math.Exp(float64(-v))))
	}
}

// siluMulPortable: out = silu(g)·u, or silu(g) when u is nil.
func siluMulPortable(out, g, u []float32, _ *expConsts) {
	for i, v := range g {
		s := v / (1 + float32(math.Exp(float64(-v))))
		if u != nil {
			s *= u[i]
		}
		out[i] = s
	}
}

// Softmax replaces x: [n] by softmax(x) (max-subtracted, float32).
func (k *Kernels) Softmax(x []float32) {
	m := float32(math.Inf(-1))
	for _, e := range x {
		m = max(m, e)
	}
	var s float32
	for i, e := range x {
		x[i] = float32(math.Exp(float64(e - m)))
		s += x[i]
	}
	inv := 1 / s
	for i := range x {
		x[i] *= inv
	}
}

// TopK writes to idx: [k] the indices of the k largest values of x, largest first; equal values
// keep ascending index order (torch.topk on the router is stable in practice). k <= len(x) and
// idx needs len(idx) == k. It allocates nothing.
func (k *Kernels) TopK(idx []int, x []float32) {
	n := 0
	for i, e := range x {
		if n < len(idx) {
			idx[n] = i
			n++
			sortInsertLast(idx[:n], x)
			continue
		}
		if e > x[idx[n-1]] {
			idx[n-1] = i
			sortInsertLast(idx[:n], x)
		}
	}
}

// sortInsertLast moves the last index of idx into place so that x[idx] is descending and ties
// stay in ascending index order.
func sortInsertLast(idx []int, x []float32) {
	j := len(idx) - 1
	for j > 0 && x[idx[j]] > x[idx[j-1]] {
		idx[j], idx[j-1] = idx[j-1], idx[j]
		j--
	}
}

func dotPortable(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func scaleAxpyPortable(y []float32, b, a float32, x []float32) {
	for i := range y {
		y[i] = y[i]*b + a*x[i]
	}
}

func axpyPortable(y []float32, a float32, x []float32) {
	for i := range y {
		y[i] += a * x[i]
	}
}

// expConsts are the constants of the SIMD float32 exp (exp16), each broadcast to 16 lanes so that
// the kernels load them as they are (a broadcast from memory costs a shuffle on the port the
// exponent's FMAs need): log2(e); −ln2 in a high part exact in float32 and the rest (Cody–Waite);
// the Taylor coefficients 1/7! … 1/2! and 1 of e^r on |r| ≤ ln2/2 (truncation error ≤ 5.3e-9
// relative there, below float32 rounding). Each Kernels holds one, made by newExpConsts.
type expConsts [10][16]float32

func newExpConsts() *expConsts {
	v := [10]float32{1.4426950408889634, -0.693359375, 2.12194440e-4,
		1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1}
	c := new(expConsts)
	for i, x := range v {
		for j := range c[i] {
			c[i][j] = x
		}
	}
	return c
}
