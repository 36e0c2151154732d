package cpu

import "math"

// Vec is an input vector prepared once for every quantized mat-vec that reads it (the same
// normalized hidden state feeds the q/k/v, router and all expert projections).
//
// Prepare fills, for x: [In]:
//   - x: the values as given;
//   - sum: [In/64] Σ x over each group, for the bias term of the fused dequantization;
//   - p4, p8: x permuted into the order in which the SIMD kernels unpack 4-bit and 8-bit words;
//   - q, d: x quantized to int8 per group of 64 (x ≈ d[g]·q), in the 4-bit unpack order, for the
//     Q8 kernel.
//
// A Vec is owned by one goroutine; the kernels only read it.
type Vec struct {
	n    int
	x    []float32
	sum  []float32
	p4   []float32
	p8   []float32
	q    []int8
	d    []float32
	hasQ bool
}

// NewVec allocates a Vec for inputs of length n (a multiple of 64).
func NewVec(n int) *Vec {
	g := n / GroupSize
	return &Vec{
		n: n, x: make([]float32, n), sum: make([]float32, g),
		p4: make([]float32, n), p8: make([]float32, n),
		q: make([]int8, n), d: make([]float32, g),
	}
}

// Len returns the input length.
func (v *Vec) Len() int { return v.n }

// Prepare loads x: [n] into v (everything except the int8 copy). It allocates nothing.
func (v *Vec) Prepare(x []float32) {
	if len(x) != v.n {
		panic("cpu: Vec.Prepare: length mismatch")
	}
	copy(v.x, x)
	v.hasQ = false
	for g := range v.sum {
		xs := x[g*GroupSize : (g+1)*GroupSize]
		var s float32
		for _, e := range xs {
			s += e
		}
		v.sum[g] = s
		permute4(v.p4[g*GroupSize:(g+1)*GroupSize], xs)
		permute8(v.p8[g*GroupSize:(g+1)*GroupSize], xs)
	}
}

// PrepareQ8 also fills the int8 copy: per group, d = max|x|/127 and q = round(x/d), stored as the
// 32 even-indexed elements followed by the 32 odd-indexed ones (the order of the low and high
// nibbles of the group's 32 packed bytes).
func (v *Vec) PrepareQ8(x []float32) {
	v.Prepare(x)
	for g := range v.d {
		xs := x[g*GroupSize : (g+1)*GroupSize]
		var amax float32
		for _, e := range xs {
			amax = max(amax, float32(math.Abs(float64(e))))
		}
		d := amax / 127
		v.d[g] = d
		var inv float32
		if d != 0 {
			inv = 1 / d
		}
		q := v.q[g*GroupSize : (g+1)*GroupSize]
		for j := range 32 {
			q[j] = int8(math.RoundToEven(float64(xs[2*j] * inv)))
			q[32+j] = int8(math.RoundToEven(float64(xs[2*j+1] * inv)))
		}
	}
	v.hasQ = true
}
