// The VNNI kernels' shared tables and macros: the four-row mat-vecs' (qmv4Rows4VNNIAsm in
// qmv_vnni_amd64.s, qmv8Rows4VNNIAsm in qmv8_vnni_amd64.s) pass scaffolding, and pairIdx and ZERO8,
// which the 2-row integer GEMM tile (qmm_vnni_amd64.s) reads too. The mat-vecs take (y, n, w, sc,
// bi, blocks, xl, dl, sum, pf, pfs, pfb) and keep: rows at (AX), (AX)(R15*1), (AX)(R15*2),
// (AX)(R13*1) (R15 the row bytes, R13 three times that); scales at SI, the biases R8 bytes past
// them, BX the scale bytes of a row; dl in R14, the group sums DX bytes past it; per row r the
// accumulator Z0+r, the bias terms Y4+r and the block's multipliers Y8+r.

// pairIdx (a copy in each file that includes this): for pair k of a block of four (8 groups),
// VPERMPS indices that spread multiplier 2k over lanes 0–7 and 2k+1 over lanes 8–15.
DATA pairIdx<>+0(SB)/8, $0
DATA pairIdx<>+8(SB)/8, $0
DATA pairIdx<>+16(SB)/8, $0
DATA pairIdx<>+24(SB)/8, $0
DATA pairIdx<>+32(SB)/8, $0x0000000100000001
DATA pairIdx<>+40(SB)/8, $0x0000000100000001
DATA pairIdx<>+48(SB)/8, $0x0000000100000001
DATA pairIdx<>+56(SB)/8, $0x0000000100000001
GLOBL pairIdx<>(SB), RODATA|NOPTR, $64

// ZERO8: Z0–Z7 cleared.
#define ZERO8 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7

// QMV_SETUP(SHIFT): the registers from the arguments, the row bytes blocks << SHIFT (8 groups of
// 4-bit weights: 256 bytes, SHIFT 8; of 8-bit ones 512, SHIFT 9).
#define QMV_SETUP(SHIFT) \
	MOVQ w+16(FP), AX \
	MOVQ sc+24(FP), SI \
	MOVQ bi+32(FP), R8 \
	SUBQ SI, R8 \
	MOVQ blocks+40(FP), R12 \
	MOVQ R12, BX \
	SHLQ $4, BX \
	MOVQ R12, R15 \
	SHLQ $SHIFT, R15 \
	LEAQ (R15)(R15*2), R13 \
	MOVQ dl+56(FP), R14 \
	MOVQ sum+64(FP), DX \
	SUBQ R14, DX

// QMV_PASS_START(LOOP): a pass's accumulators cleared; into L2 a line of scales and one of biases
// per block, the scales pfs bytes past the pass's own and the biases pfb bytes past those (LOOP:
// the loop's label); then CX the blocks, DI the limbs, R10 dl, R11 the weights pf bytes on (the far
// prefetch) and R12 one pass on (the near one). pf, pfs and pfb are signed: a call's last passes
// may prefetch another matrix (passTail).
#define QMV_PASS_START(LOOP) \
	ZERO8 \
	MOVQ pfs+80(FP), R9 \
	ADDQ SI, R9 \
	MOVQ pfb+88(FP), R11 \
	MOVQ blocks+40(FP), CX \
LOOP: \
	PREFETCHT1 (R9) \
	PREFETCHT1 (R9)(R11*1) \
	ADDQ $64, R9 \
	DECQ CX \
	JNZ LOOP \
	MOVQ blocks+40(FP), CX \
	MOVQ xl+48(FP), DI \
	MOVQ R14, R10 \
	MOVQ AX, R11 \
	ADDQ pf+72(FP), R11 \
	LEAQ (AX)(R15*4), R12

// QMV_MULT(MUL, BIAS, TMP): the next row's 8 multipliers scale·dl of the block into MUL and its 8
// bias terms bias·Σx added to BIAS (R9 walks the rows' scales).
#define QMV_MULT(MUL, BIAS, TMP) \
	VPMOVZXWD (R9), MUL \
	VPSLLD $16, MUL, MUL \
	VMULPS (R10), MUL, MUL \
	VPMOVZXWD (R9)(R8*1), TMP \
	VPSLLD $16, TMP, TMP \
	VFMADD231PS (R10)(DX*1), TMP, BIAS \
	ADDQ BX, R9

// QMV_MULTS(TMP): the block's multipliers and bias terms of the four rows (QMV_MULT).
#define QMV_MULTS(TMP) \
	MOVQ SI, R9 \
	QMV_MULT(Y8, Y4, TMP) \
	QMV_MULT(Y9, Y5, TMP) \
	QMV_MULT(Y10, Y6, TMP) \
	QMV_MULT(Y11, Y7, TMP)

// QMV_LIMBS(X): a pair of groups' six limb blocks (a, b, c, even and odd elements) at X(DI) into
// Z12–Z17, loaded once for the four rows.
#define QMV_LIMBS(X) \
	VMOVDQU64 (X)(DI), Z12 \
	VMOVDQU64 (X+64)(DI), Z13 \
	VMOVDQU64 (X+128)(DI), Z14 \
	VMOVDQU64 (X+192)(DI), Z15 \
	VMOVDQU64 (X+256)(DI), Z16 \
	VMOVDQU64 (X+320)(DI), Z17

// QMV_REDUCE(ACC, BIAS, YR, XR, OFF): ACC plus its bias terms summed to one float32 at OFF(R9).
#define QMV_REDUCE(ACC, BIAS, YR, XR, OFF) \
	VADDPS BIAS, ACC, ACC \
	VEXTRACTF64X4 $1, ACC, Y12 \
	VADDPS Y12, YR, YR \
	VEXTRACTF128 $1, YR, X12 \
	VADDPS X12, XR, XR \
	VMOVHLPS XR, XR, X12 \
	VADDPS X12, XR, XR \
	VMOVSHDUP XR, X12 \
	VADDSS X12, XR, XR \
	VMOVSS XR, OFF(R9)

// QMV_PASS_END(LOOP): the four rows' results stored, y, the rows and the scales moved on a pass;
// LOOP again while passes remain.
#define QMV_PASS_END(LOOP) \
	MOVQ y+0(FP), R9 \
	QMV_REDUCE(Z0, Z4, Y0, X0, 0) \
	QMV_REDUCE(Z1, Z5, Y1, X1, 4) \
	QMV_REDUCE(Z2, Z6, Y2, X2, 8) \
	QMV_REDUCE(Z3, Z7, Y3, X3, 12) \
	ADDQ $16, R9 \
	MOVQ R9, y+0(FP) \
	ADDQ R13, AX \
	LEAQ (SI)(BX*2), SI \
	ADDQ BX, SI \
	DECQ n+8(FP) \
	JNZ LOOP
