package metal

import (
	"fmt"

	"github.com/lily-engine/lily/metal/device"
)

// Device returns the device the engine runs on.
func (e *Model) Device() device.Device { return e.dev }

// Weights says how the quantized weights reached the device (bytes wrapped in place vs copied).
func (e *Model) Weights() WeightBytes { return e.loaded }

// String is the load log line: bytes wrapped in place and bytes copied.
func (b WeightBytes) String() string {
	return fmt.Sprintf("weights: %d bytes wrapped in place, %d bytes copied (%d shards, %d with data at an unaligned offset, bound with byte shifts)",
		b.Wrapped, b.Copied, b.Shards, b.Misaligned)
}

// KVElementBytes is the bytes of one cached K or V element: the cache holds fp16.
func (e *Model) KVElementBytes() int { return 2 }
