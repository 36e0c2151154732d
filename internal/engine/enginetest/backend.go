// Package enginetest provides a small deterministic engine.Backend for tests of the engine and the
// server: the logits at a position are a fixed function of the token there and its position, or
// follow a script, so every output is predictable without a model.
package enginetest

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lily-engine/lily/internal/engine"
)

// ErrNoSnapshot is returned by Snapshot when Backend.NoSnapshot is set.
var ErrNoSnapshot = errors.New("enginetest: snapshots disabled")

// Backend is a fake backend. Configure it before the first NewSession; the counters are safe for
// concurrent use.
type Backend struct {
	// Vocab is the logits length; Context the session capacity.
	Vocab, Context int
	// MinID is the lowest id the formula produces (keeps stop ids out of unscripted output).
	MinID int32
	// Script, when set, is what the model "wants" to say after every prompt: the logits returned by
	// Prefill peak at Script[0], the k-th Decode after it at Script[k], then at End forever.
	Script []int32
	End    int32
	// Respond, when set, picks the script for each prompt (called at every Prefill with all the
	// session's tokens); it overrides Script.
	Respond func(prompt []int32) []int32
	// DecodeDelay is slept in every Decode; PrefillDelay per prefilled token (with ctx checks).
	DecodeDelay, PrefillDelay time.Duration
	// NoSnapshot makes Snapshot fail, as a backend without prompt caching would.
	NoSnapshot bool

	// Counters for tests. FullSteps counts the steps asked for the full logits.
	PrefillCalls, PrefilledTokens, Decodes, FullSteps atomic.Int64
	// Snapshots counts snapshots taken; Released those released (a second Release of one is not
	// counted).
	Snapshots, Released atomic.Int64
}

// Next is the unscripted rule: the most likely token after last at pos.
func (b *Backend) Next(last int32, pos int) int32 {
	span := int64(b.Vocab) - int64(b.MinID)
	return b.MinID + int32((int64(last)*31+int64(pos)*7+11)%span)
}

// Logits returns the scores whose argmax is target: 0 at target, then -0.25 per id of distance
// (cyclic), so sampling has a smooth spread.
func (b *Backend) Logits(target int32) []float32 {
	l := make([]float32, b.Vocab)
	for i := range l {
		d := (i - int(target) + b.Vocab) % b.Vocab
		l[i] = -0.25 * float32(d)
	}
	return l
}

func (b *Backend) Name() string    { return "fake" }
func (b *Backend) VocabSize() int  { return b.Vocab }
func (b *Backend) MaxContext() int { return b.Context }
func (b *Backend) Close() error    { return nil }

// NewSession returns an empty session.
func (b *Backend) NewSession() (engine.Session, error) { return &session{b: b}, nil }

type session struct {
	b         *Backend
	toks      []int32
	promptEnd int // position of the last prefilled token
	script    []int32
	closed    bool
}

type snapshot struct {
	b        *Backend
	toks     []int32
	released bool
}

// Release counts the first release; a released snapshot cannot be restored.
func (s *snapshot) Release() {
	if !s.released {
		s.released = true
		s.b.Released.Add(1)
	}
}

func (s *snapshot) Len() int { return len(s.toks) }

func (s *session) Len() int { return len(s.toks) }

func (s *session) target(pos int) int32 {
	if s.script != nil && pos >= s.promptEnd {
		if k := pos - s.promptEnd; k < len(s.script) {
			return s.script[k]
		}
		return s.b.End
	}
	return s.b.Next(s.toks[pos], pos)
}

func (s *session) Prefill(ctx context.Context, tokens []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	if len(tokens) == 0 {
		return engine.StepResult{}, errors.New("enginetest: empty prefill")
	}
	if len(s.toks)+len(tokens) > s.b.Context {
		return engine.StepResult{}, errors.New("enginetest: context full")
	}
	s.b.PrefillCalls.Add(1)
	if o.Full {
		s.b.FullSteps.Add(1)
	}
	s.b.PrefilledTokens.Add(int64(len(tokens)))
	base := len(s.toks)
	s.toks = append(s.toks, tokens...)
	s.promptEnd = len(s.toks) - 1
	s.script = s.b.Script
	if s.b.Respond != nil {
		s.script = s.b.Respond(s.toks)
	}
	for i := range tokens {
		if s.b.PrefillDelay > 0 {
			time.Sleep(s.b.PrefillDelay)
		}
		if err := ctx.Err(); err != nil {
			s.toks = s.toks[:base]
			return engine.StepResult{}, err
		}
		if each != nil {
			if err := each(i, s.b.Logits(s.target(base+i))); err != nil {
				return engine.StepResult{}, err
			}
		}
	}
	return engine.NewStepResult(s.b.Logits(s.target(len(s.toks)-1)), o), nil
}

func (s *session) Decode(ctx context.Context, token int32, o engine.StepOptions) (engine.StepResult, error) {
	if len(s.toks) >= s.b.Context {
		return engine.StepResult{}, errors.New("enginetest: context full")
	}
	s.b.Decodes.Add(1)
	if o.Full {
		s.b.FullSteps.Add(1)
	}
	if s.b.DecodeDelay > 0 {
		time.Sleep(s.b.DecodeDelay)
	}
	s.toks = append(s.toks, token)
	return engine.NewStepResult(s.b.Logits(s.target(len(s.toks)-1)), o), nil
}

func (s *session) Snapshot() (engine.Snapshot, error) {
	if s.b.NoSnapshot {
		return nil, ErrNoSnapshot
	}
	s.b.Snapshots.Add(1)
	return &snapshot{b: s.b, toks: slices.Clone(s.toks)}, nil
}

func (s *session) Restore(sn engine.Snapshot) error {
	p, ok := sn.(*snapshot)
	if !ok {
		return errors.New("enginetest: foreign snapshot")
	}
	if p.released {
		return errors.New("enginetest: restore of a released snapshot")
	}
	s.toks = slices.Clone(p.toks)
	return nil
}

func (s *session) Close() error {
	s.closed = true
	return nil
}
