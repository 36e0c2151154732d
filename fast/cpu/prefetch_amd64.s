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

// func readSumAsm(p unsafe.Pointer, lines int) uint64
// The wrapping sum of lines ≥ 1 64-byte lines at p as 64-bit lanes folded to one word, each line
// prefetched into L2 vnniPrefetchL2 (8 KiB) ahead first, as the VNNI mat-vecs do: the bandwidth
// roofline's streaming read (MeasureReadBandwidth). p may be read past its end only by the
// prefetches, which never fault.
TEXT ·readSumAsm(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	CMPQ CX, $2
	JLT tail
pairs:
	PREFETCHT1 8192(AX)
	PREFETCHT1 8256(AX)
	VPADDQ (AX), Z0, Z0
	VPADDQ 64(AX), Z1, Z1
	ADDQ $128, AX
	SUBQ $2, CX
	CMPQ CX, $2
	JGE pairs
tail:
	TESTQ CX, CX
	JEQ fold
	VPADDQ (AX), Z0, Z0
fold:
	VPADDQ Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET
