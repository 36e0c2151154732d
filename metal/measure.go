package metal

import (
	"errors"
	"fmt"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// Device returns the device the engine runs on.
func (e *Model) Device() Device { return e.dev }

// copyBytes is the buffer MeasureCopyBandwidth copies: far larger than any GPU cache.
const copyBytes = 256 << 20

// MeasureCopyBandwidth returns dev's device-memory bandwidth in bytes/s as a blit copy between two
// private buffers reaches it (each copied byte is read once and written once): the best of three
// copies after a warm-up. It is what `lily bench` divides the GPU's figures by.
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
		t0 := time.Now()
		if err := dev.Run(cp); err != nil {
			return 0, fmt.Errorf("metal: bandwidth probe: %w", err)
		}
		if d := time.Since(t0); i > 0 && d < best {
			best = d
		}
	}
	if best <= 0 {
		return 0, errors.New("metal: bandwidth probe: copy took no measurable time")
	}
	return 2 * copyBytes / best.Seconds(), nil
}

// Expected is the performance model's prediction for a device of measured bandwidth bw (bytes/s)
// and assumed compute peak (FLOP/s): decode and prefill tok/s at prompt length n.
func Expected(cfg *checkpoint.Config, bw, peak float64, n int) (decodeTokS, prefillTokS float64, err error) {
	return Predict(Machine{Name: "measured", Bandwidth: bw, Peak: peak}, cfg, n)
}
