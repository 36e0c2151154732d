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
	Chunk       int      // prompt tokens per prefill chunk (the context, where that is shorter)
	Decode      PlanCost // one decode token (at position 0)
	Prefill     PlanCost // one full chunk that is not the prompt's last (no lm_head)
	PrefillLast PlanCost // the prompt's last chunk, with the head on its last row
}

// PlanCost is one plan's encoding and, per kernel, its dispatches and threadgroups.
type PlanCost struct {
	device.Counts
	Kernels map[string]Launches
}

// Launches are a kernel's dispatches in a plan and their threadgroups in all.
type Launches struct{ Dispatches, Groups int }

func planCost(cmds []device.Command, acc device.Access, sp device.Split) (PlanCost, error) {
	if err := device.Check(cmds); err != nil {
		return PlanCost{}, err
	}
	pc := PlanCost{Counts: device.Count(device.Encode(cmds, acc, sp)), Kernels: map[string]Launches{}}
	for _, c := range cmds {
		if d, ok := c.(*device.Dispatch); ok {
			l := pc.Kernels[d.Kernel]
			l.Dispatches++
			l.Groups += d.Groups[0] * d.Groups[1] * d.Groups[2]
			pc.Kernels[d.Kernel] = l
		}
	}
	return pc, nil
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
	enc := func(cmds []device.Command) (PlanCost, error) { return planCost(cmds, acc, sp) }
	// A chunk cannot outrun the KV cache: with a context shorter than the chunk, a chunk is the
	// whole context.
	pc := PlanCounts{Chunk: min(e.chunk, e.maxCtx)}
	if pc.Decode, err = enc(s.decodePlan()); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: decode plan: %w", err)
	}
	if pc.Prefill, err = enc(s.prefillPlan(pc.Chunk, false, false)); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: prefill plan: %w", err)
	}
	if pc.PrefillLast, err = enc(s.prefillPlan(pc.Chunk, false, true)); err != nil {
		return PlanCounts{}, fmt.Errorf("metal: last prefill plan: %w", err)
	}
	return pc, nil
}

// CountPlans is PlanCounts for weights w without a GPU: the model is built on doctor's planDevice,
// which holds sizes only, so its plans are the real ones for w's layer pattern and sizes and the
// weights' bytes are never read (a real-size checkpoint whose data is a hole will do). Memory limits
// are not checked: nothing is allocated.
func CountPlans(w *checkpoint.Weights) (PlanCounts, error) {
	if w == nil || w.Config == nil {
		return PlanCounts{}, errors.New("metal: nil weights")
	}
	pd := &planDevice{of: &unlimited{}, threads: map[string]int{}}
	e, err := newModel(w, pd, min(w.Config.MaxPositionEmbeddings, 2*maxChunk))
	if err != nil {
		return PlanCounts{}, err
	}
	defer e.Close()
	return e.PlanCounts()
}

// unlimited is a device of unbounded memory limits and the full threadgroup, for planDevice.
type unlimited struct{ device.EmuDevice }

func (*unlimited) Limits() device.Limits {
	return device.Limits{MaxBufferLength: 1 << 50, WorkingSet: 1 << 50, Source: "plan-only"}
}
