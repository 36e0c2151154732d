package metal

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/metal/device"
)

// recordingDevice is the plan-only emulator device whose Run records the kernels it is given and
// runs nothing.
type recordingDevice struct {
	*device.EmuDevice
	kernels map[string]int
}

func (d *recordingDevice) Run(cmds []device.Command) error {
	if err := device.Check(cmds); err != nil {
		return err
	}
	for _, c := range cmds {
		if k, ok := c.(*device.Dispatch); ok {
			d.kernels[k.Kernel]++
		}
	}
	return nil
}

// TestPrefillHeadOnLastChunk: a prompt of three chunks runs the final norm, the lm_head and the
// top-k once, on the last chunk; with every position's logits requested, on every chunk.
func TestPrefillHeadOnLastChunk(t *testing.T) {
	dev := &recordingDevice{EmuDevice: &device.EmuDevice{}, kernels: map[string]int{}}
	e, err := newModel(openTest(t, "mlx").Weights, dev, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.chunk = 4 // 10 tokens: chunks of 4, 4, 2
	for _, c := range []struct {
		each bool
		want int
	}{{false, 1}, {true, 3}} {
		s, err := e.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		clear(dev.kernels)
		var each func(int, []float32) error
		if c.each {
			each = func(int, []float32) error { return nil }
		}
		if _, err := s.Prefill(context.Background(), enginetest.RandomTokens(10, 256, 1), engine.StepOptions{}, each); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := dev.kernels["logits_topk_merge"]; got != c.want {
			t.Errorf("each %v: logits_topk_merge ran %d times over 3 chunks, want %d", c.each, got, c.want)
		}
		// rms_norm: two per layer per chunk, plus the final norm of every chunk's rows when each
		// wants them all (the last row's head fuses its norm into the lm_head: qmv_norm).
		final := 0
		if c.each {
			final = c.want
		}
		if got, want := dev.kernels["rms_norm"], 3*2*e.sizes.layers+final; got != want {
			t.Errorf("each %v: rms_norm ran %d times, want %d", c.each, got, want)
		}
	}
}
