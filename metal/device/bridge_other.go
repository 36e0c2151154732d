//go:build !darwin

package device

import (
	"fmt"
	"runtime"
)

// NewMetalDevice fails off darwin: there is no Metal here.
func NewMetalDevice() (Device, error) {
	return nil, fmt.Errorf("%w: this is %s/%s; the GPU device needs macOS (use metal-emu to run the same kernels on the CPU)",
		ErrNoMetal, runtime.GOOS, runtime.GOARCH)
}
