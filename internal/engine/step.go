package engine

import (
	"errors"
	"math"
)

// StepOptions says what one Prefill or Decode step returns beside the greedy id: a step costs the
// backend only what its caller asks for (the Metal engine reads back a few hundred bytes for a
// greedy token, the full logits only when asked).
type StepOptions struct {
	// TopK asks for the TopK highest logits and the log-sum-exp (0: neither).
	TopK int
	// Full asks for the whole logits [V] and the log-sum-exp: logit processors, penalties,
	// samplers without a top-k filter.
	Full bool
}

// StepResult is what a step returns for the last position.
type StepResult struct {
	// Greedy is the argmax of the logits (the lowest id on ties).
	Greedy int32
	// LSE is log Σ exp(logits), set when TopK > 0 or Full (else 0), so that a token's logprob is
	// its logit − LSE.
	LSE float64
	// TopIDs and TopLogits are the min(TopK, V) highest finite logits, highest first, the lower id
	// first on ties.
	TopIDs    []int32
	TopLogits []float32
	// Logits is the whole [V] when Full was asked, else nil.
	Logits []float32
}

// NewStepResult is a StepResult for a backend that holds the logits [V] on the CPU. The slices may
// alias logits and are valid until the session's next step.
func NewStepResult(logits []float32, o StepOptions) StepResult {
	return NewStepResultGreedy(logits, argmax(logits), o)
}

// NewStepResultGreedy is NewStepResult for a backend that found the greedy id itself (with a vector
// kernel, say: a scan of 248K logits is 2% of a short model's decode step in plain Go), by the same
// rule: the first largest logit, NaNs ignored, 0 when there is none.
func NewStepResultGreedy(logits []float32, greedy int32, o StepOptions) StepResult {
	r := StepResult{Greedy: greedy}
	if o.TopK > 0 || o.Full {
		r.LSE = LogSumExp(logits)
	}
	if o.TopK > 0 {
		r.TopIDs = topIndices(logits, min(o.TopK, len(logits)))
		r.TopLogits = make([]float32, len(r.TopIDs))
		for i, id := range r.TopIDs {
			r.TopLogits[i] = logits[id]
		}
	}
	if o.Full {
		r.Logits = logits
	}
	return r
}

// Logits returns r's full logits: for callers that asked for Full (tests, tools), written as
// engine.Logits(s.Decode(ctx, id, engine.StepOptions{Full: true})).
func Logits(r StepResult, err error) ([]float32, error) {
	if err != nil {
		return nil, err
	}
	if r.Logits == nil {
		return nil, errors.New("engine: the step has no full logits (StepOptions.Full not set)")
	}
	return r.Logits, nil
}

// logit returns id's logit in r and whether r has it (in Logits or among the top ids).
func (r *StepResult) logit(id int32) (float32, bool) {
	if r.Logits != nil {
		if id >= 0 && int(id) < len(r.Logits) {
			return r.Logits[id], true
		}
		return 0, false
	}
	for i, t := range r.TopIDs {
		if t == id {
			return r.TopLogits[i], true
		}
	}
	return 0, false
}

// stepLogprobs returns id's logprob under r and, when k > 0, the k most likely tokens. id is the
// token picked from r, so it is among r's top ids unless the backend's top-k and argmax disagree
// (NaN logits); its logprob is then NaN, which FiniteLogprob reports.
func stepLogprobs(r *StepResult, id int32, k int) (float64, []TopLogprob) {
	if r.Logits != nil {
		return logprobs(r.Logits, id, k)
	}
	lp := math.NaN()
	if l, ok := r.logit(id); ok {
		lp = float64(l) - r.LSE
	}
	if k <= 0 {
		return lp, nil
	}
	n := min(k, len(r.TopIDs))
	top := make([]TopLogprob, n)
	for i := range n {
		top[i] = TopLogprob{ID: r.TopIDs[i], Logprob: float64(r.TopLogits[i]) - r.LSE}
	}
	return lp, top
}
