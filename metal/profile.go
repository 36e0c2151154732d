package metal

import (
	"fmt"
	"sort"
	"time"

	"github.com/lily-engine/lily/metal/device"
)

// KernelProfile is one kernel's measured time in a step: its dispatches and their summed time.
type KernelProfile struct {
	Kernel     string
	Dispatches int
	Time       time.Duration
}

// ProfileDecode runs one decode token's plan on a fresh session (position 0, token 0) with every
// dispatch in a command buffer of its own, and returns each kernel's time, slowest first. On Metal
// the times are the GPU's own; on the emulator, the wall clock (meaningless as speed).
func (e *Model) ProfileDecode() ([]KernelProfile, error) {
	p, ok := e.dev.(device.Profiler)
	if !ok {
		return nil, fmt.Errorf("metal: device %s cannot time dispatches", e.dev.Name())
	}
	s, err := e.newSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.setInputs([]int32{0}, 0); err != nil {
		return nil, err
	}
	cmds := s.decodePlan()
	ts, err := p.RunProfiled(cmds)
	if err != nil {
		return nil, fmt.Errorf("metal: profiling a decode step: %w", err)
	}
	at := map[string]int{} // kernel → its index in out
	var out []KernelProfile
	for i, c := range cmds {
		d, ok := c.(*device.Dispatch)
		if !ok {
			continue
		}
		j, seen := at[d.Kernel]
		if !seen {
			j = len(out)
			at[d.Kernel] = j
			out = append(out, KernelProfile{Kernel: d.Kernel})
		}
		out[j].Dispatches++
		out[j].Time += ts[i]
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time > out[j].Time
		}
		return out[i].Kernel < out[j].Kernel
	})
	return out, nil
}
