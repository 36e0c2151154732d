//go:build goexperiment.simd && amd64

package cpu

// xinuse returns the CPU's XINUSE bitmap (XGETBV with ECX=1) and whether the CPU reports it. Tests
// use it to check that every kernel returns with clean upper vector state (see simd_amd64.go).
func xinuse() (bits uint32, ok bool)
