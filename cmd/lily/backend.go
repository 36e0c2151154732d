package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/ref"
)

// loaded is an open checkpoint and a backend over it.
type loaded struct {
	dir     string
	ck      *checkpoint.Checkpoint
	backend engine.Backend
	close   func() error
}

// openBackend finds the checkpoint (dir, or the Hugging Face cache when dir is empty), maps it,
// and builds the named backend over it (see buildBackend).
func openBackend(dir, backend, device string, ctxSize int) (*loaded, error) {
	dir, err := checkpoint.Locate(dir)
	if err != nil {
		return nil, err
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	b, err := buildBackend(ck, backend, device, ctxSize)
	if err != nil {
		ck.Close()
		return nil, err
	}
	closeAll := ck.Close
	if c, ok := b.(io.Closer); ok {
		closeAll = func() error { return errors.Join(c.Close(), ck.Close()) }
	}
	return &loaded{dir: dir, ck: ck, backend: b, close: closeAll}, nil
}

// buildBackend makes "ref" (the oracle) or "fast" over an open checkpoint. The fast backend runs on
// device "cpu" (the fast/cpu kernels), "metal" (the GPU, darwin/arm64) or "metal-emu" (the Metal
// engine on the CPU emulator: slow, for checking kernels anywhere); "" picks metal when a GPU is
// there and cpu otherwise. ctxSize bounds a session's length (0: the model's maximum). A backend
// that holds a device implements io.Closer.
func buildBackend(ck *checkpoint.Checkpoint, backend, device string, ctxSize int) (engine.Backend, error) {
	switch backend {
	case "ref":
		if device != "" && device != "cpu" {
			return nil, fmt.Errorf("backend ref runs on the cpu only (got --device %s)", device)
		}
		m, err := ref.New(ck.Weights)
		if err != nil {
			return nil, err
		}
		return ref.NewBackend(m), nil
	case "fast":
		switch device {
		case "":
			if b, err := metal.OpenBackend(ck.Weights, "metal", ctxSize); err == nil {
				return b, nil
			}
			return fast.New(ck.Weights, cpu.New(cpu.NewPool(0)), fast.Options{MaxContext: ctxSize})
		case "cpu":
			return fast.New(ck.Weights, cpu.New(cpu.NewPool(0)), fast.Options{MaxContext: ctxSize})
		case "metal", "metal-emu":
			return metal.OpenBackend(ck.Weights, device, ctxSize)
		}
		return nil, fmt.Errorf("unknown --device %q (want cpu, metal or metal-emu)", device)
	}
	return nil, fmt.Errorf("unknown backend %q (want ref or fast)", backend)
}
