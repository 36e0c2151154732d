package fast

import (
	"context"
	"math"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// tinySession opens fixture tiny-a and returns a new session and a prompt of n tokens.
func tinySession(t *testing.T, n int) (*Session, []int32) {
	t.Helper()
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	m, err := Open(ck.Weights, Options{MaxContext: 4096, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(i*7919) % int32(ck.Weights.Config.VocabSize)
	}
	s, _ := m.NewSession()
	return s.(*Session), toks
}

// TestPrefillBuffersDirty holds the prefill plan to writing each lent buffer whole before reading
// it: with every lent buffer (the activations and the workers' scratch) filled with NaN first, two
// Prefill calls (the first of two chunks) give bit for bit the logits of clean ones.
func TestPrefillBuffersDirty(t *testing.T) {
	var logits [2][]float32
	for i, poison := range []bool{false, true} {
		s, toks := tinySession(t, prefillChunk+40)
		s.pf.poison, s.work.poison = poison, poison
		ctx := context.Background()
		if _, err := s.Prefill(ctx, toks[:prefillChunk+20], engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := s.Prefill(ctx, toks[prefillChunk+20:], engine.StepOptions{Full: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		logits[i] = append([]float32(nil), res.Logits...)
	}
	for j, v := range logits[1] {
		if math.Float32bits(v) != math.Float32bits(logits[0][j]) {
			t.Fatalf("logit %d: %g with dirty buffers, %g with clean ones", j, v, logits[0][j])
		}
	}
}

// TestIdleSessionHoldsNoChunkBuffers: the chunk-sized prefill buffers (the layer steps'
// activations, the batched experts' outputs) are held during a Prefill call and none after it —
// an idle session holds its state, KV cache and decode buffers only.
func TestIdleSessionHoldsNoChunkBuffers(t *testing.T) {
	s, toks := tinySession(t, 64)
	during := 0
	each := func(int, []float32) error {
		during = max(during, s.prefillHeld())
		return nil
	}
	if _, err := s.Prefill(context.Background(), toks, engine.StepOptions{}, each); err != nil {
		t.Fatal(err)
	}
	hs := s.m.cfg.HiddenSize
	if during < 3*4*len(toks)*hs {
		t.Fatalf("during Prefill the session held %d bytes of prefill buffers, want at least the residual stream's 3×[%d, %d] floats", during, len(toks), hs)
	}
	if n := s.prefillHeld(); n != 0 {
		t.Fatalf("an idle session holds %d bytes of prefill buffers, want 0", n)
	}
}

// TestPrefillBuffersReused: a Prefill call leaves its chunk-sized buffers to the model, and the
// next call — on another session — runs on those same buffers rather than fresh ones, giving them
// back at its end; its logits are bit for bit those of a model that never prefilled before (with
// the same per-position callback: the callback's path computes every position's logits).
func TestPrefillBuffersReused(t *testing.T) {
	a, toks := tinySession(t, 64)
	m := a.m
	ctx := context.Background()
	if _, err := a.Prefill(ctx, toks, engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	spare := m.spare.bytes()
	if spare == 0 || a.prefillHeld() != 0 {
		t.Fatalf("after Prefill the model's spare holds %d bytes and the session %d, want >0 and 0", spare, a.prefillHeld())
	}
	first := &m.spare.slots[0][0]
	var yd *float32 // the batched experts' buffers, where the fixture's experts run batched
	if len(m.spare.moe.yd) > 0 {
		yd = &m.spare.moe.yd[0]
	}
	b := m.newSession()
	reused := false
	each := func(int, []float32) error {
		reused = len(b.pf.slots) > 0 && &b.pf.slots[0][0] == first && (yd == nil || &b.moe.yd[0] == yd)
		if m.spare.bytes() != 0 {
			t.Errorf("during Prefill the model's spare still holds %d bytes", m.spare.bytes())
		}
		return nil
	}
	got, err := b.Prefill(ctx, toks, engine.StepOptions{Full: true}, each)
	if err != nil {
		t.Fatal(err)
	}
	if !reused {
		t.Fatal("the second Prefill did not run on the first one's buffers")
	}
	if m.spare.bytes() < spare || b.prefillHeld() != 0 {
		t.Fatalf("after the second Prefill the spare holds %d bytes (want at least %d) and the session %d", m.spare.bytes(), spare, b.prefillHeld())
	}
	fresh, _ := tinySession(t, 64)
	want, err := fresh.Prefill(ctx, toks, engine.StepOptions{Full: true}, func(int, []float32) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range got.Logits {
		if math.Float32bits(v) != math.Float32bits(want.Logits[j]) {
			t.Fatalf("logit %d: %g on reused buffers, %g on fresh ones", j, v, want.Logits[j])
		}
	}
}
