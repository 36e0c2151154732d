package fidelity

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

// table is a fake backend whose logits at a position depend only on the token there.
type table struct {
	name string
	v    int
	f    func(tok int32, out []float32)
}

func (t *table) Name() string                              { return t.name }
func (t *table) VocabSize() int                            { return t.v }
func (t *table) MaxContext() int                           { return 1 << 20 }
func (t *table) NewSession() (engine.Session, error)       { return &tableSession{t: t}, nil }
func (t *table) Close() error                              { return nil }
func (s *tableSession) Len() int                           { return s.n }
func (s *tableSession) Snapshot() (engine.Snapshot, error) { return nil, nil }
func (s *tableSession) Restore(engine.Snapshot) error      { return nil }
func (s *tableSession) Close() error                       { return nil }

type tableSession struct {
	t *table
	n int
}

func (s *tableSession) Prefill(ctx context.Context, toks []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	out := make([]float32, s.t.v)
	for i, tok := range toks {
		s.t.f(tok, out)
		if each != nil {
			if err := each(i, out); err != nil {
				return engine.StepResult{}, err
			}
		}
	}
	s.n += len(toks)
	return engine.NewStepResult(out, o), nil
}

func (s *tableSession) Decode(ctx context.Context, tok int32, o engine.StepOptions) (engine.StepResult, error) {
	return s.Prefill(ctx, []int32{tok}, o, nil)
}

func TestUniformLogitsGivePerplexityV(t *testing.T) {
	const v = 37
	u := &table{name: "u", v: v, f: func(int32, []float32) {}}
	toks := []int32{1, 5, 9, 2, 30}
	r, err := Compare(context.Background(), u, u, toks)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.PPLA-v) > 1e-9 || math.Abs(r.PPLB-v) > 1e-9 {
		t.Fatalf("uniform ppl = %v, %v; want %d", r.PPLA, r.PPLB, v)
	}
	if r.Positions != len(toks)-1 || r.Top1Agreement != 1 || r.DeltaPPLRel != 0 {
		t.Fatalf("self comparison: %+v", r)
	}
}

func TestDisagreementAndPerplexityShift(t *testing.T) {
	const v = 8
	// a predicts tok+1 strongly; b agrees except after token 3, where it predicts 0.
	a := &table{name: "a", v: v, f: func(tok int32, out []float32) {
		for i := range out {
			out[i] = 0
		}
		out[(tok+1)%v] = 5
	}}
	b := &table{name: "b", v: v, f: func(tok int32, out []float32) {
		for i := range out {
			out[i] = 0
		}
		if tok == 3 {
			out[0] = 5
		} else {
			out[(tok+1)%v] = 5
		}
	}}
	toks := []int32{1, 2, 3, 4, 5} // 4 positions; the third (after 3) disagrees
	r, err := Compare(context.Background(), a, b, toks)
	if err != nil {
		t.Fatal(err)
	}
	if r.Top1Agreement != 0.75 {
		t.Fatalf("agreement %v, want 0.75", r.Top1Agreement)
	}
	// a assigns p = e^5/(e^5+7) to every next token; b the same three times and 1/(e^5+7) once.
	z := math.Exp(5) + 7
	la := math.Log(math.Exp(5) / z)
	lb := math.Log(1 / z)
	wantA := math.Exp(-la)
	wantB := math.Exp(-(3*la + lb) / 4)
	if math.Abs(r.PPLA-wantA) > 1e-6 || math.Abs(r.PPLB-wantB) > 1e-6 {
		t.Fatalf("ppl %v %v, want %v %v", r.PPLA, r.PPLB, wantA, wantB)
	}
	if math.Abs(r.MaxAbsDLogp-(la-lb)) > 1e-6 {
		t.Fatalf("max |dlogp| %v, want %v", r.MaxAbsDLogp, la-lb)
	}
	if r.NearTieDisagreements != 0 {
		t.Fatalf("the disagreement is not a near-tie: %+v", r)
	}
}

func TestRejectsShortAndOutOfVocab(t *testing.T) {
	u := &table{name: "u", v: 4, f: func(int32, []float32) {}}
	if _, err := Score(context.Background(), u, []int32{1}); err == nil {
		t.Fatal("one token accepted")
	}
	if _, err := Score(context.Background(), u, []int32{1, 9}); err == nil {
		t.Fatal("token outside the vocab accepted")
	}
}

// stateful is a fake backend whose logits depend on the tokens seen so far in the session, and
// whose Decode goes wrong after a given number of steps when fail is set: the decode plan must see
// each prefix exactly as the prefill plan does, and report where a step failed.
type stateful struct {
	table
	fail int // a Decode at this position fails (0: never)
}

func (b *stateful) NewSession() (engine.Session, error) { return &statefulSession{b: b}, nil }

type statefulSession struct {
	tableSession
	b   *stateful
	sum int32
}

func (s *statefulSession) step(tok int32, out []float32) {
	s.sum += tok
	for i := range out {
		out[i] = float32((int(s.sum)*7 + i*i) % 11)
	}
	s.n++
}

func (s *statefulSession) Prefill(ctx context.Context, toks []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	out := make([]float32, s.b.v)
	for i, tok := range toks {
		s.step(tok, out)
		if err := each(i, out); err != nil {
			return engine.StepResult{}, err
		}
	}
	return engine.NewStepResult(out, o), nil
}

func (s *statefulSession) Decode(ctx context.Context, tok int32, o engine.StepOptions) (engine.StepResult, error) {
	if s.b.fail > 0 && s.n == s.b.fail {
		return engine.StepResult{}, errors.New("step failed")
	}
	out := make([]float32, s.b.v)
	s.step(tok, out)
	return engine.NewStepResult(out, o), nil
}

// TestScoreByDecodeMatchesPrefill: the decode plan scores every position from the same prefix as
// the prefill plan (a backend whose logits depend on the whole prefix gives the same Scores), and
// a failing step is reported with its position.
func TestScoreByDecodeMatchesPrefill(t *testing.T) {
	b := &stateful{table: table{name: "s", v: 9}}
	toks := []int32{3, 1, 4, 1, 5, 8, 2, 6}
	pre, err := ScoreBy(context.Background(), b, toks, PlanPrefill)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := ScoreBy(context.Background(), b, toks, PlanDecode)
	if err != nil {
		t.Fatal(err)
	}
	if r := Diff(pre, dec); r.Top1Agreement != 1 || r.MaxAbsDLogp != 0 {
		t.Fatalf("decode plan against prefill plan on the same backend: %+v", r)
	}
	b.fail = 5
	if _, err := ScoreBy(context.Background(), b, toks, PlanDecode); err == nil || !strings.Contains(err.Error(), "position 5") {
		t.Fatalf("a failing decode step: %v", err)
	}
}

func TestParsePlan(t *testing.T) {
	for _, p := range []Plan{PlanPrefill, PlanDecode} {
		if got, err := ParsePlan(p.String()); err != nil || got != p {
			t.Fatalf("ParsePlan(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePlan("chunked"); err == nil {
		t.Fatal("an unknown plan accepted")
	}
}
