//go:build goexperiment.simd && amd64

#include "textflag.h"

// func prefetch(p unsafe.Pointer, lines int)
// PREFETCHT0 for lines 64-byte cache lines from p (lines ≥ 1). VZEROUPPER first: the callers are
// vector kernels with dirty upper ZMM state, and the return into Go code would otherwise run its
// legacy-SSE register setup under the AVX-SSE transition penalty (measured: the prefetching
// mat-vec 30% slower than none without it). Go's ABI treats every vector register as clobbered by
// a call, so clearing them here loses nothing the caller still needs.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	VZEROUPPER
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ loop
	RET
