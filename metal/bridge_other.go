//go:build !darwin

package metal

import (
	"errors"
	"runtime"
)

// ErrNoMetal is returned where no Metal device can exist.
var ErrNoMetal = errors.New("metal: no Metal device on " + runtime.GOOS + "/" + runtime.GOARCH +
	" (the GPU device needs macOS on Apple silicon; use metal-emu to run the same kernels on the CPU)")

// NewMetalDevice fails off darwin: there is no Metal here.
func NewMetalDevice() (Device, error) { return nil, ErrNoMetal }
