//go:build goexperiment.simd && (linux || darwin)

package main

import (
	"os"
	"syscall"
)

// withoutAsyncPreemption re-executes lily with GODEBUG=asyncpreemptoff=1 unless GODEBUG already
// says something about asyncpreemptoff (which it then respects). Why: in a GOEXPERIMENT=simd build
// on amd64, the runtime's asynchronous preemption handler restores every YMM/ZMM register and
// returns without VZEROUPPER, leaving the interrupted thread's upper vector state dirty. On the
// Xeons lily is measured on, every legacy-SSE instruction of plain Go float code (math.Exp, scalar
// loops: the convolution, the chunked delta rule, attention, sampling) then costs about 100 times
// more until the next VZEROUPPER — it halved prefill speed. The setting can only be made before the
// runtime starts, hence the exec. lily's loops all make calls, so cooperative preemption serves.
// If the exec fails, lily runs on with preemption as it is.
func withoutAsyncPreemption() {
	env, ok := asyncPreemptOffEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env) // returns only on failure
}
