//go:build goexperiment.simd && amd64

#include "textflag.h"

// Loops of independent 512-bit instructions for BenchmarkIssueRate: how many of each a core
// issues per cycle, which bounds the integer prefill GEMM's tile (qmm_vnni_amd64.s). Each
// iteration is 8 instructions on 8 accumulators (no dependency between them within a few
// iterations); n iterations.

// func issueAddChain(n int): 8 dependent scalar adds per iteration, one per cycle: the clock.
TEXT ·issueAddChain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	XORQ AX, AX
chain:
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	DECQ CX
	JNZ chain
	RET

// func issueDPBUSD(n int): 8 VPDPBUSD zmm per iteration.
TEXT ·issueDPBUSD(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
dp:
	VPDPBUSD Z20, Z21, Z0
	VPDPBUSD Z20, Z21, Z1
	VPDPBUSD Z20, Z21, Z2
	VPDPBUSD Z20, Z21, Z3
	VPDPBUSD Z20, Z21, Z4
	VPDPBUSD Z20, Z21, Z5
	VPDPBUSD Z20, Z21, Z6
	VPDPBUSD Z20, Z21, Z7
	DECQ CX
	JNZ dp
	VZEROUPPER
	RET

// func issueFMA(n int): 8 VFMADD231PS zmm per iteration.
TEXT ·issueFMA(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
fma:
	VFMADD231PS Z20, Z21, Z0
	VFMADD231PS Z20, Z21, Z1
	VFMADD231PS Z20, Z21, Z2
	VFMADD231PS Z20, Z21, Z3
	VFMADD231PS Z20, Z21, Z4
	VFMADD231PS Z20, Z21, Z5
	VFMADD231PS Z20, Z21, Z6
	VFMADD231PS Z20, Z21, Z7
	DECQ CX
	JNZ fma
	VZEROUPPER
	RET

// func issueDPBUSDFMA(n int): 4 VPDPBUSD and 4 VFMADD231PS zmm per iteration: whether the two
// share execution ports.
TEXT ·issueDPBUSDFMA(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
mixf:
	VPDPBUSD Z20, Z21, Z0
	VFMADD231PS Z20, Z21, Z4
	VPDPBUSD Z20, Z21, Z1
	VFMADD231PS Z20, Z21, Z5
	VPDPBUSD Z20, Z21, Z2
	VFMADD231PS Z20, Z21, Z6
	VPDPBUSD Z20, Z21, Z3
	VFMADD231PS Z20, Z21, Z7
	DECQ CX
	JNZ mixf
	VZEROUPPER
	RET

// func issueDPBUSDShiftReg(n int): 4 VPDPBUSD and 4 VPSLLD by a count in a register per iteration.
TEXT ·issueDPBUSDShiftReg(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	MOVQ $8, AX
	VMOVQ AX, X29
shreg:
	VPDPBUSD Z20, Z21, Z0
	VPSLLD X29, Z8, Z8
	VPDPBUSD Z20, Z21, Z1
	VPSLLD X29, Z9, Z9
	VPDPBUSD Z20, Z21, Z2
	VPSLLD X29, Z10, Z10
	VPDPBUSD Z20, Z21, Z3
	VPSLLD X29, Z11, Z11
	DECQ CX
	JNZ shreg
	VZEROUPPER
	RET

// func issueDPBUSDShiftImm(n int): 4 VPDPBUSD and 4 VPSLLD by an immediate per iteration (the
// integer GEMM tile's form).
TEXT ·issueDPBUSDShiftImm(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
shimm:
	VPDPBUSD Z20, Z21, Z0
	VPSLLD $8, Z8, Z8
	VPDPBUSD Z20, Z21, Z1
	VPSLLD $8, Z9, Z9
	VPDPBUSD Z20, Z21, Z2
	VPSLLD $8, Z10, Z10
	VPDPBUSD Z20, Z21, Z3
	VPSLLD $8, Z11, Z11
	DECQ CX
	JNZ shimm
	VZEROUPPER
	RET
