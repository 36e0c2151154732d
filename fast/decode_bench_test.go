package fast_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// BenchmarkDecode is one decode step of fixture tiny-a (8 layers, hidden 128) after a 16-token
// prompt on one worker, nothing observing: the smallest model, where a per-layer cost weighs most. Built from
// two commits, it compares them (the trace hooks' A/B). cpu-ns/op is the process's CPU time per
// step, which a shared machine's waits for a core do not inflate as they do ns/op.
func BenchmarkDecode(b *testing.B) {
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		b.Fatal(err)
	}
	defer ck.Close()
	m, err := fast.Open(ck.Weights, fast.Options{MaxContext: 1 << 16, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	prompt := make([]int32, 16)
	for i := range prompt {
		prompt[i] = int32(100 * i)
	}
	if _, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime(b)
	n := 0
	for i := 0; b.Loop(); i++ {
		n++
		if i%1024 == 1023 { // stay at a short context
			b.StopTimer()
			if err := s.Restore(sn); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.Decode(ctx, int32(i%4000), engine.StepOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(n), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
