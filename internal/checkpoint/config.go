package checkpoint

import (
	"github.com/lily-engine/lily/internal/hfconfig"
	"github.com/lily-engine/lily/internal/tensortable"
)

// Config is the validated text configuration of the model (hfconfig.Config).
type Config = hfconfig.Config

// Quantization is the config's "quantization" block (hfconfig.Quantization).
type Quantization = hfconfig.Quantization

// QuantParams are the bits and group size of one module (hfconfig.QuantParams).
type QuantParams = hfconfig.QuantParams

// Dims are the model's sizes (model.md §1.2), the one struct every engine, the performance model
// and the memory budget read them from; Config.Dims derives them.
type Dims = tensortable.Dims
