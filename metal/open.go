package metal

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// OpenBackend opens the device named by device and prepares w on it: "metal" is the GPU (darwin
// only; an error elsewhere or without a Metal device), "metal-emu" the CPU emulator of the same
// kernels (needs g++; slow, for checking plans). maxCtx is as for NewEngine. Closing the returned
// backend (it implements io.Closer) releases the engine and the device.
func OpenBackend(w *checkpoint.Weights, device string, maxCtx int) (engine.Backend, error) {
	var dev Device
	var err error
	switch device {
	case "metal":
		dev, err = NewMetalDevice()
	case "metal-emu":
		dev, err = NewEmuDevice()
	default:
		return nil, fmt.Errorf("metal: unknown device %q (want metal or metal-emu)", device)
	}
	if err != nil {
		return nil, err
	}
	e, err := NewEngine(w, dev, maxCtx)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	return &ownedEngine{Engine: e}, nil
}

// ownedEngine is an Engine that owns its device.
type ownedEngine struct{ *Engine }

// Close releases the engine's weights and closes the device.
func (o *ownedEngine) Close() error { return errors.Join(o.Engine.Close(), o.dev.Close()) }
