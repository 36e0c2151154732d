package fast_test

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/synth"
)

// TestDecodeAllocatesNothing holds the decode plan to "no allocation per token" (the KV cache grows
// in 1,024-token steps, which these few steps do not reach).
//
// It runs on fixture tiny-a and on a synthetic checkpoint with the real model's top-8 routing:
// the widest gathered dispatch (gate and up of 8 experts and the shared one, 18 mat-vecs) once grew
// its job list on every MoE block, which tiny-a's top-2 never showed.
func TestDecodeAllocatesNothing(t *testing.T) {
	t.Run("tiny-a", func(t *testing.T) { decodeAllocs(t, "../fixtures/models/tiny-a/mlx") })
	t.Run("synth-top8", func(t *testing.T) {
		c, err := synth.Preset(synth.PresetTiny)
		if err != nil {
			t.Fatal(err)
		}
		c.NumExperts, c.NumExpertsPerTok, c.NumLayers = 16, 8, 4
		p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := synth.Write(context.Background(), p, dir, synth.Options{Seed: 1}); err != nil {
			t.Fatal(err)
		}
		decodeAllocs(t, dir)
	})
}

func decodeAllocs(t *testing.T, dir string) {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := fast.Open(ck.Weights, fast.Options{MaxContext: 4096, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	ctx := context.Background()
	if _, err := s.Prefill(ctx, []int32{1, 2, 3}, engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { s.Decode(ctx, 5, engine.StepOptions{}) }); n != 0 {
		t.Fatalf("decode allocates %v times per token", n)
	}
}
