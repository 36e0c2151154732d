package main

import (
	"fmt"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
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
	return &loaded{dir: dir, ck: ck, backend: b, close: ck.Close}, nil
}

// buildBackend makes "ref" (the oracle) or "fast" (device "cpu" or "" for the CPU plans) over an
// open checkpoint. ctxSize bounds a session's length (0: the model's maximum).
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
		if device != "" && device != "cpu" {
			return nil, fmt.Errorf("--device %s is not available in this build", device)
		}
		return fast.New(ck.Weights, cpu.New(cpu.NewPool(0)), ctxSize)
	}
	return nil, fmt.Errorf("unknown backend %q (want ref or fast)", backend)
}
