package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// Phase is a part of a decode step that PhaseTimer times.
type Phase int

const (
	PhaseDeltaNet  Phase = iota // the Gated DeltaNet mixers: projections, conv, state step, out_proj
	PhaseAttention              // the attention mixers: projections, KV cache, attention, o_proj
	PhaseMoE                    // router, shared and routed experts
	PhaseNorms                  // the RMSNorms and residual adds between them
	PhaseLMHead                 // the final norm and lm_head
	PhaseBetween                // from one step's logits to the next step's embedding: the engine's own work
	numPhases
)

var phaseNames = [numPhases]string{"deltanet", "attention", "moe", "norms", "lm_head", "between"}

func (p Phase) String() string { return phaseNames[p] }

// PhaseTimer is a trace.Observer that splits decode steps' wall time into Phases from the moments
// their observation points are reported: the time since the previous point goes to the phase of
// the point that ends it (a mixer's output ends its mixer, the MoE's output and router choice end
// the MoE, the logits end lm_head, the next step's embedding ends the time between steps). It
// relies on a backend reporting each point as soon as it is computed, as the CPU backends do.
type PhaseTimer struct {
	now     func() time.Time
	last    time.Time
	started bool
	d       [numPhases]time.Duration
	steps   int
}

// NewPhaseTimer returns a timer reading the clock now (time.Now when nil).
func NewPhaseTimer(now func() time.Time) *PhaseTimer {
	if now == nil {
		now = time.Now
	}
	return &PhaseTimer{now: now}
}

// phaseOf is the phase that a report of site s ends.
func phaseOf(s trace.Site) Phase {
	switch s {
	case trace.Embed:
		return PhaseBetween
	case trace.DeltaNetOut:
		return PhaseDeltaNet
	case trace.AttentionOut:
		return PhaseAttention
	case trace.Router, trace.MoEOut:
		return PhaseMoE
	case trace.FinalNorm, trace.Logits:
		return PhaseLMHead
	default: // InputNorm, MixerResid, PostNorm, MoEResid
		return PhaseNorms
	}
}

// Rows implements trace.Observer; an Embed report starts a step.
func (p *PhaseTimer) Rows(pt trace.Point, _, _ int, _ []float32) {
	p.mark(phaseOf(pt.Site))
	if pt.Site == trace.Embed {
		p.steps++
	}
}

// Route implements trace.Observer.
func (p *PhaseTimer) Route(int, int, int, []float32, []int, []float32) { p.mark(PhaseMoE) }

func (p *PhaseTimer) mark(ph Phase) {
	t := p.now()
	if p.started {
		p.d[ph] += t.Sub(p.last)
	}
	p.last, p.started = t, true
}

// Steps returns the steps begun (Embed reports).
func (p *PhaseTimer) Steps() int { return p.steps }

// PerStep returns phase ph's time per step; the time between steps is counted over the steps after
// the first, which is the only one with none before it.
func (p *PhaseTimer) PerStep(ph Phase) time.Duration {
	n := p.steps
	if ph == PhaseBetween {
		n--
	}
	if n < 1 {
		return 0
	}
	return p.d[ph] / time.Duration(n)
}

// PhaseRow is one phase of a profiled decode step: its time per step, its share of the step, and
// where its memory traffic is known (Bytes > 0), the rate it streamed at and that rate against the
// streaming read measured around the profile.
type PhaseRow struct {
	Phase     string  `json:"phase"`
	MsPerStep float64 `json:"ms_per_step"`
	Share     float64 `json:"share"`
	Bytes     int64   `json:"bytes,omitempty"`
	GBs       float64 `json:"gbs,omitempty"`
	OfRead    float64 `json:"of_read,omitempty"`
}

// Table returns the profile as rows in Phase order, the memory traffic of each phase per step from
// bytes (missing or 0: not known), against a streaming read of readGBs (0: unknown).
func (p *PhaseTimer) Table(bytes map[Phase]int64, readGBs float64) []PhaseRow {
	var total time.Duration
	for ph := range numPhases {
		total += p.PerStep(ph)
	}
	rows := make([]PhaseRow, 0, numPhases)
	for ph := range numPhases {
		d := p.PerStep(ph)
		r := PhaseRow{Phase: ph.String(), MsPerStep: d.Seconds() * 1e3}
		if total > 0 {
			r.Share = float64(d) / float64(total)
		}
		if b := bytes[ph]; b > 0 && d > 0 {
			r.Bytes, r.GBs = b, float64(b)/d.Seconds()/1e9
			if readGBs > 0 {
				r.OfRead = r.GBs / readGBs
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// ProfileDecode prefills a random prompt of n tokens on a new session of b, then decodes decode
// greedy tokens with a PhaseTimer attached and returns it, with the streaming read measured right
// before and after the decode (bandwidth, when set: their mean; 0 otherwise). b's sessions must be
// trace.Observable.
func ProfileDecode(ctx context.Context, b engine.Backend, n, decode int, seed uint64, bandwidth func() float64) (*PhaseTimer, float64, error) {
	if n < 1 || decode < 1 {
		return nil, 0, fmt.Errorf("bench: profile needs a prompt and a decoded token, got %d and %d", n, decode)
	}
	if n+decode > b.MaxContext() {
		return nil, 0, fmt.Errorf("bench: profile of %d + %d tokens past the context of %d", n, decode, b.MaxContext())
	}
	s, err := b.NewSession()
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	o, ok := s.(trace.Observable)
	if !ok {
		return nil, 0, fmt.Errorf("bench: the backend's sessions cannot be observed, so their decode steps cannot be profiled")
	}
	prompt := randomPrompt(rand.New(rand.NewPCG(seed, 0x70726f66)), n, b.VocabSize())
	step, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil)
	if err != nil {
		return nil, 0, err
	}
	var read float64
	if bandwidth != nil {
		read = bandwidth()
	}
	t := NewPhaseTimer(nil)
	o.Observe(t)
	defer o.Observe(nil)
	for range decode {
		if step, err = s.Decode(ctx, step.Greedy, engine.StepOptions{}); err != nil {
			return nil, 0, err
		}
	}
	o.Observe(nil)
	if bandwidth != nil {
		read = (read + bandwidth()) / 2
	}
	return t, read, nil
}
