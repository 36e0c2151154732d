package fast_test

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
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
	rec := tracetest.ObservedMatchesPlain(t, m.NewSession, prompt, []int32{3, 4000})
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
