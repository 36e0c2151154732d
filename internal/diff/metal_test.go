package diff_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/ref"
)

// TestMetalEmuWithinBudget runs the Metal engine on the CPU emulator against ref on tiny-a, prefill
// and decode: every point within its budget. Then an error injected into one point of one layer
// (written back to the device, so the rest of the plan computes with it) is named first.
func TestMetalEmuWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels for the CPU emulator with g++ (~15 s); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	ck := fixture(t, "tiny-a")
	r := open(t, func() (engine.Backend, error) { return ref.Open(ck.Weights, ref.Options{}) })
	m := open(t, func() (engine.Backend, error) {
		return metal.Open(ck.Weights, metal.Options{Device: "metal-emu", MaxContext: 256})
	})
	rep, _, _, err := diff.Run(context.Background(), m, r, prompt, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Worst() {
		t.Logf("%-18s %4d %.3g %.3g %.3g", row.Point, row.Position, row.MaxAbs, row.MaxRel, row.Budget)
	}
	if !rep.Pass {
		t.Fatalf("first %+v missing %v flips %+v", rep.First, rep.Missing, rep.Flips)
	}
	for _, fault := range []tracetest.Fault{
		{P: trace.At(2, trace.DeltaNetOut), Pos: 5, Rel: 1e-3},
		// Past two fp16-cached attention layers the budget is ~1.1e-3: inject 5e-3 there.
		{P: trace.At(7, trace.AttentionOut), Pos: len(prompt) + 1, Rel: 5e-3},
	} {
		rep, _, _, err := diff.Run(context.Background(), tracetest.Inject(m, fault), r, prompt, 2)
		if err != nil {
			t.Fatal(err)
		}
		if rep.First == nil || rep.First.Point != fault.P.String() || rep.First.Position != fault.Pos {
			t.Fatalf("injected at %v %d: first divergence %+v", fault.P, fault.Pos, rep.First)
		}
	}
}
