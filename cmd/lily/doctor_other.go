//go:build !darwin

package main

import "fmt"

// macOSVersion fails off macOS.
func macOSVersion() (string, error) { return "", fmt.Errorf("not macOS (%s)", osName()) }

// wiredLimitMB fails off macOS, which alone has iogpu.wired_limit_mb.
func wiredLimitMB() (uint32, error) {
	return 0, fmt.Errorf("iogpu.wired_limit_mb is a macOS setting (this is %s)", osName())
}
