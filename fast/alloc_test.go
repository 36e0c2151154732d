package fast_test

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// TestDecodeAllocatesNothing holds the decode plan to "no allocation per token" (the KV cache grows
// in 1,024-token steps, which these few steps do not reach).
func TestDecodeAllocatesNothing(t *testing.T) {
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	pool := cpu.NewPool(2)
	defer pool.Close()
	m, err := fast.New(ck.Weights, cpu.New(pool), fast.Options{MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.NewSession()
	ctx := context.Background()
	if _, err := s.Prefill(ctx, []int32{1, 2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { s.Decode(ctx, 5) }); n != 0 {
		t.Fatalf("decode allocates %v times per token", n)
	}
}
