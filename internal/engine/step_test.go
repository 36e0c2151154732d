package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// lseTol bounds |LSE − logit − logprob| from the small result against the full logits: both are the
// same float64 sums, so only rounding differs.
const lseTol = 1e-12

// stepCases are samplings with the step options the generation loop derives from them.
func stepCases() []Sampling {
	return []Sampling{
		{},
		{Temperature: 0.7, TopK: 20, TopP: 0.95, HasSeed: true, Seed: 5},
		{Temperature: 1.3, TopK: 5, MinP: 0.2, HasSeed: true, Seed: 6},
		{Temperature: 1, TopK: 1, HasSeed: true, Seed: 7},
	}
}

// The sampler picks the same tokens, with the same seed, from the small result the loop asks for
// as from the full logits, and the logprobs agree: the small result loses nothing the request needs.
func TestSmallStepPicksAsFull(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for ci, s := range stepCases() {
		for _, top := range []int{0, 3, 20} {
			o := s.stepOptions(true, top)
			if o.Full {
				t.Fatalf("case %d: %+v asks for the full logits", ci, s)
			}
			small, full := newSampler(s), newSampler(s)
			for trial := range 300 {
				logits := make([]float32, 50+r.IntN(200))
				for i := range logits {
					logits[i] = float32(r.IntN(12)) / 3 // ties
					if r.IntN(20) == 0 {
						logits[i] = float32(math.Inf(-1))
					}
				}
				sr := NewStepResult(logits, o)
				fr := NewStepResult(logits, StepOptions{Full: true})
				a, b := small.pick(&sr), full.pick(&fr)
				if a != b {
					t.Fatalf("case %d trial %d: small result picks %d, full logits %d", ci, trial, a, b)
				}
				la, ta := stepLogprobs(&sr, a, top)
				lb, tb := stepLogprobs(&fr, b, top)
				if math.Abs(la-lb) > lseTol || len(ta) != len(tb) {
					t.Fatalf("case %d trial %d: logprob %v/%d vs %v/%d", ci, trial, la, len(ta), lb, len(tb))
				}
				for i := range ta {
					if ta[i].ID != tb[i].ID || math.Abs(ta[i].Logprob-tb[i].Logprob) > lseTol {
						t.Fatalf("case %d trial %d: top %d: %+v vs %+v", ci, trial, i, ta[i], tb[i])
					}
				}
			}
		}
	}
}

// Penalties and samplers without a top-k filter need the whole distribution; greedy without
// logprobs needs nothing beyond the greedy id.
func TestStepOptions(t *testing.T) {
	for _, c := range []struct {
		s        Sampling
		lp       bool
		top      int
		wantFull bool
		wantK    int
	}{
		{Sampling{}, false, 0, false, 0},
		{Sampling{}, true, 0, false, 1},
		{Sampling{}, true, 5, false, 5},
		{Sampling{Temperature: 1, TopK: 20}, false, 0, false, 20},
		{Sampling{Temperature: 1, TopK: 4}, true, 10, false, 10},
		{Sampling{Temperature: 1}, false, 0, true, 0},
		{Sampling{PresencePenalty: 0.5}, false, 0, true, 0},
		{Sampling{Temperature: 1, TopK: 20, FrequencyPenalty: 0.1}, false, 0, true, 0},
	} {
		o := c.s.stepOptions(c.lp, c.top)
		if o.Full != c.wantFull || o.TopK != c.wantK {
			t.Errorf("%+v logprobs=%v top=%d: got %+v", c.s, c.lp, c.top, o)
		}
	}
}

func TestNewStepResult(t *testing.T) {
	logits := []float32{1, 4, float32(math.NaN()), 4, -2}
	r := NewStepResult(logits, StepOptions{TopK: 3})
	if r.Greedy != 1 || r.Logits != nil {
		t.Fatalf("greedy %d, logits %v", r.Greedy, r.Logits)
	}
	if want := []int32{1, 3, 0}; len(r.TopIDs) != 3 || r.TopIDs[0] != want[0] || r.TopIDs[1] != want[1] || r.TopIDs[2] != want[2] {
		t.Fatalf("top ids %v, want %v", r.TopIDs, want)
	}
	if r.TopLogits[2] != 1 || !math.IsNaN(r.LSE) {
		t.Fatalf("top logits %v, lse %v (NaN logits give a NaN log-sum-exp)", r.TopLogits, r.LSE)
	}
	if g := NewStepResult(logits, StepOptions{}); g.TopIDs != nil || g.LSE != 0 {
		t.Fatalf("greedy-only result carries %+v", g)
	}
	if _, err := Logits(NewStepResult(logits, StepOptions{TopK: 2}), nil); err == nil {
		t.Fatal("Logits of a result without Full: no error")
	}
	if l, err := Logits(NewStepResult(logits, StepOptions{Full: true}), nil); err != nil || len(l) != 5 {
		t.Fatalf("Logits of a full result: %v, %v", l, err)
	}
}
