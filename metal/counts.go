package metal

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// PlanCounts are what the engine's own plans cost to encode, as device.Encode lays them out
// (concurrent passes, barriers, command buffers) and as the darwin bridge sends them: dispatches,
// barriers and Objective-C messages of one decode token and of one prefill chunk. The
// performance model prices its launch and encoding terms from them.
type PlanCounts struct {
	Chunk       int           // prompt tokens per prefill chunk
	Decode      device.Counts // one decode token
	Prefill     device.Counts // one full chunk that is not the prompt's last (no lm_head)
	PrefillLast device.Counts // the prompt's last chunk, with the head on its last row
}

// PlanCounts encodes a decode token's plan and a prefill chunk's plans on a fresh session of e.
func (e *Model) PlanCounts() (PlanCounts, error) {
	acc, err := device.NewAccess(device.Source())
	if err != nil {
		return PlanCounts{}, err
	}
	s, err := e.newSession()
	if err != nil {
		return PlanCounts{}, fmt.Errorf("metal: counting plans: %w", err)
	}
	defer s.Close()
	sp := device.DefaultSplit()
	enc := func(cmds []device.Command) (device.Counts, error) {
		if err := device.Check(cmds); err != nil {
			return device.Counts{}, err
		}
		return device.Count(device.Encode(cmds, acc, sp)), nil
	}
	pc := PlanCounts{Chunk: e.chunk}
	if pc.Decode, err = enc(s.decodePlan()); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: decode plan: %w", err)
	}
	if pc.Prefill, err = enc(s.prefillPlan(e.chunk, false, false)); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: prefill plan: %w", err)
	}
	if pc.PrefillLast, err = enc(s.prefillPlan(e.chunk, false, true)); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: last prefill plan: %w", err)
	}
	return pc, nil
}

// CountPlans is PlanCounts for weights w without a GPU: the model is built on a device that
// only holds memory, so its plans are the real ones for w's layer pattern and sizes. (At tiny
// widths it needs little memory: the plans' dispatches do not depend on the widths, only their
// grids and windows do.)
func CountPlans(w *checkpoint.Weights) (PlanCounts, error) {
	if w == nil || w.Config == nil {
		return PlanCounts{}, errors.New("metal: nil weights")
	}
	e, err := newModel(w, &device.EmuDevice{}, min(w.Config.MaxPositionEmbeddings, 4*defaultChunk))
	if err != nil {
		return PlanCounts{}, err
	}
	defer e.Close()
	return e.PlanCounts()
}
