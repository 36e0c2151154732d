package fast

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// chunkVsStepTol: the chunked and recurrent forms differ only in float32 summation order; over a
// few hundred tokens with unit-norm keys the state stays O(1) and rounding stays near 1e-5.
const chunkVsStepTol = 2e-4

// It runs on the portable kernels with small heads, and on the SIMD kernels with heads of 32 (the SIMD
// tiles' shapes) under both mild decays and strong ones (up to −8 per token: a chunk's e^{Γ}
// reaches far below float32's normal range, the case flushTiny zeroes).
func TestDeltaNetChunkedEqualsRecurrent(t *testing.T) {
	pool := cpu.NewPool(1)
	defer pool.Close()
	portable := vecOps{cpu.NewPortable(pool)} // the recurrent oracle's loops
	for _, c := range []struct {
		ops    vecOps
		dk, dv int
		decay  float64
	}{{portable, 16, 8, 0.5}, {portable, 16, 8, 8}, {vecOps{cpu.New(pool)}, 32, 32, 0.5}, {vecOps{cpu.New(pool)}, 32, 32, 8}} {
		testChunkedEqualsRecurrent(t, portable, c.ops, c.dk, c.dv, c.decay)
	}
}

func testChunkedEqualsRecurrent(t *testing.T, step, ops vecOps, dk, dv int, decay float64) {
	for _, T := range []int{1, 5, chunk - 1, chunk, chunk + 1, 2*chunk + 3, 130} {
		d := &checkpoint.Dims{Hk: 2, Hv: 4, Dk: dk, Dv: dv, K: 4}
		rng := rand.New(rand.NewPCG(uint64(T), 1))
		qkW := 2 * d.Hk * d.Dk
		qk := make([]float32, T*qkW)
		v := make([]float32, T*d.Hv*d.Dv)
		g := make([]float32, T*d.Hv)
		beta := make([]float32, T*d.Hv)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		for i := 0; i < T; i++ {
			row := qk[i*qkW : (i+1)*qkW]
			for j := range row {
				row[j] = float32(rng.NormFloat64())
			}
			for kh := 0; kh < 2*d.Hk; kh++ {
				s := float32(1)
				if kh < d.Hk {
					s = 1 / float32(math.Sqrt(float64(d.Dk)))
				}
				l2normScale(row[kh*d.Dk:(kh+1)*d.Dk], deltanetNormEps, s)
			}
		}
		for i := range g {
			g[i] = -float32(rng.Float64() * decay)
			beta[i] = float32(rng.Float64())
		}
		init := make([]float32, d.Hv*d.Dk*d.Dv)
		for i := range init {
			init[i] = float32(rng.NormFloat64()) * 0.1
		}
		s1 := append([]float32(nil), init...)
		s2 := append([]float32(nil), init...)
		o1 := make([]float32, T*d.Hv*d.Dv)
		o2 := make([]float32, T*d.Hv*d.Dv)
		for i := 0; i < T; i++ {
			deltanetStep(step, d, qk[i*qkW:(i+1)*qkW], v[i*d.Hv*d.Dv:(i+1)*d.Hv*d.Dv], g[i*d.Hv:(i+1)*d.Hv], beta[i*d.Hv:(i+1)*d.Hv],
				s1, o1[i*d.Hv*d.Dv:(i+1)*d.Hv*d.Dv], make([]float32, d.Hv*(d.Dk+d.Dv)), 0, d.Hv)
		}
		sc := newDeltaNetScratch(d.Dk, d.Dv)
		deltanetChunked(ops, d, T, qk, qkW, v, d.Hv*d.Dv, g, beta, s2, o2, sc, 0, d.Hv, false)
		if e := maxAbsDiff(o1, o2); e > chunkVsStepTol {
			t.Fatalf("dk %d decay %g T=%d: outputs differ by %g", dk, decay, T, e)
		}
		if e := maxAbsDiff(s1, s2); e > chunkVsStepTol {
			t.Fatalf("dk %d decay %g T=%d: states differ by %g", dk, decay, T, e)
		}
	}
}

// TestDeltaNetChunkedZeroState: from a state of zeros (a sequence's first tokens) the chunked rule
// told so (zero, which skips the first chunk's reads of the state) computes what it computes
// reading the zeros, outputs and state, on the portable and SIMD kernels; the token counts span
// one chunk and several, so skipping the reads past the first chunk would show.
func TestDeltaNetChunkedZeroState(t *testing.T) {
	pool := cpu.NewPool(1)
	defer pool.Close()
	d := &checkpoint.Dims{Hk: 2, Hv: 4, Dk: 32, Dv: 32, K: 4}
	for _, ops := range []vecOps{{cpu.NewPortable(pool)}, {cpu.New(pool)}} {
		for _, T := range []int{1, 5, chunk, 2*chunk + 3} {
			in := newChunkInputs(d, T, 0.5, uint64(T))
			run := func(zero bool) (state, out []float32) {
				sc := newDeltaNetScratch(d.Dk, d.Dv)
				state, out = make([]float32, len(in.state)), make([]float32, T*d.Hv*d.Dv)
				deltanetChunked(ops, d, T, in.qk, in.qkW, in.v, d.Hv*d.Dv, in.g, in.beta, state, out, sc, 0, d.Hv, zero)
				return state, out
			}
			s1, o1 := run(false)
			s2, o2 := run(true)
			for i := range o1 {
				if o1[i] != o2[i] {
					t.Fatalf("T %d: out[%d] = %g told the state is zero, %g reading it", T, i, o2[i], o1[i])
				}
			}
			for i := range s1 {
				if s1[i] != s2[i] {
					t.Fatalf("T %d: state[%d] = %g told the state is zero, %g reading it", T, i, s2[i], s1[i])
				}
			}
		}
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// TestConvStepMatchesSeq: a decoded token's conv (convStep over two channel ranges, as the pool
// splits it: at a multiple of 16 channels, where the SIMD loops' fused lanes line up with a whole
// range's) is bit for bit what a one-token prefill computes (convSeq), state included, and within
// float32 rounding of the plain per-channel sum over the checkpoint's [C, K] kernel.
func TestConvStepMatchesSeq(t *testing.T) {
	pool := cpu.NewPool(1)
	defer pool.Close()
	for _, ops := range []vecOps{{cpu.NewPortable(pool)}, {cpu.New(pool)}} {
		d := &checkpoint.Dims{K: 4, Hk: 2, Hv: 3, Dk: 16, Dv: 16} // C = 2·2·16 + 3·16 = 112
		c := d.ConvDim()
		r := rand.New(rand.NewPCG(5, 6))
		f := func(n int) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			return x
		}
		w, st, x := f(c*d.K), f((d.K-1)*c), f(c)
		wt := convWeightsT(w, c, d.K)
		stStep, out := append([]float32(nil), st...), make([]float32, c)
		convStep(ops, d, wt, stStep, x, out, 0, 48)
		convStep(ops, d, wt, stStep, x, out, 48, c)
		stSeq, row, tmp := append([]float32(nil), st...), append([]float32(nil), x...), make([]float32, d.K*c)
		convSeq(ops, d, wt, stSeq, row, 1, tmp, 0, c)
		for ch := 0; ch < c; ch++ {
			if out[ch] != row[ch] {
				t.Fatalf("channel %d: convStep %v, convSeq %v", ch, out[ch], row[ch])
			}
			acc := float64(w[ch*d.K+d.K-1]) * float64(x[ch])
			for j := 0; j < d.K-1; j++ {
				acc += float64(w[ch*d.K+j]) * float64(st[j*c+ch])
			}
			want := acc / (1 + math.Exp(-acc))
			if math.Abs(float64(out[ch])-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("channel %d: %v, want %v", ch, out[ch], want)
			}
		}
		for i := range stStep {
			if stStep[i] != stSeq[i] {
				t.Fatalf("state %d: convStep %v, convSeq %v", i, stStep[i], stSeq[i])
			}
		}
	}
}
