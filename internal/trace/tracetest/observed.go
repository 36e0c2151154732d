package tracetest

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// ObservedMatchesPlain runs the same steps (a prefill of prompt, then each token of decode) on two
// fresh sessions from newSession, the first plain and the second with a recorder attached, and
// fails t unless every step's full logits agree bit for bit (observing must not change what the
// engine computes) and the recorder saw no malformed report. It returns the recorder, for the
// caller's checks of which points were reported where.
func ObservedMatchesPlain(t testing.TB, newSession func() (engine.Session, error), prompt, decode []int32) *trace.Recorder {
	t.Helper()
	ctx := context.Background()
	run := func(rec *trace.Recorder) [][]float32 {
		s, err := newSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if rec != nil {
			obs, ok := s.(trace.Observable)
			if !ok {
				t.Fatalf("tracetest: session %T does not report intermediates", s)
			}
			obs.Observe(rec)
		}
		full := engine.StepOptions{Full: true}
		r, err := s.Prefill(ctx, prompt, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := [][]float32{append([]float32(nil), r.Logits...)}
		for _, tok := range decode {
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
		if len(plain[i]) != len(observed[i]) {
			t.Fatalf("step %d: observed %d logits, plain %d", i, len(observed[i]), len(plain[i]))
		}
		for j := range plain[i] {
			if plain[i][j] != observed[i][j] {
				t.Fatalf("step %d logit %d: observed %v, plain %v", i, j, observed[i][j], plain[i][j])
			}
		}
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	return rec
}
