package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/ref"
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
	kvF32   bool   // fast on the cpu: the KV cache in float32 (lily diff: the kernels alone)
	// log receives the startup note on which device the default (no --device) chose and why; nil
	// drops it.
	log io.Writer
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
	closeAll := func() error { return errors.Join(b.Close(), ck.Close()) }
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
// there and cpu otherwise. The caller closes the backend.
func buildBackend(ck *checkpoint.Checkpoint, s backendSpec) (engine.Backend, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	w := ck.Weights
	if s.name == "ref" {
		return ref.Open(w, ref.Options{MaxContext: s.ctxSize})
	}
	cpuOpts := fast.Options{MaxContext: s.ctxSize, Int16Activations: s.int16, KVCacheF32: s.kvF32}
	switch s.device {
	case "":
		return defaultDevice(
			func() (engine.Backend, error) {
				return metal.Open(w, metal.Options{Device: "metal", MaxContext: s.ctxSize, Log: s.log})
			},
			func() (engine.Backend, error) { return fast.Open(w, cpuOpts) }, s.log)
	case "cpu":
		return fast.Open(w, cpuOpts)
	}
	return metal.Open(w, metal.Options{Device: s.device, MaxContext: s.ctxSize, Log: s.log}) // "metal" or "metal-emu", as check allows
}

// defaultDevice opens the fast backend where no --device was given: on the Metal GPU when there is
// one, on the CPU only when there is none (device.ErrNoMetal). Any other Metal failure (a kernel
// that does not compile, a model that does not fit) is an error, not a silent CPU fallback. The
// choice and its reason go to log.
func defaultDevice(openMetal, openCPU func() (engine.Backend, error), log io.Writer) (engine.Backend, error) {
	if log == nil {
		log = io.Discard
	}
	b, err := openMetal()
	switch {
	case err == nil:
		fmt.Fprintln(log, "lily: device metal (the default: a Metal GPU is present; --device cpu runs on the CPU)")
		return b, nil
	case errors.Is(err, device.ErrNoMetal):
		fmt.Fprintf(log, "lily: device cpu (the default: %v)\n", err)
		return openCPU()
	}
	return nil, fmt.Errorf("the default device, metal, failed (run `lily doctor --device metal` to see why; --device cpu runs on the CPU): %w", err)
}
