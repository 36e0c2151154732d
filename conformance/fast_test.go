package conformance

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/fidelity"
	"github.com/lily-engine/lily/internal/synth"
	"github.com/lily-engine/lily/ref"
)

// fastLogitTol bounds |fast − ref| per logit relative to the logits' spread: fast accumulates in
// float32 (ref in float64) and sums in a different order, which moves logits by ~1e-6 of their
// range per layer on these small models.
const fastLogitTol = 1e-4

// fastLayerTol bounds each layer's mixer and MoE output against ref's on the same tokens
// (checkLayers), relative to ref's largest value: float32 kernels against float64 sums, carried
// through the layers before it; the tiny models measure up to 1.1e-5 (the portable kernels; the
// SIMD ones 8.8e-6).
const fastLayerTol = 5e-5

// Budgets of issue 6 for the whole model, teacher-forced against ref: top-1 agreement and relative
// perplexity (float32 activations may flip a near-tie, never move the distribution measurably).
const (
	fastMinTop1     = 0.99
	fastMaxDeltaPPL = 0.005
)

// TestFastBackend runs the shared backend suite (checkBackend) on fast with the SIMD kernels and
// with their portable twins.
func TestFastBackend(t *testing.T) {
	for _, portable := range []bool{false, true} {
		name := "fast"
		if portable {
			name = "fast-portable"
		}
		t.Run(name, func(t *testing.T) {
			open := func(w *checkpoint.Weights, maxCtx int) (engine.Backend, error) {
				// The float32 cache: this suite holds the kernels to fastLogitTol; the fp16 cache
				// has its own budget (TestFastF16KVCache).
				return fast.Open(w, fast.Options{MaxContext: maxCtx, Threads: 2, Portable: portable, KVCacheF32: true})
			}
			checkBackend(t, name, open, backendBudget{logit: fastLogitTol, top1: fastMinTop1, dPPL: fastMaxDeltaPPL, layer: fastLayerTol})
		})
	}
}

// openTiny writes a tiny synthetic checkpoint in layout ("hf" or "mlx") and opens it. group is the
// quantization group: 64 (the real one, which the fast/cpu kernels take) or 32 (plain loops).
func openTiny(t *testing.T, layout string, group int) *checkpoint.Checkpoint {
	t.Helper()
	d := checkpointtest.Tiny()
	if group == 64 {
		d = checkpointtest.TinyG64()
	}
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON(layout), d.Specs(layout), 2, 7); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func backends(t *testing.T, ck *checkpoint.Checkpoint) (engine.Backend, engine.Backend) {
	return backendsWith(t, ck, fast.Options{MaxContext: 4096})
}

func backendsWith(t *testing.T, ck *checkpoint.Checkpoint, opt fast.Options) (engine.Backend, engine.Backend) {
	t.Helper()
	rb, err := ref.Open(ck.Weights, ref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	fb, err := fast.Open(ck.Weights, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fb.Close() })
	return rb, fb
}

// TestFastMatchesRef runs prefill (crossing the 64-token chunk) then several decode steps on both
// backends and compares every logit, for both checkpoint layouts. The 1100-token prompt puts decode
// attention across three 512-key splits, so the split-and-merge softmax is checked too.
func TestFastMatchesRef(t *testing.T) {
	for _, c := range []struct {
		layout string
		group  int
		prompt int
	}{{"mlx", 64, 70}, {"hf", 64, 70}, {"mlx", 32, 70}, {"mlx", 64, 1100}} {
		t.Run(fmt.Sprintf("%s-g%d-T%d", c.layout, c.group, c.prompt), func(t *testing.T) {
			ck := openTiny(t, c.layout, c.group)
			rb, fb := backends(t, ck)
			ctx := context.Background()
			rs, _ := rb.NewSession()
			fs, _ := fb.NewSession()
			prompt := enginetest.RandomTokens(c.prompt, rb.VocabSize(), 3)
			rl, err := engine.Logits(rs.Prefill(ctx, prompt, engine.StepOptions{Full: true}, nil))
			if err != nil {
				t.Fatal(err)
			}
			fl, err := engine.Logits(fs.Prefill(ctx, prompt, engine.StepOptions{Full: true}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if e := enginetest.SpreadDiff(rl, fl); e > fastLogitTol {
				t.Fatalf("prefill logits differ by %g of their range", e)
			}
			for step, tok := range enginetest.RandomTokens(5, rb.VocabSize(), 4) {
				rl, err = engine.Logits(rs.Decode(ctx, tok, engine.StepOptions{Full: true}))
				if err != nil {
					t.Fatal(err)
				}
				fl, err = engine.Logits(fs.Decode(ctx, tok, engine.StepOptions{Full: true}))
				if err != nil {
					t.Fatal(err)
				}
				if e := enginetest.SpreadDiff(rl, fl); e > fastLogitTol {
					t.Fatalf("decode step %d: logits differ by %g of their range", step, e)
				}
			}
		})
	}
}

// TestFastTeacherForced is the whole-model budget of issue 6: top-1 agreement ≥ 99% and
// |Δ perplexity| ≤ 0.5% against ref, teacher-forced on the same tokens, through the prefill plan
// and through the decode plan (stepping tokens one at a time).
func TestFastTeacherForced(t *testing.T) {
	ck := openTiny(t, "mlx", 64)
	for _, plan := range []fidelity.Plan{fidelity.PlanPrefill, fidelity.PlanDecode} {
		rb, fb := backends(t, ck)
		toks := enginetest.RandomTokens(150, rb.VocabSize(), 9)
		sa, err := fidelity.Score(context.Background(), rb, toks)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := fidelity.ScoreBy(context.Background(), fb, toks, plan)
		if err != nil {
			t.Fatal(err)
		}
		r := fidelity.Diff(sa, sb)
		t.Logf("%s plan: top-1 %.4f, Δppl %+.5f%%, max |Δlogp| %.2e", plan, r.Top1Agreement, 100*r.DeltaPPLRel, r.MaxAbsDLogp)
		if r.Top1Agreement < fastMinTop1 || math.Abs(r.DeltaPPLRel) > fastMaxDeltaPPL {
			t.Fatalf("fast (%s plan) vs ref: %+v", plan, r)
		}
	}
}

// TestFastSnapshotRestore checks that a restored session continues exactly like the original.
func TestFastSnapshotRestore(t *testing.T) {
	ck := openTiny(t, "mlx", 64)
	_, fb := backends(t, ck)
	ctx := context.Background()
	s, _ := fb.NewSession()
	if _, err := s.Prefill(ctx, enginetest.RandomTokens(20, fb.VocabSize(), 5), engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := engine.Logits(s.Decode(ctx, 3, engine.StepOptions{Full: true}))
	a = append([]float32(nil), a...)
	if _, err := s.Decode(ctx, 9, engine.StepOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 20 {
		t.Fatalf("restored length %d", s.Len())
	}
	b, _ := engine.Logits(s.Decode(ctx, 3, engine.StepOptions{Full: true}))
	if enginetest.SpreadDiff(a, b) != 0 {
		t.Fatal("restored session diverged")
	}
}

// TestFastPromptCacheChat runs a five-turn chat through one engine on the fast backend, each
// request the previous one's cached prefix (its CachePrefix) plus new tokens, as the server sends
// them, and checks every reply against a fresh engine's for the same request: the same greedy
// tokens, logprobs within fastCacheLogprobTol. The cached engine restores, releases and takes
// snapshots whose KV rows the session shares (fast/kv_share.go); the fresh one prefills the prompt
// from scratch, split only at the request's own cache point, so the two differ by where the
// DeltaNet chunks fall.
func TestFastPromptCacheChat(t *testing.T) {
	ck := openTiny(t, "mlx", 64)
	_, fb := backends(t, ck)
	ctx := context.Background()
	cached := engine.New(fb)
	defer cached.Close()
	var prompt []int32
	for turn := range 5 {
		prompt = append(prompt, enginetest.RandomTokens(7+5*turn, fb.VocabSize(), uint64(turn+1))...)
		req := func() *engine.Request {
			return &engine.Request{Prompt: prompt, MaxTokens: 6, Logprobs: true, CachePrefix: len(prompt) - 3}
		}
		run := func(e *engine.Engine) (*engine.Result, []float64) {
			var lps []float64
			res, err := e.Generate(ctx, req(), func(st engine.Step) error {
				if st.Token != nil {
					lps = append(lps, st.Token.Logprob)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return res, lps
		}
		got, gotLP := run(cached)
		if turn > 0 && got.CachedTokens == 0 {
			t.Fatalf("turn %d reused no cached tokens", turn)
		}
		fresh := engine.New(fb)
		want, wantLP := run(fresh)
		fresh.Close()
		if fmt.Sprint(got.Tokens) != fmt.Sprint(want.Tokens) {
			t.Fatalf("turn %d: cached engine generated %v, a fresh one %v", turn, got.Tokens, want.Tokens)
		}
		for i := range gotLP {
			if d := math.Abs(gotLP[i] - wantLP[i]); d > fastCacheLogprobTol {
				t.Fatalf("turn %d token %d: logprob %g cached, %g fresh (|Δ| %g)", turn, i, gotLP[i], wantLP[i], d)
			}
		}
		// The next request keeps the cache point's tokens and re-renders the rest, as chat does.
		prompt = prompt[:len(prompt)-3]
	}
}

// fastCacheLogprobTol: what moving DeltaNet chunk boundaries does to a logprob on the tiny model
// (measured up to 1.7e-7); a restore that skipped the recurrent state moved one by 1.9e-3.
const fastCacheLogprobTol = 1e-5

// fastGoldenLogprobTol: fast accumulates in float32 and reorders sums; against transformers' float32
// forward it stays within an order of magnitude of ref's own agreement (~1e-5).
const fastGoldenLogprobTol = 1e-3

// TestFastFixtures runs the fast engine on every transformers fixture: logprobs and greedy
// continuations against the goldens with the float32 KV cache (fast.Options.KVCacheF32, exact to
// ref's rounding), and the whole-model budget against ref (teacher-forced top-1 ≥ 99%, |Δ
// perplexity| ≤ 0.5%) through the decode plan.
func TestFastFixtures(t *testing.T) {
	for _, g := range fixtureGoldens(t) {
		t.Run(g.Model+"/"+g.Layout, func(t *testing.T) {
			ck := openFixture(t, g)
			rb, fb := backendsWith(t, ck, fast.Options{MaxContext: 4096, KVCacheF32: true})
			for _, p := range g.Prompts {
				checkPromptLogprobs(t, fb, p, fastGoldenLogprobTol)
				checkGreedy(t, fb, p.IDs, p.Greedy, fastGoldenLogprobTol)
			}
			checkDecodePlan(t, "decode plan", rb, fb, ids32(g.Prompts[len(g.Prompts)-1].IDs), 0.99, 0.005)
		})
	}
}

// The fp16 KV cache (fast's default) rounds every cached key and value to 11 significant bits
// (relative 2^-11), which moves logits by ~1e-4 of their spread: within issue 21's budget
// (teacher-forced top-1 ≥ 99%, |Δppl| ≤ 0.1%, the same as the integer prefill GEMM's) on each
// fixture's longest prompt. Measured: tiny-a/hf top-1 99.2%, Δppl +0.025% (one near-tie flip);
// the other fixtures 100%, |Δppl| ≤ 0.03%. On tiny-a/hf's 70-token prompt one near-tie flip
// gives 98.6% — the goldens are checked with the float32 cache for that reason.
const (
	f16KVMinTop1     = 0.99
	f16KVMaxDeltaPPL = 0.001
)

// TestFastF16KVCache holds the default fp16 KV cache to its budget against ref on every fixture,
// through the decode plan and the prefill plan.
func TestFastF16KVCache(t *testing.T) {
	for _, g := range fixtureGoldens(t) {
		t.Run(g.Model+"/"+g.Layout, func(t *testing.T) {
			ck := openFixture(t, g)
			rb, fb := backendsWith(t, ck, fast.Options{MaxContext: 4096})
			toks := ids32(g.Prompts[len(g.Prompts)-1].IDs)
			sa := checkDecodePlan(t, "fp16 KV, decode plan", rb, fb, toks, f16KVMinTop1, f16KVMaxDeltaPPL)
			checkPrefillPlan(t, "fp16 KV, prefill plan", sa, fb, toks, f16KVMinTop1, f16KVMaxDeltaPPL)
		})
	}
}

// int16 activations everywhere (fast.Options.Int16Activations) let rounding of up to 1.5e-5 of a
// group's largest input reach the session's state. Measured on the fixtures (decode plan against
// ref, teacher-forced): the HF-layout models have no 4-bit matrices and do not change; tiny-b/mlx
// stays at top-1 100% (Δppl +0.0002%); tiny-a/mlx flips one expert choice at position 85 and
// carries the change on: top-1 95.3%, Δppl −1.47%. That misses the default budget, which is why the
// option is off by default; this looser budget (top-1 ≥ 90%, |Δppl| ≤ 3%) still fails at once if
// the int16 path computes something else.
const (
	int16Top1Min  = 0.90
	int16DeltaPPL = 0.03
)

// TestFastInt16Activations holds the opt-in all-int16 decode plan to its looser, measured budget.
func TestFastInt16Activations(t *testing.T) {
	for _, g := range fixtureGoldens(t) {
		t.Run(g.Model+"/"+g.Layout, func(t *testing.T) {
			ck := openFixture(t, g)
			rb, fb := backendsWith(t, ck, fast.Options{MaxContext: 4096, Int16Activations: true})
			checkDecodePlan(t, "int16 decode plan", rb, fb, ids32(g.Prompts[len(g.Prompts)-1].IDs), int16Top1Min, int16DeltaPPL)
		})
	}
}

// checkDecodePlan scores toks teacher-forced on ref (prefill) and on fb through the decode plan,
// logs the agreement and fails unless top-1 ≥ top1Min and |Δppl| ≤ dPPL.
func checkDecodePlan(t *testing.T, what string, rb, fb engine.Backend, toks []int32, top1Min, dPPL float64) *fidelity.Scores {
	t.Helper()
	sa, err := fidelity.Score(context.Background(), rb, toks)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := fidelity.ScoreBy(context.Background(), fb, toks, fidelity.PlanDecode)
	if err != nil {
		t.Fatal(err)
	}
	r := fidelity.Diff(sa, sb)
	t.Logf("%s: top-1 %.4f, Δppl %+.4f%%, max |Δlogp| %.2e", what, r.Top1Agreement, 100*r.DeltaPPLRel, r.MaxAbsDLogp)
	if r.Top1Agreement < top1Min || math.Abs(r.DeltaPPLRel) > dPPL {
		t.Errorf("%s against ref: %+v", what, r)
	}
	return sa
}

// TestFastWideTeacherForced is the whole-model budget on a model wide enough for every 4-bit
// matrix to run in whole 8-group blocks (hidden, head and expert widths 512), the shapes on which
// the kernels choose the AVX-512 VNNI mat-vec where the CPU has it (the fixtures' 64- and 128-wide
// matrices run the float32 kernels): a synthetic checkpoint of the real layout, 4 layers, top-8 of
// 16 experts, teacher-forced through the decode plan and the prefill plan (its 4-bit mat-mats run
// the integer GEMM where the CPU has VNNI) against ref; both plans run the default fp16 KV cache
// and are held to its budget (f16KVMinTop1, f16KVMaxDeltaPPL: 0.1%).
func TestFastWideTeacherForced(t *testing.T) {
	c, err := synth.Preset(synth.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	c.HiddenSize, c.NumLayers, c.NumExperts, c.NumExpertsPerTok = 512, 4, 16, 8
	c.NumHeads, c.MoEIntermediate, c.SharedIntermediate, c.LinearNumValueHeads = 8, 512, 512, 8
	p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := synth.Write(context.Background(), p, dir, synth.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	pool := cpu.NewPool(1)
	t.Logf("4-bit mat-vecs on the VNNI kernel: %v", cpu.New(pool).VNNI())
	pool.Close()
	rb, fb := backends(t, ck)
	toks := enginetest.RandomTokens(96, rb.VocabSize(), 11)
	sa := checkDecodePlan(t, "decode plan, 512-wide", rb, fb, toks, f16KVMinTop1, f16KVMaxDeltaPPL)
	r := checkPrefillPlan(t, "prefill plan, 512-wide", sa, fb, toks, f16KVMinTop1, f16KVMaxDeltaPPL)
	// The integer GEMM's bias term reads the same two-limb x̂ as its scale term (cpu.limbSum): its
	// largest logprob error here is 1.4e-3; with the exact Σx in the bias term it was 4.7e-2.
	const wideMaxDLogp = 1e-2
	if r.MaxAbsDLogp > wideMaxDLogp {
		t.Errorf("prefill plan, 512-wide: max |Δlogp| %.2e over %.0e", r.MaxAbsDLogp, wideMaxDLogp)
	}
}

// checkPrefillPlan holds fb's scores through the prefill plan (fidelity.Score scores the whole
// sequence as one prompt) to ref's, sa: on the 512-wide model with 96 tokens every expert sees
// tens of rows, so its 4-bit mat-mats run the integer GEMM where the CPU has AVX-512 VNNI.
func checkPrefillPlan(t *testing.T, what string, sa *fidelity.Scores, fb engine.Backend, toks []int32, top1Min, dPPL float64) *fidelity.Report {
	t.Helper()
	sb, err := fidelity.Score(context.Background(), fb, toks)
	if err != nil {
		t.Fatal(err)
	}
	r := fidelity.Diff(sa, sb)
	t.Logf("%s: top-1 %.4f, Δppl %+.4f%%, max |Δlogp| %.2e", what, r.Top1Agreement, 100*r.DeltaPPLRel, r.MaxAbsDLogp)
	if r.Top1Agreement < top1Min || math.Abs(r.DeltaPPLRel) > dPPL {
		t.Errorf("%s against ref: %+v", what, r)
	}
	return r
}
