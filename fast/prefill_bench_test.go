package fast_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// BenchmarkPrefill is one Prefill of a fresh session on the checkpoint named by
// LILY_BENCH_MODEL (an 8-layer real-width synth, say: lily synth --preset qwen3.6-35b-a3b
// --layers 8 --layout mlx), two workers. cpu-ns/token is the process's CPU time per prompt token,
// which a shared machine's waits for a core do not inflate as they do the wall time; built from
// two commits and alternated, it compares them.
func BenchmarkPrefill(b *testing.B) {
	m, vocab := benchModel(b, 4096)
	ctx := context.Background()
	for _, n := range []int{2, 4, 8, 16, 32, 64, 256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32(i*7919) % int32(vocab)
			}
			run := func() {
				s, err := m.NewSession()
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if _, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil); err != nil {
					b.Fatal(err)
				}
			}
			run() // warm-up: first-touch costs are not the steady state
			cpu0, t0, runs := cpuTime(b), time.Now(), 0
			for b.Loop() {
				run()
				runs++
			}
			tokens := float64(runs * n)
			b.ReportMetric(float64(cpuTime(b)-cpu0)/tokens, "cpu-ns/token")
			b.ReportMetric(tokens/time.Since(t0).Seconds(), "tok/s")
		})
	}
}

// benchModel opens the checkpoint named by LILY_BENCH_MODEL (skipping the benchmark when none is)
// on two workers with a context of maxCtx; both close when the benchmark ends. It returns the
// model and its vocabulary size.
func benchModel(b *testing.B, maxCtx int) (engine.Backend, int) {
	dir := os.Getenv("LILY_BENCH_MODEL")
	if dir == "" {
		b.Skip("LILY_BENCH_MODEL names no checkpoint")
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ck.Close() })
	m, err := fast.Open(ck.Weights, fast.Options{MaxContext: maxCtx, Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m, ck.Weights.Config.VocabSize
}
