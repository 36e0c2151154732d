package engine_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
)

const (
	vocab = 40
	eos   = 1 // the fake model's stop id
)

func newBackend() *enginetest.Backend {
	return &enginetest.Backend{Vocab: vocab, Context: 256, MinID: 2}
}

// letters decodes id i as one letter; the stop id has no text.
type letters struct{}

func (letters) Add(id int32) (string, error) { return string(rune('a' + id%26)), nil }
func (letters) Flush() string                { return "" }

// expectGreedy follows the fake backend's rule by hand.
func expectGreedy(b *enginetest.Backend, prompt []int32, n int) []int32 {
	last, pos := prompt[len(prompt)-1], len(prompt)-1
	var out []int32
	for range n {
		next := b.Next(last, pos)
		out = append(out, next)
		last, pos = next, pos+1
	}
	return out
}

func collect(t *testing.T, e *engine.Engine, r *engine.Request) (*engine.Result, []engine.Step) {
	t.Helper()
	var steps []engine.Step
	res, err := e.Generate(context.Background(), r, func(s engine.Step) error {
		steps = append(steps, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, steps
}

func TestGreedyLength(t *testing.T) {
	b := newBackend()
	e := engine.New(b)
	prompt := []int32{5, 6, 7}
	res, steps := collect(t, e, &engine.Request{Prompt: prompt, MaxTokens: 6, StopIDs: []int32{eos}})
	if want := expectGreedy(b, prompt, 6); !slices.Equal(res.Tokens, want) {
		t.Fatalf("tokens %v, want %v", res.Tokens, want)
	}
	if res.Finish != engine.FinishLength || len(steps) != 6 {
		t.Fatalf("finish %q after %d steps", res.Finish, len(steps))
	}
	if n := b.FullSteps.Load(); n != 0 {
		t.Fatalf("greedy decoding asked %d steps for the full logits", n)
	}
}

func TestStopIDAndStopString(t *testing.T) {
	b := newBackend()
	b.Script = []int32{7, 8, 9, 10, 11} // h i j k l
	b.End = eos
	e := engine.New(b)
	text := func(steps []engine.Step) string {
		var sb strings.Builder
		for _, s := range steps {
			sb.WriteString(s.Text)
		}
		return sb.String()
	}
	res, steps := collect(t, e, &engine.Request{Prompt: []int32{3}, MaxTokens: 20, StopIDs: []int32{eos}, Decoder: letters{}})
	if res.Finish != engine.FinishStop || !slices.Equal(res.Tokens, []int32{7, 8, 9, 10, 11, eos}) || text(steps) != "hijkl" {
		t.Fatalf("stop id: %q %v %q", res.Finish, res.Tokens, text(steps))
	}
	// A stop string split over tokens: never emitted, text before it released.
	res, steps = collect(t, e, &engine.Request{Prompt: []int32{3}, MaxTokens: 20, StopIDs: []int32{eos},
		Decoder: letters{}, Stop: []string{"jk"}})
	if res.Finish != engine.FinishStop || text(steps) != "hi" || len(res.Tokens) != 4 {
		t.Fatalf("stop string: %q %v %q", res.Finish, res.Tokens, text(steps))
	}
	// A held-back prefix that turns out not to be a stop is released, also at the end.
	_, steps = collect(t, e, &engine.Request{Prompt: []int32{3}, MaxTokens: 4, Decoder: letters{}, Stop: []string{"jx", "kz"}})
	if got := text(steps); got != "hijk" {
		t.Fatalf("hold-back: %q", got)
	}
	if steps[2].Text != "" || steps[len(steps)-1].Token != nil {
		t.Fatalf("expected 'j' held then a final flush step: %+v", steps)
	}
}

func TestPrefixCache(t *testing.T) {
	b := newBackend()
	e := engine.New(b)
	p1 := []int32{2, 3, 4, 5, 6, 7}
	res, _ := collect(t, e, &engine.Request{Prompt: p1, MaxTokens: 3, CachePrefix: 4})
	if res.CachedTokens != 0 || b.PrefilledTokens.Load() != 6 {
		t.Fatalf("first: cached %d prefilled %d", res.CachedTokens, b.PrefilledTokens.Load())
	}
	p2 := append(slices.Clone(p1[:4]), 9, 9, 9, 9)
	b.PrefilledTokens.Store(0)
	res2, _ := collect(t, e, &engine.Request{Prompt: p2, MaxTokens: 5})
	if res2.CachedTokens != 4 || b.PrefilledTokens.Load() != 4 {
		t.Fatalf("second: cached %d prefilled %d", res2.CachedTokens, b.PrefilledTokens.Load())
	}
	if want := expectGreedy(b, p2, 5); !slices.Equal(res2.Tokens, want) {
		t.Fatalf("reused state gives %v, want %v", res2.Tokens, want)
	}
	// The same prompt again reuses everything but its last token (the default cache point).
	b.PrefilledTokens.Store(0)
	res3, _ := collect(t, e, &engine.Request{Prompt: p2, MaxTokens: 5})
	if res3.CachedTokens != 7 || b.PrefilledTokens.Load() != 1 || !slices.Equal(res3.Tokens, res2.Tokens) {
		t.Fatalf("third: cached %d prefilled %d tokens %v", res3.CachedTokens, b.PrefilledTokens.Load(), res3.Tokens)
	}
	// A diverging prompt starts over.
	p4 := []int32{3, 3, 3}
	res4, _ := collect(t, e, &engine.Request{Prompt: p4, MaxTokens: 2})
	if res4.CachedTokens != 0 || !slices.Equal(res4.Tokens, expectGreedy(b, p4, 2)) {
		t.Fatalf("fourth: %+v", res4)
	}
	// Every snapshot the cache replaced was released; the one it holds is released by Close.
	if n, r := b.Snapshots.Load(), b.Released.Load(); n < 2 || r != n-1 {
		t.Fatalf("%d snapshots taken, %d released before Close; want all but the cached one", n, r)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if n, r := b.Snapshots.Load(), b.Released.Load(); r != n {
		t.Fatalf("%d snapshots taken, %d released after Close", n, r)
	}
}

// TestWarmUp checks that a warm-up runs what a request runs (a prefill of the asked length, a
// snapshot, a decode step), shortens to the window, and leaves nothing behind: every snapshot
// released, and a request with the warm-up's own prompt finds no cache.
func TestWarmUp(t *testing.T) {
	ctx := context.Background()
	b := newBackend()
	e := engine.New(b)
	n, err := e.WarmUp(ctx, 32)
	if err != nil || n != 32 {
		t.Fatalf("WarmUp: %d, %v", n, err)
	}
	if p, d := b.PrefilledTokens.Load(), b.Decodes.Load(); p != 32 || d != 1 {
		t.Fatalf("warm-up prefilled %d tokens and decoded %d, want 32 and 1", p, d)
	}
	if s, r := b.Snapshots.Load(), b.Released.Load(); s == 0 || r != s {
		t.Fatalf("warm-up took %d snapshots and released %d, want some, all released", s, r)
	}
	prompt := make([]int32, 33)
	for i := range prompt {
		prompt[i] = int32(i % vocab) // the warm-up's prompt, and one more token
	}
	res, _ := collect(t, e, &engine.Request{Prompt: prompt, MaxTokens: 2})
	if res.CachedTokens != 0 || !slices.Equal(res.Tokens, expectGreedy(b, prompt, 2)) {
		t.Fatalf("request after the warm-up: cached %d, tokens %v", res.CachedTokens, res.Tokens)
	}

	short := &enginetest.Backend{Vocab: vocab, Context: 10, MinID: 2}
	if n, err := engine.New(short).WarmUp(ctx, 32); err != nil || n != 8 || short.PrefilledTokens.Load() != 8 {
		t.Fatalf("window 10: ran %d tokens (%v), prefilled %d; want 8", n, err, short.PrefilledTokens.Load())
	}
	tiny := &enginetest.Backend{Vocab: vocab, Context: 2, MinID: 2}
	if n, err := engine.New(tiny).WarmUp(ctx, 32); err != nil || n != 0 || tiny.PrefillCalls.Load() != 0 {
		t.Fatalf("window 2: ran %d tokens (%v), %d prefills; want none", n, err, tiny.PrefillCalls.Load())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	c := newBackend()
	if _, err := engine.New(c).WarmUp(cancelled, 32); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled warm-up: %v", err)
	}
	if s, r := c.Snapshots.Load(), c.Released.Load(); r != s {
		t.Fatalf("cancelled warm-up holds %d of %d snapshots", s-r, s)
	}
}

func TestNoSnapshotBackend(t *testing.T) {
	b := newBackend()
	b.NoSnapshot = true
	e := engine.New(b)
	p := []int32{4, 5, 6}
	for range 2 {
		res, _ := collect(t, e, &engine.Request{Prompt: p, MaxTokens: 3})
		if res.CachedTokens != 0 || !slices.Equal(res.Tokens, expectGreedy(b, p, 3)) {
			t.Fatalf("%+v", res)
		}
	}
}

func TestSamplingSeeded(t *testing.T) {
	b := newBackend()
	e := engine.New(b)
	run := func(s engine.Sampling) []int32 {
		res, _ := collect(t, e, &engine.Request{Prompt: []int32{5}, MaxTokens: 40, Sampling: s})
		return res.Tokens
	}
	s := engine.Sampling{Temperature: 1, Seed: 42, HasSeed: true}
	a, a2 := run(s), run(s)
	if !slices.Equal(a, a2) {
		t.Fatalf("same seed differs: %v vs %v", a, a2)
	}
	s.Seed = 43
	if c := run(s); slices.Equal(a, c) {
		t.Fatalf("different seeds agree: %v", a)
	}
	greedy := expectGreedy(b, []int32{5}, 40)
	if slices.Equal(a, greedy) {
		t.Fatal("temperature 1 sampled exactly the greedy path")
	}
	if k1 := run(engine.Sampling{Temperature: 5, TopK: 1, Seed: 1, HasSeed: true}); !slices.Equal(k1, greedy) {
		t.Fatalf("top_k 1 is not greedy: %v", k1)
	}
	// top_k 2 only ever picks the best or the second best token (the next id, by the fake's scores).
	checkWithin := func(name string, s engine.Sampling, width int32) {
		t.Helper()
		res, _ := collect(t, e, &engine.Request{Prompt: []int32{5}, MaxTokens: 60, Sampling: s})
		last, pos := int32(5), 0
		second := false
		for _, id := range res.Tokens {
			best := b.Next(last, pos)
			d := (id - best + vocab) % vocab
			if d >= width {
				t.Fatalf("%s: picked %d, best %d", name, id, best)
			}
			second = second || d > 0
			last, pos = id, pos+1
		}
		if !second {
			t.Fatalf("%s: never left the argmax", name)
		}
	}
	checkWithin("top_k", engine.Sampling{Temperature: 2, TopK: 2, Seed: 7, HasSeed: true}, 2)
	// Probabilities fall by e^-0.25 per id at T=1; top_p 0.5 keeps the first three (0.22+0.17+0.13).
	checkWithin("top_p", engine.Sampling{Temperature: 1, TopP: 0.5, Seed: 7, HasSeed: true}, 3)
	// min_p 0.6 keeps ids within ln(1/0.6)/0.25 ≈ 2.04 steps: the first three.
	checkWithin("min_p", engine.Sampling{Temperature: 1, MinP: 0.6, Seed: 7, HasSeed: true}, 3)
}

func TestPresencePenalty(t *testing.T) {
	b := newBackend()
	b.Script = []int32{7, 7, 7, 7, 7, 7}
	e := engine.New(b)
	res, _ := collect(t, e, &engine.Request{Prompt: []int32{3}, MaxTokens: 6})
	if !slices.Equal(res.Tokens, b.Script) {
		t.Fatalf("unpenalized: %v", res.Tokens)
	}
	if n := b.FullSteps.Load(); n != 0 {
		t.Fatalf("greedy decoding asked %d steps for the full logits", n)
	}
	res, _ = collect(t, e, &engine.Request{Prompt: []int32{3}, MaxTokens: 6, Sampling: engine.Sampling{PresencePenalty: 100}})
	if n := b.FullSteps.Load(); n != 6 {
		t.Fatalf("a penalized request asked %d steps for the full logits, want 6 (prefill and 5 decodes)", n)
	}
	seen := map[int32]bool{}
	for _, id := range res.Tokens {
		if seen[id] {
			t.Fatalf("presence penalty repeated %d: %v", id, res.Tokens)
		}
		seen[id] = true
	}
}

// logprobTol: the logprobs are computed in float64 from float32 logits; the reference is exact math.
const logprobTol = 1e-9

func refLogprob(l []float32, id int32) float64 {
	var s float64
	for _, x := range l {
		s += math.Exp(float64(x))
	}
	return float64(l[id]) - math.Log(s)
}

func TestLogprobs(t *testing.T) {
	b := newBackend()
	e := engine.New(b)
	prompt := []int32{5, 6}
	var steps []engine.Step
	res, err := e.Generate(context.Background(), &engine.Request{Prompt: prompt, MaxTokens: 3, Logprobs: true, TopLogprobs: 3,
		PromptLogprobs: true}, func(s engine.Step) error { steps = append(steps, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	last, pos := prompt[1], 1
	for _, s := range steps {
		tok := s.Token
		l := b.Logits(b.Next(last, pos))
		if d := math.Abs(tok.Logprob - refLogprob(l, tok.ID)); d > logprobTol {
			t.Fatalf("logprob %v off by %g", tok.Logprob, d)
		}
		if len(tok.Top) != 3 || tok.Top[0].ID != tok.ID || !(tok.Top[0].Logprob > tok.Top[1].Logprob && tok.Top[1].Logprob > tok.Top[2].Logprob) {
			t.Fatalf("top: %+v", tok.Top)
		}
		last, pos = tok.ID, pos+1
	}
	if len(res.PromptLogprobs) != 1 || res.PromptLogprobs[0].ID != 6 {
		t.Fatalf("prompt logprobs %+v", res.PromptLogprobs)
	}
	want := refLogprob(b.Logits(b.Next(5, 0)), 6)
	if d := math.Abs(res.PromptLogprobs[0].Logprob - want); d > logprobTol {
		t.Fatalf("prompt logprob %v, want %v", res.PromptLogprobs[0].Logprob, want)
	}
	// Pure scoring: no decode.
	b.Decodes.Store(0)
	res, _ = collect(t, e, &engine.Request{Prompt: []int32{5, 6, 7}, PromptLogprobs: true})
	if len(res.Tokens) != 0 || len(res.PromptLogprobs) != 2 || b.Decodes.Load() != 0 || res.Finish != engine.FinishLength {
		t.Fatalf("scoring: %+v decodes %d", res, b.Decodes.Load())
	}
}

func TestRequestErrors(t *testing.T) {
	e := engine.New(newBackend())
	var cl *engine.ContextLengthError
	var tr *engine.TokenRangeError
	err := e.Check(&engine.Request{Prompt: make([]int32, 200), MaxTokens: 57}, 0)
	if !errors.As(err, &cl) || cl.Context != 256 {
		t.Fatalf("context: %v", err)
	}
	if err := e.Check(&engine.Request{Prompt: make([]int32, 200), MaxTokens: 56}, 0); err != nil {
		t.Fatalf("exact fit rejected: %v", err)
	}
	if err := e.Check(&engine.Request{Prompt: []int32{1, vocab}}, 0); !errors.As(err, &tr) || tr.Index != 1 {
		t.Fatalf("range: %v", err)
	}
	if err := e.Check(&engine.Request{}, 0); !errors.Is(err, engine.ErrEmptyPrompt) {
		t.Fatalf("empty: %v", err)
	}
}

func TestCancelWithinOneStep(t *testing.T) {
	b := newBackend()
	b.DecodeDelay = 5 * time.Millisecond
	e := engine.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	var atCancel int64
	_, err := e.Generate(ctx, &engine.Request{Prompt: []int32{4}, MaxTokens: 200}, func(s engine.Step) error {
		if b.Decodes.Load() == 5 {
			cancel()
			atCancel = b.Decodes.Load()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if extra := b.Decodes.Load() - atCancel; extra > 1 {
		t.Fatalf("%d decode steps after cancel", extra)
	}
	// The engine is usable afterwards.
	res, _ := collect(t, e, &engine.Request{Prompt: []int32{4}, MaxTokens: 2})
	if !slices.Equal(res.Tokens, expectGreedy(b, []int32{4}, 2)) {
		t.Fatalf("after cancel: %v", res.Tokens)
	}
}
