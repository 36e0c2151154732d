package metal

import (
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
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
