package metal

import "github.com/lily-engine/lily/metal/device"

// Device returns the device the engine runs on.
func (e *Model) Device() device.Device { return e.dev }
