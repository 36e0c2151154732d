// Package diff localises a numerical divergence between two backends: it runs both on the same
// tokens with a trace.Recorder attached to each session and compares every named intermediate
// (package trace) at every position against a per-point budget (budget.go). lily diff prints it.
package diff

import (
	"context"
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// Trace is what one backend reported on the run's tokens.
type Trace struct {
	Backend string
	Rec     *trace.Recorder
}

// Record runs b on prompt (one prefill), then decodes the tokens of decoded one at a time, with a
// recorder attached to the session. When decoded is nil it decodes n tokens greedily instead, each
// the argmax of the previous step's logits, and returns them (the reference chooses the tokens;
// the backend under test is teacher-forced on them).
func Record(ctx context.Context, b engine.Backend, prompt []int32, decoded []int32, n int) (*Trace, []int32, error) {
	if len(prompt) == 0 {
		return nil, nil, errors.New("diff: empty prompt")
	}
	s, err := b.NewSession()
	if err != nil {
		return nil, nil, fmt.Errorf("diff: %s: %w", b.Name(), err)
	}
	defer s.Close()
	obs, ok := s.(trace.Observable)
	if !ok {
		return nil, nil, fmt.Errorf("diff: backend %s does not report its intermediates", b.Name())
	}
	rec := trace.NewRecorder()
	obs.Observe(rec)
	r, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("diff: %s prefill: %w", b.Name(), err)
	}
	greedy := decoded == nil
	if !greedy {
		n = len(decoded)
	}
	out := make([]int32, 0, n)
	for i := range n {
		tok := r.Greedy
		if !greedy {
			tok = decoded[i]
		}
		out = append(out, tok)
		if r, err = s.Decode(ctx, tok, engine.StepOptions{}); err != nil {
			return nil, nil, fmt.Errorf("diff: %s decode step %d: %w", b.Name(), i+1, err)
		}
	}
	if err := rec.Err(); err != nil {
		return nil, nil, fmt.Errorf("diff: %s: %w", b.Name(), err)
	}
	return &Trace{Backend: b.Name(), Rec: rec}, out, nil
}

// Run records want (the reference: it picks the decode tokens, greedily) and then got on the same
// tokens, and compares them (Compare).
func Run(ctx context.Context, got, want engine.Backend, prompt []int32, decode int) (*Report, *Trace, *Trace, error) {
	if decode < 0 {
		return nil, nil, nil, fmt.Errorf("diff: %d decode steps", decode)
	}
	if n := len(prompt) + decode; n > got.MaxContext() || n > want.MaxContext() {
		return nil, nil, nil, fmt.Errorf("diff: %d prompt + %d decode tokens exceed the context (%d, %d)", len(prompt), decode, want.MaxContext(), got.MaxContext())
	}
	tw, toks, err := Record(ctx, want, prompt, nil, decode)
	if err != nil {
		return nil, nil, nil, err
	}
	tg, _, err := Record(ctx, got, prompt, toks, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	rep := Compare(tg, tw, len(prompt))
	rep.Prompt, rep.Decoded = prompt, toks
	return rep, tg, tw, nil
}
