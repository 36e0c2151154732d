package metal

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/metal/device"
)

// TestObservedPlanMatches runs the same prefill (across chunks) and decode steps with and without
// an observer on the emulator: the piecewise run (trace.go) gives the one-buffer run's
// logits bit for bit, and every point is reported at every position.
func TestObservedPlanMatches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kernel emulator with g++ and runs it slowly; skipped in -short")
	}
	ck := openTest(t, "mlx")
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	e, err := newModel(ck.Weights, dev, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.chunk = 4 // 10 tokens: chunks of 4, 4, 2
	ctx := context.Background()
	p := toks(10, 256, 3)
	run := func(rec *trace.Recorder) [][]float32 {
		s, err := e.newSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if rec != nil {
			s.Observe(rec)
		}
		full := engine.StepOptions{Full: true}
		r, err := s.Prefill(ctx, p, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := [][]float32{append([]float32(nil), r.Logits...)}
		for _, tok := range []int32{17, 4} {
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
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	for _, pt := range rec.Points() {
		if pt.Site == trace.FinalNorm || pt.Site == trace.Logits {
			continue // the head of a prefill chunk norms its last row only
		}
		if n := len(rec.Positions(pt)); n != len(p)+2 {
			t.Errorf("%v: %d positions, want %d", pt, n, len(p)+2)
		}
	}
	if n := len(rec.Points()); n != 1+7*len(e.w.layers)+2 {
		t.Errorf("%d points, want %d", n, 1+7*len(e.w.layers)+2)
	}
}
