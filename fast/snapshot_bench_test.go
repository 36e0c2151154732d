package fast_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/engine"
)

// BenchmarkChatTurn is the engine's prompt-cache flow for one chat turn at a context of ctx
// tokens on the checkpoint named by LILY_BENCH_MODEL: restore the cached snapshot, release it,
// prefill the turn's 16 new tokens, snapshot again (the context grows 16 tokens a turn). ms/turn
// is the whole turn; ms-state/turn the restore, release and snapshot alone (what the session's
// state costs to keep and bring back).
func BenchmarkChatTurn(b *testing.B) {
	m, nv := benchModel(b, 8192)
	ctx := context.Background()
	vocab := int32(nv)
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("ctx%d", n), func(b *testing.B) {
			s, err := m.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32(i*7919) % vocab
			}
			if _, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil); err != nil {
				b.Fatal(err)
			}
			snap, err := s.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			turn := make([]int32, 16)
			var state time.Duration
			t0, turns := time.Now(), 0
			for b.Loop() {
				ts := time.Now()
				if err := s.Restore(snap); err != nil {
					b.Fatal(err)
				}
				snap.Release()
				state += time.Since(ts)
				for i := range turn {
					turn[i] = int32(turns*16+i) % vocab
				}
				if _, err := s.Prefill(ctx, turn, engine.StepOptions{}, nil); err != nil {
					b.Fatal(err)
				}
				ts = time.Now()
				if snap, err = s.Snapshot(); err != nil {
					b.Fatal(err)
				}
				state += time.Since(ts)
				turns++
			}
			b.ReportMetric(float64(time.Since(t0).Milliseconds())/float64(turns), "ms/turn")
			b.ReportMetric(state.Seconds()*1e3/float64(turns), "ms-state/turn")
		})
	}
}
