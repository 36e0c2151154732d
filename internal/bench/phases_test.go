package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// step reports one decode step of a model of a DeltaNet layer and an attention layer to o, in
// the order the CPU backends report them, advancing clock by the given amount before each report.
func step(o trace.Observer, clock *time.Time, by map[trace.Site]time.Duration) {
	at := func(s trace.Site) { *clock = clock.Add(by[s]) }
	at(trace.Embed)
	o.Rows(trace.Model(trace.Embed), 0, 1, nil)
	for l, mixer := range []trace.Site{trace.DeltaNetOut, trace.AttentionOut} {
		for _, s := range []trace.Site{trace.InputNorm, mixer, trace.MixerResid, trace.PostNorm} {
			at(s)
			o.Rows(trace.At(l, s), 0, 1, nil)
		}
		at(trace.Router)
		o.Route(l, 0, 1, nil, nil, nil)
		for _, s := range []trace.Site{trace.MoEOut, trace.MoEResid} {
			at(s)
			o.Rows(trace.At(l, s), 0, 1, nil)
		}
	}
	for _, s := range []trace.Site{trace.FinalNorm, trace.Logits} {
		at(s)
		o.Rows(trace.Model(s), 0, 1, nil)
	}
}

// TestPhaseTimerAttributes drives a timer with a clock that moves a set time before each report and
// checks each phase's time per step: the time up to a point goes to the phase the point ends.
func TestPhaseTimerAttributes(t *testing.T) {
	clock := time.Unix(0, 0)
	p := NewPhaseTimer(func() time.Time { return clock })
	us := time.Microsecond
	by := map[trace.Site]time.Duration{
		trace.Embed: 7 * us, trace.InputNorm: 1 * us, trace.DeltaNetOut: 100 * us, trace.AttentionOut: 40 * us,
		trace.MixerResid: 2 * us, trace.PostNorm: 3 * us, trace.Router: 50 * us, trace.MoEOut: 5 * us,
		trace.MoEResid: 4 * us, trace.FinalNorm: 300 * us, trace.Logits: 11 * us,
	}
	for range 3 {
		step(p, &clock, by)
	}
	if p.Steps() != 3 {
		t.Fatalf("steps %d, want 3", p.Steps())
	}
	want := map[Phase]time.Duration{
		PhaseDeltaNet: 100 * us, PhaseAttention: 40 * us,
		PhaseMoE:     2 * (50 + 5) * us,
		PhaseNorms:   2 * (1 + 2 + 3 + 4) * us,
		PhaseLMHead:  (300 + 11) * us,
		PhaseBetween: 7 * us, // the first step's embedding has no step before it
	}
	for ph, w := range want {
		if got := p.PerStep(ph); got != w {
			t.Errorf("%v: %v a step, want %v", ph, got, w)
		}
	}
	rows := p.Table(map[Phase]int64{PhaseDeltaNet: 1000, PhaseLMHead: 622_000}, 4)
	if len(rows) != int(numPhases) {
		t.Fatalf("%d rows", len(rows))
	}
	dn, lm := rows[PhaseDeltaNet], rows[PhaseLMHead]
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if dn.Phase != "deltanet" || !near(dn.MsPerStep, 0.1) || !near(dn.GBs, 0.01) || !near(dn.OfRead, 0.0025) {
		t.Errorf("deltanet row %+v", dn)
	}
	if !near(lm.GBs, 2) || !near(lm.OfRead, 0.5) || rows[PhaseMoE].GBs != 0 {
		t.Errorf("lm_head row %+v, moe row %+v", lm, rows[PhaseMoE])
	}
	var share float64
	for _, r := range rows {
		share += r.Share
	}
	if share < 0.999999 || share > 1.000001 {
		t.Errorf("shares sum to %v", share)
	}
}

// observedFake is a fake backend whose sessions report a decode step's points, as the CPU
// backends do, while an observer is attached.
type observedFake struct{ fake }

type observedSession struct {
	fakeSession
	o trace.Observer
}

func (f *observedFake) NewSession() (engine.Session, error) { return &observedSession{}, nil }
func (s *observedSession) Observe(o trace.Observer)         { s.o = o }
func (s *observedSession) Decode(ctx context.Context, id int32, o engine.StepOptions) (engine.StepResult, error) {
	if s.o != nil {
		clock := time.Now()
		step(s.o, &clock, nil)
	}
	return s.fakeSession.Decode(ctx, id, o)
}

func TestProfileDecode(t *testing.T) {
	reads := 0
	p, read, err := ProfileDecode(context.Background(), &observedFake{fake{ctx: 64}}, 8, 5, 1, func() float64 { reads++; return float64(10 * reads) })
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps() != 5 || reads != 2 || read != 15 {
		t.Fatalf("steps %d, reads %d, read %v: want 5 steps and the mean of the reads before and after", p.Steps(), reads, read)
	}
	if _, _, err := ProfileDecode(context.Background(), &fake{ctx: 64}, 8, 5, 1, nil); err == nil {
		t.Fatal("a backend whose sessions cannot be observed was profiled")
	}
	if _, _, err := ProfileDecode(context.Background(), &observedFake{fake{ctx: 12}}, 8, 5, 1, nil); err == nil {
		t.Fatal("a profile past the context was run")
	}
}
