package diff_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
	"github.com/lily-engine/lily/ref"
)

// fixture opens fixtures/models/<name>/mlx; the caller's cleanup closes it.
func fixture(t *testing.T, name string) *checkpoint.Checkpoint {
	t.Helper()
	ck, err := checkpoint.Open(filepath.Join("..", "..", "fixtures", "models", name, "mlx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func open(t *testing.T, f func() (engine.Backend, error)) engine.Backend {
	t.Helper()
	b, err := f()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

var prompt = []int32{9, 1000, 42, 7, 3000, 15, 88, 512, 4000, 1, 2, 3}

func TestFastWithinBudget(t *testing.T) {
	for _, fx := range []string{"tiny-a", "tiny-b"} {
		for _, portable := range []bool{false, true} {
			ck := fixture(t, fx)
			r := open(t, func() (engine.Backend, error) { return ref.Open(ck.Weights, ref.Options{}) })
			f := open(t, func() (engine.Backend, error) {
				return fast.Open(ck.Weights, fast.Options{Threads: 2, Portable: portable})
			})
			rep, _, _, err := diff.Run(context.Background(), f, r, prompt, 4)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rep.Worst() {
				t.Logf("%s portable=%v %-18s %4d %.3g %.3g %.3g", fx, portable, row.Point, row.Position, row.MaxAbs, row.MaxRel, row.Budget)
			}
			if !rep.Pass {
				t.Errorf("%s portable=%v: first %+v missing %v flips %+v", fx, portable, rep.First, rep.Missing, rep.Flips)
			}
		}
	}
}

// TestInjectedErrorIsNamed injects a small error (1e-3 of the row's scale, ~100× the budget)
// into one point of one layer, in the prefill and in a decode step, and checks that the report
// names that point and position as the first divergence.
func TestInjectedErrorIsNamed(t *testing.T) {
	ck := fixture(t, "tiny-a")
	r := open(t, func() (engine.Backend, error) { return ref.Open(ck.Weights, ref.Options{}) })
	f := open(t, func() (engine.Backend, error) { return fast.Open(ck.Weights, fast.Options{Threads: 2}) })
	for _, fault := range []tracetest.Fault{
		{P: trace.At(2, trace.DeltaNetOut), Pos: 5, Rel: 1e-3},
		{P: trace.At(3, trace.AttentionOut), Pos: len(prompt) + 1, Rel: 1e-3},
		{P: trace.At(6, trace.MoEOut), Pos: len(prompt), Rel: 1e-3},
	} {
		rep, _, _, err := diff.Run(context.Background(), tracetest.Inject(f, fault), r, prompt, 3)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pass || rep.First == nil {
			t.Fatalf("%v at %d: the report passes", fault.P, fault.Pos)
		}
		if rep.First.Point != fault.P.String() || rep.First.Position != fault.Pos {
			t.Errorf("first divergence %s at %d, want %v at %d", rep.First.Point, rep.First.Position, fault.P, fault.Pos)
		}
		out := 0
		for _, row := range rep.Rows {
			if !row.Within {
				out++
			}
		}
		if out < 2 {
			t.Errorf("%v at %d: %d rows out of budget: the error did not reach the layers after it", fault.P, fault.Pos, out)
		}
	}
}
