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
	"github.com/spf13/pflag"
)

// loaded is an open checkpoint and a backend over it.
type loaded struct {
	dir     string
	ck      *checkpoint.Checkpoint
	backend engine.Backend
	close   func() error
}

// backendSpec is which backend to build and how it runs (see buildBackend).
type backendSpec struct {
	name    string // "ref" or "fast"
	device  string // fast: "", "cpu", "metal" or "metal-emu"
	ctxSize int    // a session's length limit (0: the model's maximum)
	int16   bool   // fast on the cpu: int16 activations in every 4-bit decode mat-vec
}

// addFastFlags registers the fast backend's flags, shared by every command that builds one.
func addFastFlags(fs *pflag.FlagSet, s *backendSpec) {
	fs.StringVar(&s.device, "device", "", "device of the fast backend: cpu, metal or metal-emu (default: metal when a GPU is present, else cpu)")
	fs.BoolVar(&s.int16, "int16-activations", false, "fast on the cpu: every 4-bit decode mat-vec reads int16 activations (faster without AVX-512 VNNI, slower with it; measured fidelity cost in README)")
}

// openBackend finds the checkpoint (dir, or the Hugging Face cache when dir is empty), maps it,
// and builds the backend s names over it (see buildBackend).
func openBackend(dir string, s backendSpec) (*loaded, error) {
	dir, err := checkpoint.Locate(dir)
	if err != nil {
		return nil, err
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	b, err := buildBackend(ck, s)
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

// check rejects a spec that names no backend, a device its backend lacks, or
// --int16-activations where it means nothing. It reads nothing, so a command can check its flags
// before it opens a checkpoint.
func (s backendSpec) check() error {
	if s.int16 && (s.name != "fast" || (s.device != "" && s.device != "cpu")) {
		return fmt.Errorf("--int16-activations applies to the fast backend on the cpu only")
	}
	switch s.name {
	case "ref":
		if s.device != "" && s.device != "cpu" {
			return fmt.Errorf("backend ref runs on the cpu only (got --device %s)", s.device)
		}
	case "fast":
		if s.device != "" && s.device != "cpu" && s.device != "metal" && s.device != "metal-emu" {
			return fmt.Errorf("unknown --device %q (want cpu, metal or metal-emu)", s.device)
		}
	default:
		return fmt.Errorf("unknown backend %q (want ref or fast)", s.name)
	}
	return nil
}

// buildBackend makes "ref" (the oracle) or "fast" over an open checkpoint. The fast backend runs on
// device "cpu" (the fast/cpu kernels), "metal" (the GPU, darwin/arm64) or "metal-emu" (the Metal
// engine on the CPU emulator: slow, for checking kernels anywhere); "" picks metal when a GPU is
// there and cpu otherwise. A backend that holds a device implements io.Closer.
func buildBackend(ck *checkpoint.Checkpoint, s backendSpec) (engine.Backend, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	device, ctxSize := s.device, s.ctxSize
	cpuOpts := fast.Options{MaxContext: ctxSize, Int16Activations: s.int16}
	if s.name == "ref" {
		m, err := ref.New(ck.Weights)
		if err != nil {
			return nil, err
		}
		return ref.NewBackend(m), nil
	}
	switch device {
	case "":
		if b, err := metal.OpenBackend(ck.Weights, "metal", ctxSize); err == nil {
			return b, nil
		}
		return newFastCPU(ck, cpuOpts)
	case "cpu":
		return newFastCPU(ck, cpuOpts)
	}
	return metal.OpenBackend(ck.Weights, device, ctxSize) // "metal" or "metal-emu", as check allows
}

// fastCPU is the fast backend on the fast/cpu kernels; Close stops its worker pool (bench opens
// backends one after another in one process).
type fastCPU struct {
	*fast.Model
	pool *cpu.Pool
}

func (f fastCPU) Close() error {
	f.pool.Close()
	return nil
}

func newFastCPU(ck *checkpoint.Checkpoint, opt fast.Options) (engine.Backend, error) {
	p := cpu.NewPool(0)
	m, err := fast.New(ck.Weights, cpu.New(p), opt)
	if err != nil {
		p.Close()
		return nil, err
	}
	return fastCPU{m, p}, nil
}
