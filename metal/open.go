// Package metal is the Metal model engine: it plans every layer of the model as kernel dispatches on
// a metal/device Device (the GPU on a Mac, or the emulator anywhere) and serves it as an
// engine.Backend.
package metal

import (
	"errors"
	"fmt"
	"io"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal/device"
)

// Options choose the device and the context a Model runs with.
type Options struct {
	// Device names the device Open opens: "metal" is the GPU (darwin only; an error elsewhere or
	// without a Metal device), "metal-emu" the CPU emulator of the same kernels (needs g++; slow, for
	// checking plans). Ignored when Dev is set.
	Device string
	// Dev, when set, is an open device to run on; the caller keeps it and closes it after the Model
	// (tests share one emulator across models).
	Dev device.Device
	// MaxContext bounds a session's length (0: the config's max_position_embeddings); each session
	// allocates its KV caches to it once.
	MaxContext int
	// Log, when set, receives the load report: the device, and the weight bytes wrapped in place vs
	// copied.
	Log io.Writer
}

// Open prepares w for the Metal plans on the device o names and returns the Model (an
// engine.Backend). Only the MLX (quantized) layout runs on Metal: every matrix must be 4- or 8-bit
// with group size 64 (ErrDenseLayout otherwise). The weights must stay valid (mapped) until Close,
// which also closes the device when Open opened it.
func Open(w *checkpoint.Weights, o Options) (engine.Backend, error) {
	if o.Dev != nil {
		m, err := newModel(w, o.Dev, o.MaxContext)
		if err != nil {
			return nil, err
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "metal: %s: %s\n", o.Dev.Name(), m.loaded)
		}
		return m, nil
	}
	var dev device.Device
	var err error
	switch o.Device {
	case "metal":
		dev, err = device.NewMetalDevice()
	case "metal-emu":
		dev, err = device.NewEmuDevice()
	default:
		return nil, fmt.Errorf("metal: unknown device %q (want metal or metal-emu)", o.Device)
	}
	if err != nil {
		return nil, err
	}
	m, err := newModel(w, dev, o.MaxContext)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	m.ownDev = true
	if o.Log != nil {
		fmt.Fprintf(o.Log, "metal: %s: %s\n", dev.Name(), m.loaded)
	}
	return m, nil
}
