//go:build goexperiment.simd && amd64

#include "textflag.h"

// wordIdx (VPERMW indices, odd words only; the even words are zeroed by the mask 0xAAAAAAAA):
// dword lanes 0–7 take word 0 of the source into their high half, lanes 8–15 word 1. Applied to
// a broadcast pair of bf16 values this gives the pair as float32, each over its group's 8 lanes.
DATA wordIdx<>+0(SB)/8, $0
DATA wordIdx<>+8(SB)/8, $0
DATA wordIdx<>+16(SB)/8, $0
DATA wordIdx<>+24(SB)/8, $0
DATA wordIdx<>+32(SB)/8, $0x0001000000010000
DATA wordIdx<>+40(SB)/8, $0x0001000000010000
DATA wordIdx<>+48(SB)/8, $0x0001000000010000
DATA wordIdx<>+56(SB)/8, $0x0001000000010000
GLOBL wordIdx<>(SB), RODATA|NOPTR, $64

// func qmv4RowsVNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, pairs int, xl, aux unsafe.Pointer)
//
// n consecutive 4-bit rows (w, their bf16 scales sc and biases bi, pairs ≥ 1 pairs of groups per
// row) against x as three int8 limbs (xl: Vec.l8) and its per-pair aux (Vec.aux: d/65536 and
// Σx/8, each over its group's 8 lanes); y[o] gets Σ_g scale·(d/65536)·Σ_{i∈g} q_i·L_i + bias·Σx.
//
// Per pair of groups the 64 packed bytes split into low nibbles (Z4: the even elements) and high
// nibbles (Z5: the odd ones). VPDPBUSD adds, per 32-bit lane, four unsigned nibble × signed limb
// products; the a, b and c limbs go to three accumulators (Z6, Z10, Z11) that Horner's rule joins
// into Σ q·(65536·a + 256·b + c) per lane (at most 8·15·128·65793 < 2^31), converted to float32,
// scaled, and added with the bias term to the row's sum Z0, which is reduced to y[o] at the row's
// end. Each pair also prefetches the packed line 2 KiB ahead (the rows of a matrix are contiguous).
TEXT ·qmv4RowsVNNIAsm(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), R9
	MOVQ n+8(FP), R11
	MOVQ w+16(FP), AX
	MOVQ sc+24(FP), SI
	MOVQ bi+32(FP), R8
	MOVQ pairs+40(FP), R12
	MOVQ xl+48(FP), R13
	MOVQ aux+56(FP), R14
	TESTQ R11, R11
	JEQ done
	MOVL $0x0F0F0F0F, DX
	VPBROADCASTD DX, Z9
	VMOVDQU32 wordIdx<>(SB), Z8
	MOVL $0xAAAAAAAA, DX
	KMOVD DX, K1

row:
	VPXORD Z0, Z0, Z0
	MOVQ R12, CX
	MOVQ R13, DI
	MOVQ R14, R10

pair:
	PREFETCHT0 2048(AX)
	VPANDD (AX), Z9, Z4
	VPSRLW $4, (AX), Z5
	VPANDD Z9, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPDPBUSD (DI), Z4, Z6
	VPDPBUSD 128(DI), Z4, Z10
	VPDPBUSD 256(DI), Z4, Z11
	VPDPBUSD 64(DI), Z5, Z6
	VPDPBUSD 192(DI), Z5, Z10
	VPDPBUSD 320(DI), Z5, Z11
	VPSLLD $8, Z6, Z6
	VPADDD Z10, Z6, Z6
	VPSLLD $8, Z6, Z6
	VPADDD Z11, Z6, Z6
	VCVTDQ2PS Z6, Z6
	VMULPS (R10), Z6, Z6
	VPBROADCASTD (SI), Z12
	VPERMW.Z Z12, Z8, K1, Z12
	VFMADD231PS Z12, Z6, Z0
	VPBROADCASTD (R8), Z13
	VPERMW.Z Z13, Z8, K1, Z13
	VFMADD231PS 64(R10), Z13, Z0
	ADDQ $64, AX
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $384, DI
	ADDQ $128, R10
	DECQ CX
	JNZ pair

	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ R11
	JNZ row

done:
	VZEROUPPER
	RET
