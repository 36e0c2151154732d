//go:build darwin

package main

import "syscall"

// macOSVersion is the OS's product version (kern.osproductversion).
func macOSVersion() (string, error) { return syscall.Sysctl("kern.osproductversion") }

// wiredLimitMB is iogpu.wired_limit_mb: the GPU's wired-memory limit (0 means the OS default).
func wiredLimitMB() (uint32, error) { return syscall.SysctlUint32("iogpu.wired_limit_mb") }
