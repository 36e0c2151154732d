package fast

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/fast/cpu"
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
	for _, T := range []int{1, 5, 63, 64, 65, 130} {
		d := &deltanetDims{hk: 2, hv: 4, dk: dk, dv: dv, k: 4, eps: 1e-6}
		rng := rand.New(rand.NewPCG(uint64(T), 1))
		qkW := 2 * d.hk * d.dk
		qk := make([]float32, T*qkW)
		v := make([]float32, T*d.hv*d.dv)
		g := make([]float32, T*d.hv)
		beta := make([]float32, T*d.hv)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		for i := 0; i < T; i++ {
			row := qk[i*qkW : (i+1)*qkW]
			for j := range row {
				row[j] = float32(rng.NormFloat64())
			}
			for kh := 0; kh < 2*d.hk; kh++ {
				s := float32(1)
				if kh < d.hk {
					s = 1 / float32(math.Sqrt(float64(d.dk)))
				}
				l2normScale(row[kh*d.dk:(kh+1)*d.dk], d.eps, s)
			}
		}
		for i := range g {
			g[i] = -float32(rng.Float64() * decay)
			beta[i] = float32(rng.Float64())
		}
		init := make([]float32, d.hv*d.dk*d.dv)
		for i := range init {
			init[i] = float32(rng.NormFloat64()) * 0.1
		}
		s1 := append([]float32(nil), init...)
		s2 := append([]float32(nil), init...)
		o1 := make([]float32, T*d.hv*d.dv)
		o2 := make([]float32, T*d.hv*d.dv)
		for i := 0; i < T; i++ {
			deltanetStep(step, d, qk[i*qkW:(i+1)*qkW], v[i*d.hv*d.dv:(i+1)*d.hv*d.dv], g[i*d.hv:(i+1)*d.hv], beta[i*d.hv:(i+1)*d.hv],
				s1, o1[i*d.hv*d.dv:(i+1)*d.hv*d.dv], make([]float32, d.hv*(d.dk+d.dv)), 0, d.hv)
		}
		scr := make([]*deltanetScratch, d.hv)
		for h := range scr {
			scr[h] = newDeltaNetScratch(d.dk, d.dv)
		}
		deltanetChunked(ops, d, T, qk, qkW, v, d.hv*d.dv, g, beta, s2, o2, scr, 0, d.hv)
		if e := maxAbsDiff(o1, o2); e > chunkVsStepTol {
			t.Fatalf("dk %d decay %g T=%d: outputs differ by %g", dk, decay, T, e)
		}
		if e := maxAbsDiff(s1, s2); e > chunkVsStepTol {
			t.Fatalf("dk %d decay %g T=%d: states differ by %g", dk, decay, T, e)
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
