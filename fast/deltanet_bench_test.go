package fast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// BenchmarkDeltaNetChunked is the chunked delta rule of one DeltaNet layer's prefill at the real
// dims (Hk 16, Hv 32, Dk = Dv = 128) on one locked thread, all 32 value heads, for prompts of 256
// and 1024 tokens. Per-token log-decays are uniform in (−1, 0], so a chunk's e^{Γ} spans from 1 to
// far below float32's normal range, as the real model's do. thread-ms/op is the locked thread's CPU
// time per call: on a shared host it is the figure to compare, old binary against new.
func BenchmarkDeltaNetChunked(b *testing.B) {
	for _, T := range []int{256, 1024} {
		b.Run(fmt.Sprintf("T%d", T), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pool := cpu.NewPool(1)
			defer pool.Close()
			ops := vecOps{cpu.New(pool)}
			d := &checkpoint.Dims{Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4}
			in := newChunkInputs(d, T, 1, 1)
			sc := newDeltaNetScratch(d.Dk, d.Dv)
			state := make([]float32, len(in.state))
			out := make([]float32, T*d.Hv*d.Dv)
			c0, n := threadCPUTime(), 0
			for b.Loop() {
				copy(state, in.state)
				deltanetChunked(ops, d, T, in.qk, in.qkW, in.v, d.Hv*d.Dv, in.g, in.beta, state, out, sc, 0, d.Hv, false)
				n++
			}
			b.ReportMetric(float64(threadCPUTime()-c0)/float64(n)/1e6, "thread-ms/op")
			b.ReportMetric(float64(T*n)/(threadCPUTime()-c0).Seconds(), "tok/thread-s")
		})
	}
}

// BenchmarkDeltaNetConvNorm is the rest of a DeltaNet layer's prefill outside the mat-mats and the
// chunked rule, at the real dims on one locked thread: the causal conv with SiLU over all 8192
// channels (convSeq) and the gated output norm of every value head (gatedNorm), for 1024 tokens.
func BenchmarkDeltaNetConvNorm(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := cpu.NewPool(1)
	defer pool.Close()
	ops := vecOps{cpu.New(pool)}
	d := &checkpoint.Dims{Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4}
	const T = 1024
	c, vd := d.ConvDim(), d.Hv*d.Dv
	rng := rand.New(rand.NewPCG(2, 3))
	f := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	x0, w, st0, o, z, gw := f(T*c), f(c*d.K), f((d.K-1)*c), f(T*vd), f(T*vd), f(d.Dv)
	x, st, y, tmp := make([]float32, T*c), make([]float32, len(st0)), make([]float32, T*vd), make([]float32, d.K*c)
	wt := convWeightsT(w, c, d.K)
	c0, n := threadCPUTime(), 0
	for b.Loop() {
		copy(x, x0)
		copy(st, st0)
		convSeq(ops, d, wt, st, x, T, tmp, 0, c)
		for i := 0; i < T*d.Hv; i++ {
			gatedNorm(ops, o[i*d.Dv:(i+1)*d.Dv], z[i*d.Dv:(i+1)*d.Dv], gw, y[i*d.Dv:(i+1)*d.Dv], 1e-6)
		}
		n++
	}
	b.ReportMetric(float64(threadCPUTime()-c0)/float64(n)/1e6, "thread-ms/op")
}

// chunkInputs are the delta rule's inputs for T tokens: q/k rows L2-normalised (q scaled by
// Dk^-1/2), values N(0, 1), log-decays uniform in (−decay, 0], β uniform in [0, 1), and an initial
// state N(0, 0.01).
type chunkInputs struct {
	qk, v, g, beta, state []float32
	qkW                   int
}

func newChunkInputs(d *checkpoint.Dims, T int, decay float64, seed uint64) *chunkInputs {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := &chunkInputs{qkW: 2 * d.Hk * d.Dk}
	in.qk = make([]float32, T*in.qkW)
	in.v = make([]float32, T*d.Hv*d.Dv)
	in.g = make([]float32, T*d.Hv)
	in.beta = make([]float32, T*d.Hv)
	for i := range in.v {
		in.v[i] = float32(rng.NormFloat64())
	}
	for i := 0; i < T; i++ {
		row := in.qk[i*in.qkW : (i+1)*in.qkW]
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
	for i := range in.g {
		in.g[i] = -float32(rng.Float64() * decay)
		in.beta[i] = float32(rng.Float64())
	}
	in.state = make([]float32, d.Hv*d.Dk*d.Dv)
	for i := range in.state {
		in.state[i] = float32(rng.NormFloat64()) * 0.1
	}
	return in
}

// threadCPUTime returns the CPU time the calling OS thread has used (getrusage RUSAGE_THREAD).
func threadCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1 = RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDeltaNetStep is the delta rule of one decode token (deltanetStep) over a whole layer's
// 32 value heads at the real dims, split over 1 or 2 workers by key head as the decode step splits
// it, cycling through 48 layers' states (96 MB, past the L3: in decode the weights stream through
// the caches between two tokens' steps, so each layer's 2 MB state comes from DRAM). It is the
// state's part of a decode step's DeltaNet phase (conv, norms, gates and the output norm are not
// in it): the figure to set against that phase's time in a decode step.
func BenchmarkDeltaNetStep(b *testing.B) {
	const layers = 48
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("w%d", workers), func(b *testing.B) {
			pool := cpu.NewPool(workers)
			defer pool.Close()
			ops := vecOps{cpu.New(pool)}
			d := &checkpoint.Dims{Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4}
			per, rep := d.Hv*d.Dk*d.Dv, d.Hv/d.Hk
			block := make([]float32, layers*per)
			r := rand.New(rand.NewPCG(4, 4))
			for i := range block {
				block[i] = float32(r.NormFloat64() * 0.01)
			}
			qk := make([]float32, 2*d.Hk*d.Dk)
			for i := range qk {
				qk[i] = float32(r.NormFloat64() * 0.1)
			}
			v := make([]float32, d.Hv*d.Dv)
			g, beta := make([]float32, d.Hv), make([]float32, d.Hv)
			for h := range g {
				g[h], beta[h] = -0.05, 0.5
			}
			out := make([]float32, d.Hv*d.Dv)
			scr := make([]float32, d.Hv*(d.Dk+d.Dv))
			i := 0
			for b.Loop() {
				state := block[i%layers*per : (i%layers+1)*per]
				pool.Run(d.Hk, func(lo, hi int) {
					deltanetStep(ops, d, qk, v, g, beta, state, out, scr, lo*rep, hi*rep)
				})
				i++
			}
			b.ReportMetric(float64(4*per*2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
