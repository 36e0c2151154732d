package diff_test

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/safetensors"
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
				return fast.Open(ck.Weights, fast.Options{Threads: 2, Portable: portable, KVCacheF32: true})
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

// TestInjectedErrorIsNamed injects a small error (1e-3 of the row's scale, ~100× the budget; 5e-3
// past an attention layer, whose fp16 KV cache allows ~5e-4)
// into one point of one layer, in the prefill and in a decode step, and checks that the report
// names that point and position as the first divergence.
func TestInjectedErrorIsNamed(t *testing.T) {
	ck := fixture(t, "tiny-a")
	r := open(t, func() (engine.Backend, error) { return ref.Open(ck.Weights, ref.Options{}) })
	f := open(t, func() (engine.Backend, error) {
		return fast.Open(ck.Weights, fast.Options{Threads: 2, KVCacheF32: true})
	})
	for _, fault := range []tracetest.Fault{
		{P: trace.At(2, trace.DeltaNetOut), Pos: 5, Rel: 1e-3},
		{P: trace.At(3, trace.AttentionOut), Pos: len(prompt) + 1, Rel: 5e-3},
		{P: trace.At(6, trace.MoEOut), Pos: len(prompt), Rel: 5e-3},
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

// TestDumpReadsBack dumps a fast trace and reads it back with the safetensors reader: every
// point's rows and positions, and a router's experts, as recorded.
func TestDumpReadsBack(t *testing.T) {
	ck := fixture(t, "tiny-b")
	f := open(t, func() (engine.Backend, error) {
		return fast.Open(ck.Weights, fast.Options{Threads: 2, KVCacheF32: true})
	})
	tr, toks, err := diff.Record(context.Background(), f, prompt[:5], nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	path, err := diff.Dump(t.TempDir(), tr, prompt[:5], toks)
	if err != nil {
		t.Fatal(err)
	}
	file, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if got := file.Metadata()["prompt_ids"]; got != "9,1000,42,7,3000" {
		t.Errorf("prompt_ids metadata %q", got)
	}
	for _, p := range []trace.Point{trace.Model(trace.Embed), trace.At(1, trace.AttentionOut), trace.Model(trace.Logits)} {
		pos := tr.Rec.Positions(p)
		x, ok := file.Tensor(p.String())
		ps, ok2 := file.Tensor(p.String() + ".positions")
		if !ok || !ok2 || len(pos) == 0 {
			t.Fatalf("%v: not in the dump (%d positions recorded)", p, len(pos))
		}
		n := len(tr.Rec.Value(p, pos[0]))
		if x.DType != safetensors.F32 || len(x.Shape) != 2 || x.Shape[0] != len(pos) || x.Shape[1] != n {
			t.Fatalf("%v: %v %v, want F32 [%d %d]", p, x.DType, x.Shape, len(pos), n)
		}
		for i, v := range pos {
			if got := int(int32(binary.LittleEndian.Uint32(ps.Data[4*i:]))); got != v {
				t.Fatalf("%v: position %d is %d, want %d", p, i, got, v)
			}
			for j, want := range tr.Rec.Value(p, v) {
				if got := math.Float32frombits(binary.LittleEndian.Uint32(x.Data[4*(i*n+j):])); got != want {
					t.Fatalf("%v at %d [%d]: %v, want %v", p, v, j, got, want)
				}
			}
		}
	}
	ex, ok := file.Tensor("L0.router.experts")
	c, _ := tr.Rec.Choice(0, 3)
	if !ok || ex.DType != safetensors.I32 || len(ex.Shape) != 2 || ex.Shape[1] != len(c.IDs) {
		t.Fatalf("L0.router.experts: %v %v", ex.DType, ex.Shape)
	}
	for j, e := range c.IDs {
		if got := int(int32(binary.LittleEndian.Uint32(ex.Data[4*(3*len(c.IDs)+j):]))); got != e {
			t.Errorf("L0.router expert %d at 3: %d, want %d", j, got, e)
		}
	}
}
