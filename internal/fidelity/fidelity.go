// Package fidelity compares two backends teacher-forced on the same tokens: top-1 agreement of their
// next-token predictions and the perplexity each assigns to the sequence (the published quality check).
package fidelity

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/engine"
)

// Report is the comparison of backend B against backend A on one token sequence.
type Report struct {
	Positions     int     `json:"positions"`      // next-token predictions compared (len(tokens)-1)
	Top1Agreement float64 `json:"top1_agreement"` // fraction of positions where both argmaxes agree
	PPLA          float64 `json:"ppl_a"`          // perplexity of A on tokens[1:]
	PPLB          float64 `json:"ppl_b"`          // perplexity of B on tokens[1:]
	DeltaPPLRel   float64 `json:"delta_ppl_rel"`  // (PPLB-PPLA)/PPLA
	MaxAbsDLogp   float64 `json:"max_abs_dlogprob"`
	MeanAbsDLogp  float64 `json:"mean_abs_dlogprob"`
	// NearTieDisagreements counts disagreements where A's top-2 logprobs are within NearTie.
	NearTieDisagreements int `json:"near_tie_disagreements"`
}

// NearTie is the logprob gap under which a top-1 disagreement is called a near-tie: two correct
// implementations that differ only in rounding may order such candidates either way.
const NearTie = 1e-2

// Scores are one backend's teacher-forced results: for every position i < T-1, the argmax of the
// logits at i, the gap between its top two logprobs, and the logprob of tokens[i+1].
type Scores struct {
	Argmax []int32
	Gap    []float64
	Logp   []float64
}

// Plan is the way a backend runs the tokens it is scored on: engines plan a prompt and a decoded
// token differently (batched mat-mats against mat-vecs, a chunked recurrence against its step), so
// each plan has its own fidelity.
type Plan int

const (
	PlanPrefill Plan = iota // the whole sequence as one prompt, every position's logits reported
	PlanDecode              // one token at a time through Decode, as generation runs
)

// String names the plan as lily eval's --plan does.
func (p Plan) String() string {
	if p == PlanDecode {
		return "decode"
	}
	return "prefill"
}

// ParsePlan reads a plan's name ("prefill" or "decode").
func ParsePlan(s string) (Plan, error) {
	switch s {
	case "prefill":
		return PlanPrefill, nil
	case "decode":
		return PlanDecode, nil
	}
	return 0, fmt.Errorf("unknown plan %q (want prefill or decode)", s)
}

// Score runs tokens through a fresh session of b as one prompt and collects Scores.
func Score(ctx context.Context, b engine.Backend, tokens []int32) (*Scores, error) {
	return ScoreBy(ctx, b, tokens, PlanPrefill)
}

// ScoreBy runs tokens through a fresh session of b by plan and collects Scores.
func ScoreBy(ctx context.Context, b engine.Backend, tokens []int32, plan Plan) (*Scores, error) {
	if len(tokens) < 2 {
		return nil, errors.New("fidelity: need at least 2 tokens")
	}
	s, err := b.NewSession()
	if err != nil {
		return nil, fmt.Errorf("fidelity: %s session: %w", b.Name(), err)
	}
	defer s.Close()
	n := len(tokens) - 1
	sc := &Scores{Argmax: make([]int32, n), Gap: make([]float64, n), Logp: make([]float64, n)}
	score := func(i int, logits []float32) error {
		if i >= n {
			return nil
		}
		p, err := ScoreLogits(logits, tokens[i+1])
		sc.Argmax[i], sc.Gap[i], sc.Logp[i] = p.Argmax, p.Gap, p.Logp
		return err
	}
	if plan == PlanDecode {
		for i := range n {
			logits, err := engine.Logits(s.Decode(ctx, tokens[i], engine.StepOptions{Full: true}))
			if err != nil {
				return nil, fmt.Errorf("fidelity: %s decode at position %d: %w", b.Name(), i, err)
			}
			if err := score(i, logits); err != nil {
				return nil, err
			}
		}
		return sc, nil
	}
	if _, err := s.Prefill(ctx, tokens, engine.StepOptions{}, score); err != nil {
		return nil, fmt.Errorf("fidelity: %s prefill: %w", b.Name(), err)
	}
	return sc, nil
}

// Position is one position's teacher-forced result.
type Position struct {
	Argmax int32
	Gap    float64 // top-1 minus top-2 logit
	Logp   float64 // logprob of the next token
}

// ScoreLogits scores one position's logits against the token that follows.
func ScoreLogits(logits []float32, next int32) (Position, error) {
	if next < 0 || int(next) >= len(logits) {
		return Position{}, fmt.Errorf("fidelity: token %d outside vocab %d", next, len(logits))
	}
	top1, top2 := top2Of(logits)
	lse := engine.LogSumExp(logits)
	return Position{Argmax: int32(top1), Gap: float64(logits[top1]) - float64(logits[top2]), Logp: float64(logits[next]) - lse}, nil
}

// Compare scores tokens on a and b and reports how closely b follows a.
func Compare(ctx context.Context, a, b engine.Backend, tokens []int32) (*Report, error) {
	sa, err := Score(ctx, a, tokens)
	if err != nil {
		return nil, err
	}
	sb, err := Score(ctx, b, tokens)
	if err != nil {
		return nil, err
	}
	return Diff(sa, sb), nil
}

// Diff compares two Scores of the same tokens.
func Diff(a, b *Scores) *Report {
	n := len(a.Argmax)
	r := &Report{Positions: n}
	var agree int
	var nllA, nllB, sumAbs float64
	for i := 0; i < n; i++ {
		if a.Argmax[i] == b.Argmax[i] {
			agree++
		} else if a.Gap[i] < NearTie {
			r.NearTieDisagreements++
		}
		nllA -= a.Logp[i]
		nllB -= b.Logp[i]
		d := math.Abs(a.Logp[i] - b.Logp[i])
		sumAbs += d
		r.MaxAbsDLogp = math.Max(r.MaxAbsDLogp, d)
	}
	r.Top1Agreement = float64(agree) / float64(n)
	r.PPLA = math.Exp(nllA / float64(n))
	r.PPLB = math.Exp(nllB / float64(n))
	r.DeltaPPLRel = (r.PPLB - r.PPLA) / r.PPLA
	r.MeanAbsDLogp = sumAbs / float64(n)
	return r
}

// top2Of returns the indices of the two largest logits (lowest index first among equals).
func top2Of(logits []float32) (top1, top2 int) {
	top1, top2 = 0, -1
	for i := 1; i < len(logits); i++ {
		switch {
		case logits[i] > logits[top1]:
			top1, top2 = i, top1
		case top2 < 0 || logits[i] > logits[top2]:
			top2 = i
		}
	}
	if top2 < 0 {
		top2 = top1
	}
	return top1, top2
}
