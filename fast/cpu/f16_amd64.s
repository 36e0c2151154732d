//go:build goexperiment.simd && amd64

#include "textflag.h"

// func f16ToF32Asm(dst *float32, src *uint16, n int)
//
// dst[i] = float32(src[i]) for i < n, n a positive multiple of 16: VCVTPH2PS, 16 values a step.
TEXT ·f16ToF32Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
loop:
	VCVTPH2PS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// func f32ToF16Asm(dst *uint16, src *float32, n int)
//
// dst[i] = fp16(src[i]) for i < n, n a positive multiple of 16: VCVTPS2PH with rounding control 0
// (round to nearest even, exceptions suppressed), 16 values a step.
TEXT ·f32ToF16Asm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
loop:
	VMOVUPS (SI), Z0
	VCVTPS2PH $0, Z0, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// func f16ToF32F16C(dst *float32, src *uint16, n int)
//
// dst[i] = float32(src[i]) for i < n, n a positive multiple of 8: the F16C form of VCVTPH2PS
// (256-bit, VEX), 8 values a step, for CPUs without AVX-512.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
loop8:
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop8
	VZEROUPPER
	RET

// func hasF16C() bool
//
// CPUID leaf 1, ECX bit 29: the CPU has the F16C half-precision conversions.
TEXT ·hasF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET
