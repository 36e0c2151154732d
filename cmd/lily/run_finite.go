package main

import "github.com/lily-engine/lily/internal/engine"

// finiteLogprobs replaces the non-finite log-probabilities of res (NaN weights make them) by
// engine.LogprobFloor, which JSON can carry, and reports whether there were any.
func finiteLogprobs(res *runResult) bool {
	found := false
	fix := func(v *float64) {
		var ok bool
		if *v, ok = engine.FiniteLogprob(*v); !ok {
			found = true
		}
	}
	for i := range res.Logprobs {
		fix(&res.Logprobs[i])
	}
	for _, top := range res.TopLogprobs {
		for i := range top {
			fix(&top[i].Logprob)
		}
	}
	return found
}
