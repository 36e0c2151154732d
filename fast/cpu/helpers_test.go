package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
)

// randQMat returns a random quantized matrix W: [out, in] with scales of both signs.
func randQMat(r *rand.Rand, bits, out, in int) *QMat {
	m := &QMat{Bits: bits, Out: out, In: in}
	m.W = make([]byte, out*m.RowBytes())
	for i := range m.W {
		m.W[i] = byte(r.Uint32())
	}
	g := out * m.Groups()
	m.Scales, m.Biases = make([]uint16, g), make([]uint16, g)
	for i := range g {
		m.Scales[i] = safetensors.Float32ToBF16(float32(r.NormFloat64() * 0.02))
		m.Biases[i] = safetensors.Float32ToBF16(float32(r.NormFloat64() * 0.1))
	}
	return m
}

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// rmsOf returns the root mean square of y (the scale the budget tests report errors against).
func rmsOf(y []float64) float64 {
	var s float64
	for _, e := range y {
		s += e * e
	}
	return math.Sqrt(s / float64(len(y)))
}

// oracleQ returns q of element (o, i) of m, read the plain way (model.md §3.1 index math).
func oracleQ(m *QMat, o, i int) float64 {
	word := m.W[o*m.RowBytes()+i*m.Bits/32*4:]
	u := uint32(word[0]) | uint32(word[1])<<8 | uint32(word[2])<<16 | uint32(word[3])<<24
	per := 32 / m.Bits
	return float64((u >> (m.Bits * (i % per))) & (1<<m.Bits - 1))
}

// oracleQMatVec returns y = W·x with each weight dequantized as float32(scale)*float32(q)+float32(bias)
// and the dot in float64, and mass[o] = Σ|w·x|, the scale of float32 rounding error.
func oracleQMatVec(m *QMat, x []float32) (y, mass []float64) {
	y, mass = make([]float64, m.Out), make([]float64, m.Out)
	for o := range m.Out {
		for i := range m.In {
			g := o*m.Groups() + i/GroupSize
			w := safetensors.BF16ToFloat32(m.Scales[g])*float32(oracleQ(m, o, i)) + safetensors.BF16ToFloat32(m.Biases[g])
			y[o] += float64(w) * float64(x[i])
			mass[o] += math.Abs(float64(w)*float64(x[i])) +
				math.Abs(float64(safetensors.BF16ToFloat32(m.Scales[g]))*oracleQ(m, o, i)*float64(x[i])) +
				math.Abs(float64(safetensors.BF16ToFloat32(m.Biases[g]))*float64(x[i]))
		}
	}
	return y, mass
}

// variants returns the kernel sets to test on a pool: portable always, SIMD when this build and CPU
// have it.
func variants(p *Pool) map[string]*Kernels {
	v := map[string]*Kernels{"portable": NewPortable(p)}
	if k := New(p); k.SIMD() {
		v["simd"] = k
		v["simd256"] = newKernels(p, simdImpl(level256), true) // the same as "simd" without AVX-512
		v["simd512"] = newKernels(p, simdImpl(level512), true) // without AVX-512 VNNI
		kl := newKernels(p, simdImpl(levelBest), true)
		kl.largeX, kl.tokenBlock = 0, 3 // every mat-mat of more than 3 tokens in 3-token blocks
		v["simdBlocks"] = kl
	}
	return v
}

// drawShape draws a quantized matrix shape: 1 row up to a few hundred, odd counts that do not divide
// across workers, 1 to 40 groups or 64 to 72 (the 512-bit mat-vec runs rows of 64 groups and more,
// 2 KiB of 4-bit weights, in two halves).
func drawShape(t *rapid.T) (bits, out, in int) {
	bits = rapid.SampledFrom([]int{4, 8}).Draw(t, "bits")
	out = rapid.OneOf(rapid.Just(1), rapid.IntRange(2, 37), rapid.IntRange(200, 400)).Draw(t, "out")
	in = GroupSize * rapid.OneOf(rapid.IntRange(1, 40), rapid.IntRange(64, 72)).Draw(t, "groups")
	return
}

func TestSIMDReported(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	t.Logf("SIMD kernels in use: %v", New(p).SIMD())
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }
