package conformance

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/fixtures/goldens"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/fidelity"
	"github.com/lily-engine/lily/ref"
)

// topper is a session that reports its own top-k of the last step (the Metal engine computes it
// on the GPU); checkBackend holds it to the argmax of the returned logits.
type topper interface {
	Top() (ids []int32, logits []float32, lse float32)
}

// backendBudget is how closely a backend must follow ref: |Δlogit| relative to the logits' spread
// per position, the teacher-forced top-1 agreement and relative perplexity, and each layer's mixer
// and MoE output relative to the largest value of ref's (checkLayers).
type backendBudget struct{ logit, top1, dPPL, layer float64 }

// openFunc opens a backend on w with sessions bounded to maxCtx tokens.
type openFunc func(w *checkpoint.Weights, maxCtx int) (engine.Backend, error)

// checkBackend holds the backend that open makes to ref, on a tiny random 4-bit checkpoint whose
// matrices every kernel takes (group 64): teacher-forced budgets, prefill then greedy decode step
// by step with a snapshot restored, state across calls, the rejection of bad input, and the
// transformers-verified fixture models. It is written once and run for every backend.
func checkBackend(t *testing.T, name string, open openFunc, bud backendBudget) {
	ck := metalCheckpoint(t, "mlx")
	mb, err := open(ck.Weights, 256)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mb.Close() })
	rb, err := ref.Open(ck.Weights, ref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("teacher_forced", func(t *testing.T) {
		r, err := fidelity.Compare(ctx, rb, mb, enginetest.RandomTokens(40, rb.VocabSize(), 9))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s vs ref: top-1 %.4f, ppl %.4f vs %.4f (Δ %.2e), max |Δlogp| %.2e", name,
			r.Top1Agreement, r.PPLB, r.PPLA, r.DeltaPPLRel, r.MaxAbsDLogp)
		if r.Top1Agreement < bud.top1 || math.Abs(r.DeltaPPLRel) > bud.dPPL {
			t.Fatalf("%s vs ref outside the budget: %+v", name, r)
		}
	})

	t.Run("layers", func(t *testing.T) { checkLayers(t, name, mb, rb, bud.layer) })

	t.Run("prefill_greedy_decode_snapshot", func(t *testing.T) {
		// Prefill, snapshot, then greedy decode step by step against ref; restoring the snapshot
		// and decoding the first greedy token again must reproduce that step exactly.
		rs, _ := rb.NewSession()
		ms := newSession(t, mb)
		prompt := enginetest.RandomTokens(6, rb.VocabSize(), 5)
		rl, err := engine.Logits(rs.Prefill(ctx, prompt, engine.StepOptions{Full: true}, nil))
		if err != nil {
			t.Fatal(err)
		}
		ml, err := engine.Logits(ms.Prefill(ctx, prompt, engine.StepOptions{Full: true}, nil))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := ms.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var first []float32
		var firstTok int32
		for step := 0; ; step++ {
			if e := enginetest.SpreadDiff(rl, ml); e > bud.logit {
				t.Fatalf("step %d: logits differ by %g of their range", step, e)
			}
			want, gap := argmaxGap(rl)
			got, _ := argmaxGap(ml)
			if got != want && gap >= fidelity.NearTie {
				t.Fatalf("step %d: greedy token %d, ref %d (ref's lead %.3g is not a near-tie)", step, got, want, gap)
			}
			if tk, ok := ms.(topper); ok {
				if ids, _, _ := tk.Top(); ids[0] != got {
					t.Fatalf("step %d: the backend's own top-1 %d, argmax of the returned logits %d", step, ids[0], got)
				}
			}
			if step == 3 {
				break
			}
			if rl, err = engine.Logits(rs.Decode(ctx, want, engine.StepOptions{Full: true})); err != nil {
				t.Fatal(err)
			}
			if ml, err = engine.Logits(ms.Decode(ctx, want, engine.StepOptions{Full: true})); err != nil {
				t.Fatal(err)
			}
			if step == 0 {
				first, firstTok = append([]float32(nil), ml...), want
			}
		}
		if ms.Len() != 9 {
			t.Fatalf("length %d after 6 + 3 tokens", ms.Len())
		}
		if err := ms.Restore(snap); err != nil {
			t.Fatal(err)
		}
		if ms.Len() != 6 {
			t.Fatalf("restored length %d, want 6", ms.Len())
		}
		again, err := engine.Logits(ms.Decode(ctx, firstTok, engine.StepOptions{Full: true}))
		if err != nil {
			t.Fatal(err)
		}
		if enginetest.SpreadDiff(first, again) != 0 {
			t.Fatal("the restored session diverged from the original")
		}
	})

	t.Run("state_across_calls", func(t *testing.T) {
		// prefill(3) + prefill(2) + decode(1) must match ref's prefill of all 6 tokens.
		toks := enginetest.RandomTokens(6, rb.VocabSize(), 6)
		rs, _ := rb.NewSession()
		want, err := engine.Logits(rs.Prefill(ctx, toks, engine.StepOptions{Full: true}, nil))
		if err != nil {
			t.Fatal(err)
		}
		ms := newSession(t, mb)
		if _, err := ms.Prefill(ctx, toks[:3], engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ms.Prefill(ctx, toks[3:5], engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := engine.Logits(ms.Decode(ctx, toks[5], engine.StepOptions{Full: true}))
		if err != nil {
			t.Fatal(err)
		}
		if e := enginetest.SpreadDiff(want, got); e > bud.logit {
			t.Fatalf("split calls differ from ref by %g of the range", e)
		}
	})

	for _, fixture := range []string{"tiny-a", "tiny-b"} {
		t.Run("fixture_"+fixture, func(t *testing.T) { checkFixture(t, name, open, bud, fixture) })
	}

	t.Run("bad_input", func(t *testing.T) {
		s := newSession(t, mb)
		if _, err := s.Decode(ctx, int32(rb.VocabSize()), engine.StepOptions{}); err == nil {
			t.Fatal("out-of-vocabulary token accepted")
		}
		if _, err := s.Prefill(ctx, nil, engine.StepOptions{}, nil); err == nil {
			t.Fatal("empty prefill accepted")
		}
		if _, err := s.Prefill(ctx, make([]int32, 257), engine.StepOptions{}, nil); err == nil {
			t.Fatal("prefill past the context accepted")
		}
		if s.Len() != 0 {
			t.Fatalf("rejected calls moved the session to %d", s.Len())
		}
	})
}

// checkFixture holds the backend to ref, teacher-forced, on a transformers-verified fixture model
// (fixtures/models/<fixture>/mlx), when it has been generated.
func checkFixture(t *testing.T, name string, open openFunc, bud backendBudget, fixture string) {
	dir := filepath.Join("..", "fixtures", "models", fixture, "mlx")
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		t.Skipf("fixture model %s not present (%v); the random checkpoint above still covers the plans", dir, err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	mb, err := open(ck.Weights, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	rb, err := ref.Open(ck.Weights, ref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkLayers(t, name+" on "+fixture, mb, rb, bud.layer)
	r, err := fidelity.Compare(context.Background(), rb, mb, enginetest.RandomTokens(16, rb.VocabSize(), 12))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on %s vs ref: top-1 %.4f, ppl %.4f vs %.4f (Δ %.2e), max |Δlogp| %.2e", name, fixture,
		r.Top1Agreement, r.PPLB, r.PPLA, r.DeltaPPLRel, r.MaxAbsDLogp)
	if r.Top1Agreement < bud.top1 || math.Abs(r.DeltaPPLRel) > bud.dPPL {
		t.Fatalf("%s on %s outside the budget: %+v", name, fixture, r)
	}
	// Prefill then 16 greedy decode steps, against transformers' own greedy continuation.
	g, err := goldens.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkGreedy(t, mb, g.Prompts[0].IDs, g.Prompts[0].Greedy, fastGoldenLogprobTol)
}

func newSession(t *testing.T, b engine.Backend) engine.Session {
	t.Helper()
	s, err := b.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
