//go:build goexperiment.simd && amd64

#include "textflag.h"

// pairIdx: for pair k of a block of four (8 groups), VPERMPS indices that spread multiplier 2k
// over lanes 0–7 and 2k+1 over lanes 8–15.
DATA pairIdx<>+0(SB)/8, $0
DATA pairIdx<>+8(SB)/8, $0
DATA pairIdx<>+16(SB)/8, $0
DATA pairIdx<>+24(SB)/8, $0
DATA pairIdx<>+32(SB)/8, $0x0000000100000001
DATA pairIdx<>+40(SB)/8, $0x0000000100000001
DATA pairIdx<>+48(SB)/8, $0x0000000100000001
DATA pairIdx<>+56(SB)/8, $0x0000000100000001
GLOBL pairIdx<>(SB), RODATA|NOPTR, $64

// func qmv4RowsVNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer)
//
// n consecutive 4-bit rows (packed w, bf16 scales sc and biases bi; blocks ≥ 1 blocks of 8 groups
// per row) against x as three int8 limbs (xl: Vec.l8), the limbs' scale per group (dl: Vec.dl,
// d/65536) and the group sums (sum: Vec.sum): y[o] = Σ_g scale·dl·Σ_{i∈g} q_i·L_i + bias·Σx.
//
// Per block the 8 scales become float32 multipliers scale·dl (Y12) and the 8 bias terms bias·Σx are
// added to the row's Y14. Per pair of groups (four per block, written out) the 64 packed bytes split
// into low nibbles (Z4: the even elements) and high nibbles (Z5: the odd ones); VPDPBUSD adds, per
// 32-bit lane, four unsigned nibble × signed limb products; the a, b and c limbs go to three
// accumulators (Z6, Z10, Z11) that Horner's rule joins into Σ q·(65536·a + 256·b + c) per lane (at
// most 8·15·128·65793 < 2^31), converted to float32 and multiplied by the pair's two multipliers
// (VPERMPS: lanes 0–7 the first group, 8–15 the second) into the row's Z0. The row's end reduces
// Z0 + Y14 to y[o]. Each pair also prefetches the packed line 2 KiB ahead (a matrix's rows are
// contiguous).
TEXT ·qmv4RowsVNNIAsm(SB), NOSPLIT, $0-72
	MOVQ y+0(FP), R9
	MOVQ n+8(FP), R11
	MOVQ w+16(FP), AX
	MOVQ sc+24(FP), SI
	MOVQ bi+32(FP), R8
	MOVQ blocks+40(FP), R12
	MOVQ xl+48(FP), R13
	MOVQ dl+56(FP), R14
	MOVQ sum+64(FP), DX
	TESTQ R11, R11
	JEQ done
	MOVL $0x0F0F0F0F, CX
	VPBROADCASTD CX, Z9
	MOVL $2, CX
	VPBROADCASTD CX, Z20
	VMOVDQU32 pairIdx<>(SB), Z16
	VPADDD Z20, Z16, Z17
	VPADDD Z20, Z17, Z18
	VPADDD Z20, Z18, Z19

row:
	VPXORD Z0, Z0, Z0
	VPXORD Z14, Z14, Z14
	MOVQ R12, CX
	MOVQ R13, DI
	MOVQ R14, R10
	MOVQ DX, BX

block:
	VPMOVZXWD (SI), Y12
	VPSLLD $16, Y12, Y12
	VMULPS (R10), Y12, Y12
	VPMOVZXWD (R8), Y13
	VPSLLD $16, Y13, Y13
	VFMADD231PS (BX), Y13, Y14

#define PAIR(W, X, IDX) \
	PREFETCHT0 (2048+W)(AX) \
	VPANDD W(AX), Z9, Z4 \
	VPSRLW $4, W(AX), Z5 \
	VPANDD Z9, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPDPBUSD (X)(DI), Z4, Z6 \
	VPDPBUSD (X+128)(DI), Z4, Z10 \
	VPDPBUSD (X+256)(DI), Z4, Z11 \
	VPDPBUSD (X+64)(DI), Z5, Z6 \
	VPDPBUSD (X+192)(DI), Z5, Z10 \
	VPDPBUSD (X+320)(DI), Z5, Z11 \
	VPSLLD $8, Z6, Z6 \
	VPADDD Z10, Z6, Z6 \
	VPSLLD $8, Z6, Z6 \
	VPADDD Z11, Z6, Z6 \
	VCVTDQ2PS Z6, Z6 \
	VPERMPS Z12, IDX, Z7 \
	VFMADD231PS Z7, Z6, Z0

	PAIR(0, 0, Z16)
	PAIR(64, 384, Z17)
	PAIR(128, 768, Z18)
	PAIR(192, 1152, Z19)

	ADDQ $256, AX
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $1536, DI
	ADDQ $32, R10
	ADDQ $32, BX
	DECQ CX
	JNZ block

	VADDPS Z14, Z0, Z0
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
