package engine_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

func TestLogitBiasForcesToken(t *testing.T) {
	fb := newBackend()
	e := engine.New(fb)
	res, _ := collect(t, e, &engine.Request{Prompt: []int32{5, 6}, MaxTokens: 4, StopIDs: []int32{eos},
		LogitBias: map[int32]float32{17: 100}, Logprobs: true})
	if !slices.Equal(res.Tokens, []int32{17, 17, 17, 17}) {
		t.Fatalf("tokens %v; want 17 each time", res.Tokens)
	}
	// A processor runs on the full logits: every step asks for them (prefill and 3 decodes).
	if n := fb.FullSteps.Load(); n != 4 {
		t.Fatalf("%d steps asked for the full logits, want 4", n)
	}
	// A ban of every id the fake model prefers moves greedy off them.
	b := newBackend()
	want := expectGreedy(b, []int32{5, 6}, 1)[0]
	res, _ = collect(t, engine.New(b), &engine.Request{Prompt: []int32{5, 6}, MaxTokens: 1,
		LogitBias: map[int32]float32{want: -100}})
	if res.Tokens[0] == want {
		t.Fatalf("banned id %d still picked", want)
	}
}

// TestLogprobsReportTheModel: processors change the pick, not the reported distribution.
func TestLogprobsReportTheModel(t *testing.T) {
	b := newBackend()
	_, steps := collect(t, engine.New(b), &engine.Request{Prompt: []int32{5, 6}, MaxTokens: 1,
		LogitBias: map[int32]float32{17: 100}, Logprobs: true, TopLogprobs: 1})
	tok := steps[0].Token
	if tok.ID != 17 || tok.Top[0].ID == 17 || tok.Logprob >= tok.Top[0].Logprob {
		t.Fatalf("token %+v: want 17 scored by the model, below its top pick", tok)
	}
}

func TestRepetitionPenalty(t *testing.T) {
	// A script that repeats one id: a strong penalty must move off it after the first time. The
	// fake's peak logit is 0, which a multiplicative penalty leaves alone, so every logit is raised
	// by 1 first.
	b := newBackend()
	b.Script = []int32{9, 9, 9, 9}
	raise := map[int32]float32{}
	for id := range int32(vocab) {
		raise[id] = 1
	}
	res, _ := collect(t, engine.New(b), &engine.Request{Prompt: []int32{5}, MaxTokens: 4, RepetitionPenalty: 1e6, LogitBias: raise})
	if res.Tokens[0] != 9 || slices.Contains(res.Tokens[1:], 9) {
		t.Fatalf("tokens %v: want 9 once", res.Tokens)
	}
	// The prompt counts too.
	res, _ = collect(t, engine.New(b), &engine.Request{Prompt: []int32{9}, MaxTokens: 1, RepetitionPenalty: 1e6, LogitBias: raise})
	if res.Tokens[0] == 9 {
		t.Fatalf("id of the prompt picked under the penalty")
	}
}

func TestMinTokensMasksStops(t *testing.T) {
	b := newBackend()
	b.Script = []int32{eos}
	b.End = eos
	res, _ := collect(t, engine.New(b), &engine.Request{Prompt: []int32{5}, MaxTokens: 10, StopIDs: []int32{eos}, MinTokens: 3})
	if len(res.Tokens) != 4 || res.Tokens[3] != eos || slices.Contains(res.Tokens[:3], eos) {
		t.Fatalf("tokens %v: want 3 non-stop ids then the stop", res.Tokens)
	}
	// Stop strings are not looked for before MinTokens either.
	b.Script = []int32{2, 2, 2, 2, 2}
	res, steps := collect(t, engine.New(b), &engine.Request{Prompt: []int32{5}, MaxTokens: 10, StopIDs: []int32{eos},
		MinTokens: 2, Stop: []string{"c"}, Decoder: letters{}})
	if len(res.Tokens) != 3 || text(steps) != "cc" {
		t.Fatalf("tokens %v text %q: want the stop string found at the third token", res.Tokens, text(steps))
	}
}

func TestIncludeStop(t *testing.T) {
	b := newBackend()
	b.Script = []int32{2, 3, 4, 5}
	_, steps := collect(t, engine.New(b), &engine.Request{Prompt: []int32{5}, MaxTokens: 10,
		Stop: []string{"de"}, IncludeStop: true, Decoder: letters{}})
	if got := text(steps); got != "cde" {
		t.Fatalf("text %q; want the stop string kept", got)
	}
}

func text(steps []engine.Step) string {
	var sb strings.Builder
	for _, s := range steps {
		sb.WriteString(s.Text)
	}
	return sb.String()
}

// onlyEven allows even ids only and records what it was told.
type onlyEven struct {
	accepted []int32
	fail     bool
}

func (c *onlyEven) Mask(l []float32) error {
	if c.fail {
		return errors.New("no way forward")
	}
	for i := 1; i < len(l); i += 2 {
		l[i] = float32(math.Inf(-1))
	}
	return nil
}

func (c *onlyEven) Accept(id int32) error { c.accepted = append(c.accepted, id); return nil }

func TestConstraint(t *testing.T) {
	c := &onlyEven{}
	res, _ := collect(t, engine.New(newBackend()), &engine.Request{Prompt: []int32{5}, MaxTokens: 8,
		Constraint: c, Sampling: engine.Sampling{Temperature: 1, HasSeed: true, Seed: 3}})
	for _, id := range res.Tokens {
		if id%2 != 0 {
			t.Fatalf("odd id in %v", res.Tokens)
		}
	}
	if !slices.Equal(c.accepted, res.Tokens) {
		t.Fatalf("accepted %v; generated %v", c.accepted, res.Tokens)
	}
	_, err := engine.New(newBackend()).Generate(t.Context(), &engine.Request{Prompt: []int32{5}, MaxTokens: 2,
		Constraint: &onlyEven{fail: true}}, nil)
	if err == nil || !strings.Contains(err.Error(), "no way forward") {
		t.Fatalf("a failing constraint: %v", err)
	}
}
