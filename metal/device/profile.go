package device

import (
	"errors"
	"fmt"
	"time"
)

// Profiler is a device that times each dispatch of a command list: `lily bench` compares the
// times, kernel by kernel, with the performance model's.
type Profiler interface {
	// RunProfiled runs cmds one dispatch per command buffer, in order, and returns each command's
	// time: a dispatch's is its command buffer's GPU time on Metal (GPUEndTime − GPUStartTime), the
	// wall clock on the emulator (meaningless as a speed; the same code path). A copy's time is
	// counted in the dispatch before it.
	RunProfiled(cmds []Command) ([]time.Duration, error)
}

// ProfileSplit puts every dispatch in a command buffer of its own.
func ProfileSplit() Split { return Split{First: 1, Every: 1} }

// RunProfiled runs the dispatches one at a time in list order and times each by the wall clock.
func (d *EmuDevice) RunProfiled(cmds []Command) ([]time.Duration, error) {
	if err := Check(cmds); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.emu == nil {
		return nil, errors.New("metal-emu: device closed")
	}
	out := make([]time.Duration, len(cmds))
	for i, c := range cmds {
		t0 := time.Now()
		if err := d.runOps(cmds[i:i+1], Encode([]Command{c}, d.acc, ProfileSplit())); err != nil {
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
		out[i] = time.Since(t0)
	}
	return out, nil
}

var _ Profiler = (*EmuDevice)(nil)
