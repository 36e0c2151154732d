package engine

import (
	"fmt"
	"math"
)

// Constraint restricts which tokens may come next (structured output, forced tool calls). The
// generation loop calls Mask before every pick and Accept after it.
type Constraint interface {
	// Mask sets to -Inf the logits [V] of every token not allowed next. It must leave at least one
	// token allowed (a stop id once the constrained text is complete).
	Mask(logits []float32) error
	// Accept advances the constraint past id, which the last Mask allowed.
	Accept(id int32) error
}

// processors are a request's logit processors: self-contained code on the full logits [V] that
// runs in one place of the generation loop, on a copy, so that logprobs keep reporting the
// model's own distribution.
type processors struct {
	r       *Request
	buf     []float32      // [V] scratch: the processed logits
	seen    map[int32]bool // prompt and generated ids, for the repetition penalty
	stopSet map[int32]bool // r.StopIDs
}

func newProcessors(r *Request) *processors {
	p := &processors{r: r}
	if r.repetition() {
		p.seen = map[int32]bool{}
		for _, id := range r.Prompt {
			p.seen[id] = true
		}
	}
	if r.MinTokens > 0 {
		p.stopSet = map[int32]bool{}
		for _, id := range r.StopIDs {
			p.stopSet[id] = true
		}
	}
	return p
}

func (r *Request) repetition() bool { return r.RepetitionPenalty > 0 && r.RepetitionPenalty != 1 }

// active reports whether any processor changes the logits.
func (p *processors) active() bool {
	r := p.r
	return len(r.LogitBias) > 0 || r.repetition() || r.MinTokens > 0 || r.Constraint != nil
}

// apply returns the logits to sample from at generated tokens so far: logits itself when no
// processor is active, else a processed copy. logits: [V].
func (p *processors) apply(logits []float32, generated int) ([]float32, error) {
	if !p.active() {
		return logits, nil
	}
	r := p.r
	if cap(p.buf) < len(logits) {
		p.buf = make([]float32, len(logits))
	}
	x := p.buf[:len(logits)]
	copy(x, logits)
	v := int32(len(x))
	for id, b := range r.LogitBias {
		if id >= 0 && id < v {
			x[id] += b
		}
	}
	if r.repetition() {
		pen := float32(r.RepetitionPenalty)
		for id := range p.seen {
			if id >= 0 && id < v {
				if x[id] > 0 {
					x[id] /= pen
				} else {
					x[id] *= pen
				}
			}
		}
	}
	if generated < r.MinTokens {
		for id := range p.stopSet {
			if id >= 0 && id < v {
				x[id] = float32(math.Inf(-1))
			}
		}
	}
	if r.Constraint != nil {
		if err := r.Constraint.Mask(x); err != nil {
			return nil, fmt.Errorf("constraint: %w", err)
		}
	}
	return x, nil
}

// observe records the picked token.
func (p *processors) observe(id int32) error {
	if p.seen != nil {
		p.seen[id] = true
	}
	if p.r.Constraint != nil {
		if err := p.r.Constraint.Accept(id); err != nil {
			return fmt.Errorf("constraint: %w", err)
		}
	}
	return nil
}
