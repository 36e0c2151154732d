package fast_test

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// TestDecodeGreedyIsArgmax checks that the greedy id a decode step returns (found by the kernels'
// Argmax) is the one engine.NewStepResult picks from the same logits, over a run of greedy steps
// on fixture tiny-a.
func TestDecodeGreedyIsArgmax(t *testing.T) {
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := fast.Open(ck.Weights, fast.Options{MaxContext: 256, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	ctx := context.Background()
	r, err := s.Prefill(ctx, []int32{1, 2, 3}, engine.StepOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 {
		if r, err = s.Decode(ctx, r.Greedy, engine.StepOptions{Full: true}); err != nil {
			t.Fatal(err)
		}
		if want := engine.NewStepResult(r.Logits, engine.StepOptions{}).Greedy; r.Greedy != want {
			t.Fatalf("step %d: Greedy %d, the logits' argmax %d", i, r.Greedy, want)
		}
	}
}
