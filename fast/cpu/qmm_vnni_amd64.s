//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "qmm_lanes_amd64.h"
#include "qmv_vnni_amd64.h"

// func qmm4TileVNNIAsm(out *float32, w unsafe.Pointer, rowBytes int, sc, bi unsafe.Pointer, scStride, blocks int, rec unsafe.Pointer, recStride, limbs, shift, pfW, pfSc int)
//
// A tile of the integer prefill GEMM: 2 consecutive 4-bit rows (packed w, rowBytes apart; bf16
// scales sc and biases bi, scStride bytes apart) times 4 token records (rec, recStride apart; see
// qmm_limbs.go), blocks ≥ 1 blocks of 8 groups, into out[4·r + t].
//
// Registers: Z0–Z7 the float32 accumulators of (row r, token t) = Z(4r+t); Z8–Z15 their integer
// sums of the current pair; Z20/Z21 row 0's low and high nibbles of the pair, Z22/Z23 row 1's;
// Z24/Z25 the rows' scales spread over the pair's lanes (VPERMPS by Z16–Z19 from the block's 8
// scales in Z26/Z27); Z30/Z31 the block's biases, then (once their terms are added) the limb field
// and the multiplier pattern a token's two rows share, each loaded once; Z28 the nibble mask; DX the
// prefetch address. The limb weight is the immediate shift 8 (limbShift; the shift argument's
// slot is not read, the Go wrappers check it): on Zen 4 a shift by a count in a register issues
// on the ports VPDPBUSD needs (the tile then ran at 115–119 GFLOP/s a core, 138–141 with the
// immediate; BenchmarkIssueRate shows the ports).
//
// Per block: the bias terms Σ bias·Σx (the block's biases in lanes 0–7 against its sums and 8
// zeros), and a prefetch of the same block of the row pair two pairs on (its weights, scales and
// biases): an expert that few tokens chose reads its rows from DRAM once per call, and the
// hardware prefetcher alone left the tile waiting on them. Per pair of groups: VPDPBUSD adds, per 32-bit lane, four nibble × limb products; the
// first limb's even and odd elements start each (r, t) sum, every further limb shifts it left by
// the limb weight first (Horner's rule), then the sum is converted to float32, multiplied by the
// token's multiplier pattern (its groups' limb scales) and accumulated with the row's scales.
#define SETUP \
	LEAQ (R10)(R10*2), R11 \
	MOVL $0x0F0F0F0F, DX \
	VPBROADCASTD DX, Z28 \
	MOVL $2, DX \
	VPBROADCASTD DX, Z20 \
	VMOVDQU32 pairIdx<>(SB), Z16 \
	VPADDD Z20, Z16, Z17 \
	VPADDD Z20, Z17, Z18 \
	VPADDD Z20, Z18, Z19

// DOT2(addr, n0, n1, s0, s1): one token's limb field at addr, loaded once (into Z30), into the
// sums s0 and s1 of rows 0 and 1 (n0 and n1 their nibbles of that parity).
#define DOT2(addr, n0, n1, s0, s1) \
	VMOVDQU32 addr, Z30 \
	VPDPBUSD Z30, n0, s0 \
	VPDPBUSD Z30, n1, s1

// LIMB(off): one limb (even elements at off, odd at off+64) into all 8 sums.
#define LIMB(off) \
	DOT2(off(DI), Z20, Z22, Z8, Z12) \
	DOT2(off(DI)(R10*1), Z20, Z22, Z9, Z13) \
	DOT2(off(DI)(R10*2), Z20, Z22, Z10, Z14) \
	DOT2(off(DI)(R11*1), Z20, Z22, Z11, Z15) \
	DOT2(off+64(DI), Z21, Z23, Z8, Z12) \
	DOT2(off+64(DI)(R10*1), Z21, Z23, Z9, Z13) \
	DOT2(off+64(DI)(R10*2), Z21, Z23, Z10, Z14) \
	DOT2(off+64(DI)(R11*1), Z21, Z23, Z11, Z15)

#define SHIFT8 \
	VPSLLD $8, Z8, Z8 \
	VPSLLD $8, Z9, Z9 \
	VPSLLD $8, Z10, Z10 \
	VPSLLD $8, Z11, Z11 \
	VPSLLD $8, Z12, Z12 \
	VPSLLD $8, Z13, Z13 \
	VPSLLD $8, Z14, Z14 \
	VPSLLD $8, Z15, Z15

#define CLEAR8 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15

// ACC2(addr, s0, s1, a0, a1): a0 += float(s0) · pattern · row 0's scales, a1 the same for row 1,
// the token's multiplier pattern at addr loaded once (into Z31).
#define ACC2(addr, s0, s1, a0, a1) \
	VMOVUPS addr, Z31 \
	VCVTDQ2PS s0, s0 \
	VCVTDQ2PS s1, s1 \
	VMULPS Z31, s0, s0 \
	VMULPS Z31, s1, s1 \
	VFMADD231PS Z24, s0, a0 \
	VFMADD231PS Z25, s1, a1

#define ACC8(off) \
	ACC2(off(DI), Z8, Z12, Z0, Z4) \
	ACC2(off(DI)(R10*1), Z9, Z13, Z1, Z5) \
	ACC2(off(DI)(R10*2), Z10, Z14, Z2, Z6) \
	ACC2(off(DI)(R11*1), Z11, Z15, Z3, Z7)

// NIBBLES(woff, idx): the pair's nibbles of both rows and the rows' scale patterns.
#define NIBBLES(woff, idx) \
	VPANDD woff(AX), Z28, Z20 \
	VPSRLW $4, woff(AX), Z21 \
	VPANDD Z28, Z21, Z21 \
	VPANDD woff(AX)(R12*1), Z28, Z22 \
	VPSRLW $4, woff(AX)(R12*1), Z23 \
	VPANDD Z28, Z23, Z23 \
	VPERMPS Z26, idx, Z24 \
	VPERMPS Z27, idx, Z25

// PAIR(woff, roff, idx, l2, l3): one pair of groups; l2 and l3 label the second and third limbs'
// skips.
#define PAIR(woff, roff, idx, done) \
	NIBBLES(woff, idx) \
	CLEAR8 \
	LIMB(roff) \
	CMPQ BX, $1 \
	JLE done \
	SHIFT8 \
	LIMB(roff+128) \
	CMPQ BX, $2 \
	JLE done \
	SHIFT8 \
	LIMB(roff+256) \
done: \
	ACC8(roff+384)

// LIMB2T, SHIFT4, CLEAR4, ACC4, PAIR2T: LIMB, SHIFT8, CLEAR8, ACC8 and PAIR for the first two
// tokens only (a tile of one or two tokens: the others' accumulators stay zero).
#define LIMB2T(off) \
	DOT2(off(DI), Z20, Z22, Z8, Z12) \
	DOT2(off(DI)(R10*1), Z20, Z22, Z9, Z13) \
	DOT2(off+64(DI), Z21, Z23, Z8, Z12) \
	DOT2(off+64(DI)(R10*1), Z21, Z23, Z9, Z13)

#define SHIFT4 \
	VPSLLD $8, Z8, Z8 \
	VPSLLD $8, Z9, Z9 \
	VPSLLD $8, Z12, Z12 \
	VPSLLD $8, Z13, Z13

#define CLEAR4 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13

#define ACC4(off) \
	ACC2(off(DI), Z8, Z12, Z0, Z4) \
	ACC2(off(DI)(R10*1), Z9, Z13, Z1, Z5)

#define PAIR2T(woff, roff, idx, done) \
	NIBBLES(woff, idx) \
	CLEAR4 \
	LIMB2T(roff) \
	CMPQ BX, $1 \
	JLE done \
	SHIFT4 \
	LIMB2T(roff+128) \
	CMPQ BX, $2 \
	JLE done \
	SHIFT4 \
	LIMB2T(roff+256) \
done: \
	ACC4(roff+384)

// BLOCKHEAD: a block's scales (Z26/Z27) and biases (Z30/Z31) as float32, the prefetch into L1 of
// the same block of the row pair two pairs on, and into L2 of the same block R14 bytes on (R15 on
// in the scales and biases: the row pair qmmPrefetchRows on). The far L2 prefetch keeps a tile of
// few tokens, which reads each weight for only a few products, streaming from DRAM: the L1
// prefetch alone holds one of the core's few L1 miss buffers for a whole DRAM latency.
#define BLOCKHEAD \
	VPMOVZXWD (SI), Y26 \
	VPSLLD $16, Y26, Y26 \
	VPMOVZXWD (SI)(R13*1), Y27 \
	VPSLLD $16, Y27, Y27 \
	VPMOVZXWD (R8), Y30 \
	VPSLLD $16, Y30, Y30 \
	VPMOVZXWD (R8)(R13*1), Y31 \
	VPSLLD $16, Y31, Y31 \
	PAIRPF(PREFETCHT0, (AX)(R12*4), (SI)(R13*4), (R8)(R13*4)) \
	PAIRPF(PREFETCHT1, (AX)(R14*1), (SI)(R15*1), (R8)(R15*1))

// PAIRPF(op, w, sc, bi): prefetch instruction op on a block of the row pair at w (its two rows'
// 256 bytes) and on the pair's scales at sc and biases at bi (R13 apart).
#define PAIRPF(op, w, sc, bi) \
	LEAQ w, DX \
	UNITPF(op, DX, R12) \
	LEAQ sc, DX \
	op (DX) \
	op (DX)(R13*1) \
	LEAQ bi, DX \
	op (DX) \
	op (DX)(R13*1)

// BLOCKTAIL(label): advance the cursors to the next block and loop to label.
#define BLOCKTAIL(label) \
	ADDQ $256, AX \
	ADDQ $16, SI \
	ADDQ $16, R8 \
	ADDQ $1856, DI \
	DECQ CX \
	JNZ label

// BLOCKS2T: BLOCKS for the first two tokens.
#define BLOCKS2T \
block2t: \
	BLOCKHEAD \
	VFMADD231PS 1792(DI), Z30, Z0 \
	VFMADD231PS 1792(DI)(R10*1), Z30, Z1 \
	VFMADD231PS 1792(DI), Z31, Z4 \
	VFMADD231PS 1792(DI)(R10*1), Z31, Z5 \
	PAIR2T(0, 0, Z16, t2pair0) \
	PAIR2T(64, 448, Z17, t2pair1) \
	PAIR2T(128, 896, Z18, t2pair2) \
	PAIR2T(192, 1344, Z19, t2pair3) \
	BLOCKTAIL(block2t)

// BLOCKS: the block loop over CX blocks of 8 groups, into Z0–Z7.
#define BLOCKS \
block: \
	BLOCKHEAD \
	VFMADD231PS 1792(DI), Z30, Z0 \
	VFMADD231PS 1792(DI)(R10*1), Z30, Z1 \
	VFMADD231PS 1792(DI)(R10*2), Z30, Z2 \
	VFMADD231PS 1792(DI)(R11*1), Z30, Z3 \
	VFMADD231PS 1792(DI), Z31, Z4 \
	VFMADD231PS 1792(DI)(R10*1), Z31, Z5 \
	VFMADD231PS 1792(DI)(R10*2), Z31, Z6 \
	VFMADD231PS 1792(DI)(R11*1), Z31, Z7 \
	PAIR(0, 0, Z16, pair0) \
	PAIR(64, 448, Z17, pair1) \
	PAIR(128, 896, Z18, pair2) \
	PAIR(192, 1344, Z19, pair3) \
	BLOCKTAIL(block)

// REDUCE8: Y0 = the horizontal sums of Z0–Z7 in order (Y1–Y7 and Y8 clobbered): each 512-bit
// accumulator folded to 256 bits, then a VHADDPS tree and one exchange of 128-bit halves.
#define FOLD(z, y) \
	VEXTRACTF64X4 $1, z, Y8 \
	VADDPS Y8, y, y

#define REDUCE8 \
	FOLD(Z0, Y0) \
	FOLD(Z1, Y1) \
	FOLD(Z2, Y2) \
	FOLD(Z3, Y3) \
	FOLD(Z4, Y4) \
	FOLD(Z5, Y5) \
	FOLD(Z6, Y6) \
	FOLD(Z7, Y7) \
	VHADDPS Y1, Y0, Y0 \
	VHADDPS Y3, Y2, Y2 \
	VHADDPS Y5, Y4, Y4 \
	VHADDPS Y7, Y6, Y6 \
	VHADDPS Y2, Y0, Y0 \
	VHADDPS Y6, Y4, Y4 \
	VPERM2F128 $0x20, Y4, Y0, Y1 \
	VPERM2F128 $0x31, Y4, Y0, Y2 \
	VADDPS Y2, Y1, Y0

TEXT ·qmm4TileVNNIAsm(SB), NOSPLIT, $0-104
	MOVQ pfW+88(FP), R14
	MOVQ pfSc+96(FP), R15
	MOVQ out+0(FP), R9
	MOVQ w+8(FP), AX
	MOVQ rowBytes+16(FP), R12
	MOVQ sc+24(FP), SI
	MOVQ bi+32(FP), R8
	MOVQ scStride+40(FP), R13
	MOVQ blocks+48(FP), CX
	MOVQ rec+56(FP), DI
	MOVQ recStride+64(FP), R10
	MOVQ limbs+72(FP), BX
	SETUP
	ZERO8
	BLOCKS
	REDUCE8
	VMOVUPS Y0, (R9)
	VZEROUPPER
	RET

// func qmm4RowsVNNIAsm(y *float32, w unsafe.Pointer, rowBytes int, sc, bi unsafe.Pointer, scStride, blocks int, rec unsafe.Pointer, recStride, limbs, shift, yStride, pairs, ntok, pfW, pfSc int)
//
// pairs ≥ 1 consecutive tiles of qmm4TileVNNIAsm down the rows (rows 2p and 2p+1 of w, sc and bi
// for p < pairs) against the same 4 token records, of which the first ntok (1–4) are stored
// straight into Y: y[t·yStride + 4·r] (yStride in bytes) for row r of the pair and token t < ntok,
// y advancing 8 bytes a pair. With ntok ≤ 2 the tile multiplies only the first two tokens (the
// padding records are not read). The arguments' slots for w, sc, bi, y and pairs advance as the
// loop's cursors.
TEXT ·qmm4RowsVNNIAsm(SB), NOSPLIT, $0-128
	MOVQ pfW+112(FP), R14
	MOVQ pfSc+120(FP), R15
	MOVQ rowBytes+16(FP), R12
	MOVQ scStride+40(FP), R13
	MOVQ recStride+64(FP), R10
	MOVQ limbs+72(FP), BX
	SETUP
pair:
	MOVQ w+8(FP), AX
	MOVQ sc+24(FP), SI
	MOVQ bi+32(FP), R8
	MOVQ blocks+48(FP), CX
	MOVQ rec+56(FP), DI
	ZERO8
	CMPQ ntok+104(FP), $2
	JLE two
	BLOCKS
	JMP reduce
two:
	BLOCKS2T
reduce:
	REDUCE8
	VPMOVZXBD VNNIperm2<>(SB), Y1
	VPERMPS Y0, Y1, Y0
	MOVQ y+0(FP), R9
	MOVQ yStride+88(FP), DX
	VMOVQ X0, (R9)
	CMPQ ntok+104(FP), $1
	JLE stored
	VMOVHPS X0, (R9)(DX*1)
	CMPQ ntok+104(FP), $2
	JLE stored
	VEXTRACTF128 $1, Y0, X1
	LEAQ (R9)(DX*2), CX
	VMOVQ X1, (CX)
	CMPQ ntok+104(FP), $3
	JLE stored
	VMOVHPS X1, (CX)(DX*1)
stored:
	ADDQ $8, R9
	MOVQ R9, y+0(FP)
	MOVQ R12, DX
	SHLQ $1, DX
	ADDQ DX, w+8(FP)
	MOVQ R13, DX
	SHLQ $1, DX
	ADDQ DX, sc+24(FP)
	ADDQ DX, bi+32(FP)
	DECQ pairs+96(FP)
	JNZ pair
	VZEROUPPER
	RET

// VNNIperm2: VPERMPS indices (bytes, widened) from [r0t0..r0t3, r1t0..r1t3] to row pairs per token.
DATA VNNIperm2<>+0(SB)/8, $0x0703060205010400
GLOBL VNNIperm2<>(SB), RODATA|NOPTR, $8
