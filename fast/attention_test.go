package fast

import (
	"context"
	"runtime"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

// prefillAllocSlack bounds how many more bytes a 64-token prefill chunk may allocate after 1,900
// cached positions than after 64: runtime noise only. Scores held for the whole context
// ([64 positions × Hq, n] float32) would add megabytes on tiny-a.
const prefillAllocSlack = 128 << 10

// TestPrefillAttentionMemoryFlat: prefill attention is tiled over blocks of keys, so the memory a
// chunk allocates does not grow with the context it attends to (no [t, n] score matrix).
func TestPrefillAttentionMemoryFlat(t *testing.T) {
	b, vocab := openTiny(t, Options{MaxContext: 4096, Threads: 2})
	toks := make([]int32, 1900)
	for i := range toks {
		toks[i] = int32(i*31) % int32(vocab)
	}
	ctx := context.Background()
	// chunkBytes prefills after tokens of context, then returns the bytes one more 64-token chunk
	// allocates (1,900 + 64 stays within the cache's 2,048-token growth step).
	chunkBytes := func(after int) uint64 {
		s, _ := b.NewSession()
		defer s.Close()
		if _, err := s.Prefill(ctx, toks[:after], engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := s.Prefill(ctx, toks[:64], engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	short, long := chunkBytes(64), chunkBytes(1900)
	t.Logf("64-token chunk allocates %d bytes after 64 positions, %d after 2048", short, long)
	if long > short+prefillAllocSlack {
		t.Fatalf("a 64-token chunk allocates %d bytes after 1900 positions against %d after 64", long, short)
	}
}
