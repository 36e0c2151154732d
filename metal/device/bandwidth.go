package device

import (
	"errors"
	"fmt"
	"time"
)

// copyBytes is the buffer MeasureCopyBandwidth copies: far larger than any GPU cache.
const copyBytes = 256 << 20

// timedRunner is a device that can time a command buffer on the GPU itself (Metal's GPUStartTime and
// GPUEndTime), without the CPU's encoding and wake-up.
type timedRunner interface {
	RunTimed(cmds []Command) (time.Duration, error)
}

// MeasureCopyBandwidth returns dev's device-memory bandwidth in bytes/s as a blit copy between two
// private buffers reaches it (each copied byte is read once and written once): the best of three
// copies after a warm-up, timed on the GPU where the device can (else by the wall clock). It is
// what `lily bench` divides the GPU's figures by.
func MeasureCopyBandwidth(dev Device) (float64, error) {
	src, err := dev.Alloc(copyBytes, Private)
	if err != nil {
		return 0, fmt.Errorf("metal: bandwidth probe: %w", err)
	}
	defer dev.Free(src)
	dst, err := dev.Alloc(copyBytes, Private)
	if err != nil {
		return 0, fmt.Errorf("metal: bandwidth probe: %w", err)
	}
	defer dev.Free(dst)
	cp := []Command{&Copy{Src: src, Dst: dst, N: copyBytes}}
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 4; i++ {
		d, err := timeRun(dev, cp)
		if err != nil {
			return 0, fmt.Errorf("metal: bandwidth probe: %w", err)
		}
		if i > 0 && d < best {
			best = d
		}
	}
	if best <= 0 {
		return 0, errors.New("metal: bandwidth probe: copy took no measurable time")
	}
	return 2 * copyBytes / best.Seconds(), nil
}

// timeRun runs cmds and returns how long they took: GPU time where dev measures it.
func timeRun(dev Device, cmds []Command) (time.Duration, error) {
	if tr, ok := dev.(timedRunner); ok {
		return tr.RunTimed(cmds)
	}
	t0 := time.Now()
	err := dev.Run(cmds)
	return time.Since(t0), err
}

// RunGPUTimed runs cmds and returns the GPU's own time for them where dev measures it (ok true);
// elsewhere it runs them and returns ok false.
func RunGPUTimed(dev Device, cmds []Command) (gpu time.Duration, ok bool, err error) {
	if tr, has := dev.(timedRunner); has {
		gpu, err = tr.RunTimed(cmds)
		return gpu, true, err
	}
	return 0, false, dev.Run(cmds)
}
