//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "qmv_vnni_amd64.h"

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
// Z0 + Y14 to y[o]. Each pair also prefetches the packed line 8 KiB ahead into L2 and 2 KiB ahead
// into L1 (a matrix's rows are contiguous; see vnniPrefetchL2).
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
	PREFETCHT1 (8192+W)(AX) \
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

// func qmv4Rows4VNNIAsm(y *float32, n int, w, sc, bi unsafe.Pointer, blocks int, xl, dl, sum unsafe.Pointer, pf, pfs, pfb int)
//
// qmv4RowsVNNIAsm four rows at a time (n: the number of 4-row passes, 4n rows), for CPUs with
// AVX-512 GFNI too. Each row gets the same integer sums and the same float32 operations in the same
// order as in qmv4RowsVNNIAsm, so y is bit for bit the same; what changes is the work per pair of
// groups and row: the six limb blocks are loaded once (Z12–Z17) for the four rows; the packed bytes
// are loaded once, the high nibbles taken by one VGF2P8AFFINEQB (Z31: the bit matrix of a byte's
// shift right by 4) and the low ones by one VPANDD; the limb sums run in one accumulator, Horner's
// rule interleaved with the dot products (a's two VPDPBUSDs, a shift by 8, b's, a shift, c's: the
// same exact integer without the two adds). The prefetches run ahead through the rows' bytes in
// address order rather than the loads' four-row order: into L2 pf bytes on (R11, a whole number of
// passes: vnniPrefetch) and into L1 one pass on (R12), each 1,024 bytes a block, so that a block's
// four pairs of rows prefetch the 16 consecutive lines its place in the pass covers, the line of
// pair p and row r at 256·p + 64·r. Both cover each pass's bytes exactly once, as before; the one
// ascending stream instead of four interleaved ones 1 row apart streamed 5–10% faster from DRAM
// while the host read ~35 GB/s (BenchmarkMatVecStream, alternated with the four-row order). Each
// pass also prefetches into L2 a line of scales and one of biases a block, pfs bytes past its own
// scales and pfb past those (those left to the hardware prefetcher had cost 1–3% more). pf, pfs and
// pfb are offsets, not distances: passTail aims a call's last passes at the next matrix.
//
// Registers: rows (AX), (AX)(R15*1), (AX)(R15*2), (AX)(R13*1) with R15 the row bytes and R13 three
// times that (R11 and R12 pf bytes and one pass past the pass's start, 1,024 more each block); the
// block's scales walk the rows in R9 (stride BX), the biases R8 bytes past them; dl
// in R10, the group sums DX bytes past it. Per row r: Z0+r the accumulator, Y4+r the bias terms,
// Y8+r the block's multipliers; the two temporary sets (Z23–Z26, Z27–Z30) alternate between rows.
TEXT ·qmv4Rows4VNNIAsm(SB), NOSPLIT, $0-96
	CMPQ n+8(FP), $0
	JEQ done4
	QMV_SETUP(8)
	MOVL $0x0F0F0F0F, CX
	VPBROADCASTD CX, Z18
	MOVL $2, CX
	VPBROADCASTD CX, Z31
	VMOVDQU32 pairIdx<>(SB), Z19
	VPADDD Z31, Z19, Z20
	VPADDD Z31, Z20, Z21
	VPADDD Z31, Z21, Z22
	MOVQ $0x1020408000000000, CX
	VPBROADCASTQ CX, Z31

pass4:
	QMV_PASS_START(sbpf4)

block4:
	QMV_MULTS(Y23)

#define ROWPAIR(WADDR, PFADDR, NEAR, ACC, MUL, IDX, T0, T1, T2, T3) \
	PREFETCHT1 PFADDR \
	PREFETCHT0 NEAR \
	VMOVDQU64 WADDR, T0 \
	VGF2P8AFFINEQB $0, Z31, T0, T1 \
	VPANDD T0, Z18, T0 \
	VPXORD T2, T2, T2 \
	VPDPBUSD Z12, T0, T2 \
	VPDPBUSD Z13, T1, T2 \
	VPSLLD $8, T2, T2 \
	VPDPBUSD Z14, T0, T2 \
	VPDPBUSD Z15, T1, T2 \
	VPSLLD $8, T2, T2 \
	VPDPBUSD Z16, T0, T2 \
	VPDPBUSD Z17, T1, T2 \
	VCVTDQ2PS T2, T2 \
	VPERMPS MUL, IDX, T3 \
	VFMADD231PS T3, T2, ACC

#define PAIR4(W, X, IDX) \
	QMV_LIMBS(X) \
	ROWPAIR(W(AX), (4*W)(R11), (4*W)(R12), Z0, Z8, IDX, Z23, Z24, Z25, Z26) \
	ROWPAIR(W(AX)(R15*1), (4*W+64)(R11), (4*W+64)(R12), Z1, Z9, IDX, Z27, Z28, Z29, Z30) \
	ROWPAIR(W(AX)(R15*2), (4*W+128)(R11), (4*W+128)(R12), Z2, Z10, IDX, Z23, Z24, Z25, Z26) \
	ROWPAIR(W(AX)(R13*1), (4*W+192)(R11), (4*W+192)(R12), Z3, Z11, IDX, Z27, Z28, Z29, Z30)

	PAIR4(0, 0, Z19)
	PAIR4(64, 384, Z20)
	PAIR4(128, 768, Z21)
	PAIR4(192, 1152, Z22)

	ADDQ $256, AX
	ADDQ $1024, R11
	ADDQ $1024, R12
	ADDQ $16, SI
	ADDQ $1536, DI
	ADDQ $32, R10
	DECQ CX
	JNZ block4

	QMV_PASS_END(pass4)

done4:
	VZEROUPPER
	RET
