//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "qmv_vnni_amd64.h"

// evenOdd8: VPERMT2B indices that gather, from a pair of groups' two 64-byte lines of 8-bit
// weights (table 1 the first group's, table 2 the second's), the even elements of each group
// (bytes 0–31 the first group's, 32–63 the second's; +1 for the odd elements): the order of
// Vec.l8's a_even, b_even, c_even blocks (and of the _odd ones).
DATA evenOdd8<>+0(SB)/8, $0x0e0c0a0806040200
DATA evenOdd8<>+8(SB)/8, $0x1e1c1a1816141210
DATA evenOdd8<>+16(SB)/8, $0x2e2c2a2826242220
DATA evenOdd8<>+24(SB)/8, $0x3e3c3a3836343230
DATA evenOdd8<>+32(SB)/8, $0x4e4c4a4846444240
DATA evenOdd8<>+40(SB)/8, $0x5e5c5a5856545250
DATA evenOdd8<>+48(SB)/8, $0x6e6c6a6866646260
DATA evenOdd8<>+56(SB)/8, $0x7e7c7a7876747270
GLOBL evenOdd8<>(SB), RODATA|NOPTR, $64

// func qmv8Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf, pfs, pfb int)
//
// 4n consecutive 8-bit rows (w; bf16 scales sc and biases bi; blocks ≥ 1 blocks of 8 groups, 512
// bytes, per row) against x as three int8 limbs (xl: Vec.l8, pairs of groups in the 4-bit
// kernel's even/odd layout), the limbs' scale per group (dl: Vec.dl) and the group sums (sum:
// Vec.sum): y[o] = Σ_g scale·dl·Σ_{i∈g} q_i·L_i + bias·Σx, four rows a pass, as qmv4Rows4VNNIAsm.
//
// Per pair of groups and row, two VPERMT2B split the pair's 128 weight bytes into the groups' even
// elements and odd ones (the order of the limbs); VPDPBUSD adds, per 32-bit lane, four unsigned
// weight × signed limb products; the a, b and c limbs go to three accumulators. Horner's rule
// joins a and b in integers (at most 8·255·128·257 < 2^31 a lane), then in float32 the third,
// 256·(256·a + b) + c, which is Σ q·L (8-bit weights would overflow the 4-bit kernel's one-integer
// Horner), multiplied by the pair's two multipliers (VPERMPS: lanes 0–7 the first group, 8–15 the
// second) into the row's accumulator. The prefetches walk the pass's bytes in address order as
// qmv4Rows4VNNIAsm's: into L2 pf bytes on (R11) and into L1 one pass on (R12), 2,048 bytes a block
// (two lines a pair and row); each pass also prefetches into L2 scales and biases pfs and pfs + pfb
// bytes past its own scales, as there.
//
// Registers: rows (AX), (AX)(R15*1), (AX)(R15*2), (AX)(R13*1) with R15 the row bytes and R13 three
// times that; the block's scales walk the rows in R9 (stride BX), the biases R8 bytes past them;
// dl in R10, the group sums DX bytes past it. Per row r: Z0+r the accumulator, Y4+r the bias
// terms, Y8+r the block's multipliers. Z12–Z17 the pair's limbs, Z18 the even indices and Z19 the
// odd ones, Z20–Z23 the pair multiplier indices, Z24 256.0, Z25–Z30 the temporaries, Y31
// QMV_MULT's (qmv_vnni_amd64.h).
TEXT ·qmv8Rows4VNNIAsm(SB), NOSPLIT, $0-96
	CMPQ n+8(FP), $0
	JEQ done8
	QMV_SETUP(9)
	VMOVDQU64 evenOdd8<>(SB), Z18
	MOVL $0x01010101, CX
	VPBROADCASTD CX, Z19
	VPADDB Z19, Z18, Z19
	MOVL $2, CX
	VPBROADCASTD CX, Z24
	VMOVDQU32 pairIdx<>(SB), Z20
	VPADDD Z24, Z20, Z21
	VPADDD Z24, Z21, Z22
	VPADDD Z24, Z22, Z23
	MOVL $0x43800000, CX // 256.0
	VPBROADCASTD CX, Z24

pass8:
	// Scales and biases: a KiB of 8-bit weights, 16 groups, has 32 bytes of each.
	QMV_PASS_START(sbpf8)

block8:
	QMV_MULTS(Y31)

#define ROW8(WADDR, WADDR2, PF, PF2, NEAR, NEAR2, ACC, MUL, IDX) \
	PREFETCHT1 PF \
	PREFETCHT1 PF2 \
	PREFETCHT0 NEAR \
	PREFETCHT0 NEAR2 \
	VMOVDQU64 WADDR, Z25 \
	VMOVDQU64 WADDR, Z26 \
	VPERMT2B WADDR2, Z18, Z25 \
	VPERMT2B WADDR2, Z19, Z26 \
	VPXORD Z27, Z27, Z27 \
	VPXORD Z28, Z28, Z28 \
	VPXORD Z29, Z29, Z29 \
	VPDPBUSD Z12, Z25, Z27 \
	VPDPBUSD Z13, Z26, Z27 \
	VPDPBUSD Z14, Z25, Z28 \
	VPDPBUSD Z15, Z26, Z28 \
	VPDPBUSD Z16, Z25, Z29 \
	VPDPBUSD Z17, Z26, Z29 \
	VPSLLD $8, Z27, Z27 \
	VPADDD Z28, Z27, Z27 \
	VCVTDQ2PS Z27, Z27 \
	VCVTDQ2PS Z29, Z29 \
	VFMADD213PS Z29, Z24, Z27 \
	VPERMPS MUL, IDX, Z30 \
	VFMADD231PS Z30, Z27, ACC

#define PAIR8(W, X, IDX) \
	QMV_LIMBS(X) \
	ROW8(W(AX), (W+64)(AX), (4*W)(R11), (4*W+64)(R11), (4*W)(R12), (4*W+64)(R12), Z0, Z8, IDX) \
	ROW8(W(AX)(R15*1), (W+64)(AX)(R15*1), (4*W+128)(R11), (4*W+192)(R11), (4*W+128)(R12), (4*W+192)(R12), Z1, Z9, IDX) \
	ROW8(W(AX)(R15*2), (W+64)(AX)(R15*2), (4*W+256)(R11), (4*W+320)(R11), (4*W+256)(R12), (4*W+320)(R12), Z2, Z10, IDX) \
	ROW8(W(AX)(R13*1), (W+64)(AX)(R13*1), (4*W+384)(R11), (4*W+448)(R11), (4*W+384)(R12), (4*W+448)(R12), Z3, Z11, IDX)

	PAIR8(0, 0, Z20)
	PAIR8(128, 384, Z21)
	PAIR8(256, 768, Z22)
	PAIR8(384, 1152, Z23)

	ADDQ $512, AX
	ADDQ $2048, R11
	ADDQ $2048, R12
	ADDQ $16, SI
	ADDQ $1536, DI
	ADDQ $32, R10
	DECQ CX
	JNZ block8

	QMV_PASS_END(pass8)

done8:
	VZEROUPPER
	RET
