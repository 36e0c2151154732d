package metal

import (
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
)

// TestObservedPlanMatches runs the same prefill (across chunks) and decode steps with and without
// an observer on the emulator: the piecewise run (trace.go) gives the one-buffer run's
// logits bit for bit, and every point is reported at every position.
func TestObservedPlanMatches(t *testing.T) {
	_, e := emuTestModel(t, 64) // 10 tokens: chunks of 4, 4, 2
	p := enginetest.RandomTokens(10, 256, 3)
	newSession := func() (engine.Session, error) { return e.newSession() }
	rec := tracetest.ObservedMatchesPlain(t, newSession, p, []int32{17, 4})
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
