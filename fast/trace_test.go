package fast_test

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// TestObservedPlansMatch holds the observed twins of the layer bodies (fast/trace.go) to the plain
// ones: the same logits bit for bit, prefill and decode; every layer reports each of its points;
// and a session whose observer is detached again decodes without allocating.
func TestObservedPlansMatch(t *testing.T) {
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := fast.Open(ck.Weights, fast.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	prompt := []int32{5, 900, 31, 2048, 7, 7, 100}
	run := func(rec *trace.Recorder) [][]float32 {
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if rec != nil {
			s.(trace.Observable).Observe(rec)
		}
		full := engine.StepOptions{Full: true}
		r, err := s.Prefill(ctx, prompt, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := [][]float32{append([]float32(nil), r.Logits...)}
		for _, tok := range []int32{3, 4000} {
			if r, err = s.Decode(ctx, tok, full); err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), r.Logits...))
		}
		return out
	}
	plain := run(nil)
	rec := trace.NewRecorder()
	observed := run(rec)
	for i := range plain {
		for j := range plain[i] {
			if plain[i][j] != observed[i][j] {
				t.Fatalf("step %d logit %d: observed %v, plain %v", i, j, observed[i][j], plain[i][j])
			}
		}
	}
	layers := ck.Weights.Config.NumLayers
	if got, want := len(rec.Points()), 1+7*layers+2; got != want {
		t.Errorf("%d points recorded, want %d: %v", got, want, rec.Points())
	}
	for _, p := range rec.Points() {
		want := len(prompt) + 2
		if p.Site == trace.Logits {
			want = 3
		}
		if n := len(rec.Positions(p)); n != want {
			t.Errorf("%v: %d positions, want %d", p, n, want)
		}
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	s, _ := m.NewSession()
	defer s.Close()
	s.(trace.Observable).Observe(trace.NewRecorder())
	if _, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	s.(trace.Observable).Observe(nil)
	if n := testing.AllocsPerRun(10, func() { s.Decode(ctx, 5, engine.StepOptions{}) }); n != 0 {
		t.Fatalf("decode with the observer detached allocates %v times per token", n)
	}
}
