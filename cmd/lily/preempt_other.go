//go:build !(goexperiment.simd && (linux || darwin))

package main

// withoutAsyncPreemption is needed only in GOEXPERIMENT=simd builds (see preempt_simd.go).
func withoutAsyncPreemption() {}
