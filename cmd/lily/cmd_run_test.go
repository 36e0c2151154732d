package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

// scriptBackend is a fake backend whose logits at position p put all weight pattern on token
// next[p] (and a runner-up on token 0), so generate's choices are known in advance.
type scriptBackend struct {
	next          []int32
	vocab, maxCtx int
}

func (b *scriptBackend) Name() string    { return "script" }
func (b *scriptBackend) VocabSize() int  { return b.vocab }
func (b *scriptBackend) MaxContext() int { return b.maxCtx }
func (b *scriptBackend) Close() error    { return nil }
func (b *scriptBackend) NewSession() (engine.Session, error) {
	return &scriptSession{b: b}, nil
}

type scriptSession struct {
	b   *scriptBackend
	pos int
}

func (s *scriptSession) Len() int { return s.pos }
func (s *scriptSession) logits() []float32 {
	l := make([]float32, s.b.vocab)
	l[0] = 1
	l[s.b.next[s.pos-1]] = 3
	return l
}
func (s *scriptSession) Prefill(_ context.Context, t []int32, o engine.StepOptions, _ func(int, []float32) error) (engine.StepResult, error) {
	s.pos += len(t)
	return engine.NewStepResult(s.logits(), o), nil
}
func (s *scriptSession) Decode(_ context.Context, _ int32, o engine.StepOptions) (engine.StepResult, error) {
	s.pos++
	return engine.NewStepResult(s.logits(), o), nil
}
func (s *scriptSession) Snapshot() (engine.Snapshot, error) { return nil, nil }
func (s *scriptSession) Restore(engine.Snapshot) error      { return nil }
func (s *scriptSession) Close() error                       { return nil }

func TestGenerateGreedyStopsAtEOS(t *testing.T) {
	b := &scriptBackend{next: []int32{0, 0, 5, 6, 7, 2, 9}, vocab: 10, maxCtx: 100}
	res, err := generate(context.Background(), b, []int32{1, 2, 3}, 10, 2, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	if got := joinIDs(res.TokenIDs); got != "5 6 7 2" {
		t.Errorf("tokens %q, want \"5 6 7 2\" (stop after eos 2)", got)
	}
	// logits: 3 on the pick, 1 on token 0, 0 elsewhere (10 tokens).
	lse := math.Log(math.Exp(3) + math.Exp(1) + 8)
	if len(res.Logprobs) != 4 || math.Abs(res.Logprobs[0]-(3-lse)) > 1e-12 {
		t.Errorf("logprobs %v, want %v each", res.Logprobs, 3-lse)
	}
	if top := res.TopLogprobs[0]; len(top) != 2 || top[0].ID != 5 || top[1].ID != 0 || math.Abs(top[1].Logprob-(1-lse)) > 1e-12 {
		t.Errorf("top logprobs %v", top)
	}
	res, _ = generate(context.Background(), b, []int32{1, 2, 3}, 2, 0, []int{2})
	if joinIDs(res.TokenIDs) != "5 6" || len(res.TopLogprobs) != 0 {
		t.Errorf("max-tokens 2: %v", res)
	}
	b.maxCtx = 4
	res, _ = generate(context.Background(), b, []int32{1, 2, 3}, 10, 0, nil)
	if joinIDs(res.TokenIDs) != "5" {
		t.Errorf("context limit 4: tokens %v, want one token", res.TokenIDs)
	}
}

func TestParseIDs(t *testing.T) {
	ids, err := parseIDs(" 1, 2,248045 ")
	if err != nil || joinIDs(ids) != "1 2 248045" {
		t.Errorf("parseIDs = %v, %v", ids, err)
	}
	for _, bad := range []string{"", "1,x", "-3", "99999999999"} {
		if _, err := parseIDs(bad); err == nil {
			t.Errorf("parseIDs(%q) accepted", bad)
		}
	}
}

func TestRunFlagErrors(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir()) // an empty cache: no real checkpoint to find
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--prompt-ids", "1"}, 1, "hf download mlx-community/Qwen3.6-35B-A3B-4bit"},
		{[]string{"--model", "d"}, 2, "exactly one"},
		{[]string{"--model", "d", "--prompt", "x", "--prompt-ids", "1"}, 2, "exactly one"},
		{[]string{"--model", "d", "--prompt-ids", "1", "--chat"}, 2, "--chat needs --prompt"},
		{[]string{"--model", "d", "--prompt-ids", "1,a"}, 2, "not a token id"},
		{[]string{"--model", "d", "--prompt-ids", "1", "--backend", "gpu"}, 2, `unknown backend "gpu"`},
		{[]string{"--model", "d", "--prompt-ids", "1", "--backend", "fast"}, 1, "stat d"},
		{[]string{"--model", "d", "--prompt-ids", "1", "--device", "tpu"}, 2, `unknown --device "tpu"`}, // before the checkpoint is read
	} {
		var out, errb bytes.Buffer
		if code := cmdRun(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.msg)
		}
	}
	var out bytes.Buffer
	if code := cmdRun([]string{"--help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "--prompt-ids") {
		t.Errorf("--help: code %d, %q", code, out.String())
	}
}
