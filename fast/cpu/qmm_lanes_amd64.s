//go:build goexperiment.simd && amd64

#include "textflag.h"

// func qmmLanesAsm(y *float32, yStride int, w unsafe.Pointer, unitW, halfW int, sc, bi unsafe.Pointer, unitSc, halfSc, steps int, rec unsafe.Pointer, recStride, limbs, units, ntok, rows int)
//
// The integer prefill GEMM with a group in every 32-bit lane (qmm_lanes.go): units ≥ 1 units of
// 16 groups of 4-bit weights against 4 token records (rec, recStride bytes apart; see
// laneRecords), of which the first ntok (1–4) are stored into Y (yStride bytes a token).
// A unit is one row (rows = 1: 16 groups a step, steps = In/1024; the step's second 8 groups
// halfW = 256 bytes on) or two rows (rows = 2: 8 groups each, one step; the second row halfW =
// rowBytes on); it stores rows floats a token and advances w by unitW, sc and bi (bf16 scales and
// biases, halfSc bytes between the halves) by unitSc.
//
// Per step the 512 packed bytes of the unit's 16 groups (8 loads) are transposed in registers so
// that dword k of every group lands in lane s of register k: two 4×4 dword transposes inside
// 128-bit lanes (VPUNPCK*), then 128-bit lanes gathered across the two halves (VSHUFI64X2), which
// puts group s = 8·(c/2) + 2·i + c%2 in lane 4c + i. Each register splits into its even and odd
// nibbles (Z8–Z23, reg(k, p) below). Then VPDPBUSD accumulates, per token, every limb's 64
// products a group in one lane (Horner's rule over the limbs: shift by 8, the limb weight), and one
// convert, one multiply by the token's limb scales and two FMAs (the row scales; the biases
// against the token's group sums) add the step to the token's float accumulator (Z0–Z3). The
// shuffles, shifts, converts and masks issue beside VPDPBUSD on Zen 4 at a fraction of a slot
// each (BenchmarkIssueRate); the multiply and FMAs take one each, 3 per 32 VPDPBUSD where the
// 2-group tile (qmm_vnni_amd64.s) takes 18.
//
// Registers: Z0–Z3 float accumulators, Z4–Z7 integer sums (token t in Z(4+t)), Z8–Z23 the
// nibbles, Z24–Z27 transpose temporaries then scales (Z25), biases (Z26), Z28 the nibble mask,
// Z29/Z30 records, Z31 a temporary. AX the unit's weights at the step, BX halfW, SI/R8 scales and
// biases at the step, R13 halfSc, DI the records at the step, R10/R11 recStride and 3·recStride,
// CX steps left, DX/R12 temporaries, R9 y.

#define LANEORDER laneOrder<>(SB)
#include "qmm_lanes_amd64.h"

// LIMB: one limb (the 16 registers from R12) of the 4 tokens into Z4–Z7.
#define LIMB \
	VMOVDQU64 0(R12), Z29 \
	VPDPBUSD Z29, Z8, Z4 \
	VMOVDQU64 0(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z8, Z5 \
	VMOVDQU64 0(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z8, Z6 \
	VMOVDQU64 0(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z8, Z7 \
	VMOVDQU64 64(R12), Z29 \
	VPDPBUSD Z29, Z12, Z4 \
	VMOVDQU64 64(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z12, Z5 \
	VMOVDQU64 64(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z12, Z6 \
	VMOVDQU64 64(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z12, Z7 \
	VMOVDQU64 128(R12), Z29 \
	VPDPBUSD Z29, Z9, Z4 \
	VMOVDQU64 128(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z9, Z5 \
	VMOVDQU64 128(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z9, Z6 \
	VMOVDQU64 128(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z9, Z7 \
	VMOVDQU64 192(R12), Z29 \
	VPDPBUSD Z29, Z13, Z4 \
	VMOVDQU64 192(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z13, Z5 \
	VMOVDQU64 192(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z13, Z6 \
	VMOVDQU64 192(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z13, Z7 \
	VMOVDQU64 256(R12), Z29 \
	VPDPBUSD Z29, Z10, Z4 \
	VMOVDQU64 256(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z10, Z5 \
	VMOVDQU64 256(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z10, Z6 \
	VMOVDQU64 256(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z10, Z7 \
	VMOVDQU64 320(R12), Z29 \
	VPDPBUSD Z29, Z14, Z4 \
	VMOVDQU64 320(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z14, Z5 \
	VMOVDQU64 320(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z14, Z6 \
	VMOVDQU64 320(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z14, Z7 \
	VMOVDQU64 384(R12), Z29 \
	VPDPBUSD Z29, Z11, Z4 \
	VMOVDQU64 384(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z11, Z5 \
	VMOVDQU64 384(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z11, Z6 \
	VMOVDQU64 384(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z11, Z7 \
	VMOVDQU64 448(R12), Z29 \
	VPDPBUSD Z29, Z15, Z4 \
	VMOVDQU64 448(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z15, Z5 \
	VMOVDQU64 448(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z15, Z6 \
	VMOVDQU64 448(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z15, Z7 \
	VMOVDQU64 512(R12), Z29 \
	VPDPBUSD Z29, Z20, Z4 \
	VMOVDQU64 512(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z20, Z5 \
	VMOVDQU64 512(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z20, Z6 \
	VMOVDQU64 512(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z20, Z7 \
	VMOVDQU64 576(R12), Z29 \
	VPDPBUSD Z29, Z16, Z4 \
	VMOVDQU64 576(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z16, Z5 \
	VMOVDQU64 576(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z16, Z6 \
	VMOVDQU64 576(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z16, Z7 \
	VMOVDQU64 640(R12), Z29 \
	VPDPBUSD Z29, Z21, Z4 \
	VMOVDQU64 640(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z21, Z5 \
	VMOVDQU64 640(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z21, Z6 \
	VMOVDQU64 640(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z21, Z7 \
	VMOVDQU64 704(R12), Z29 \
	VPDPBUSD Z29, Z17, Z4 \
	VMOVDQU64 704(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z17, Z5 \
	VMOVDQU64 704(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z17, Z6 \
	VMOVDQU64 704(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z17, Z7 \
	VMOVDQU64 768(R12), Z29 \
	VPDPBUSD Z29, Z22, Z4 \
	VMOVDQU64 768(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z22, Z5 \
	VMOVDQU64 768(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z22, Z6 \
	VMOVDQU64 768(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z22, Z7 \
	VMOVDQU64 832(R12), Z29 \
	VPDPBUSD Z29, Z18, Z4 \
	VMOVDQU64 832(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z18, Z5 \
	VMOVDQU64 832(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z18, Z6 \
	VMOVDQU64 832(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z18, Z7 \
	VMOVDQU64 896(R12), Z29 \
	VPDPBUSD Z29, Z23, Z4 \
	VMOVDQU64 896(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z23, Z5 \
	VMOVDQU64 896(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z23, Z6 \
	VMOVDQU64 896(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z23, Z7 \
	VMOVDQU64 960(R12), Z29 \
	VPDPBUSD Z29, Z19, Z4 \
	VMOVDQU64 960(R12)(R10*1), Z30 \
	VPDPBUSD Z30, Z19, Z5 \
	VMOVDQU64 960(R12)(R10*2), Z29 \
	VPDPBUSD Z29, Z19, Z6 \
	VMOVDQU64 960(R12)(R11*1), Z30 \
	VPDPBUSD Z30, Z19, Z7

TEXT ·qmmLanesAsm(SB), NOSPLIT, $0-128
	MOVQ halfW+32(FP), BX
	MOVQ halfSc+64(FP), R13
	MOVQ recStride+88(FP), R10
	LEAQ (R10)(R10*2), R11
	MOVL $0x0F0F0F0F, DX
	VPBROADCASTD DX, Z28
unit:
	MOVQ w+16(FP), AX
	MOVQ sc+40(FP), SI
	MOVQ bi+48(FP), R8
	MOVQ rec+80(FP), DI
	MOVQ steps+72(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
step:
	// Prefetch this step of the unit two units on (an expert few tokens chose is read from DRAM).
	MOVQ unitW+24(FP), DX
	LEAQ (AX)(DX*2), DX
	UNITPF(PREFETCHT0, DX, BX)
	TRANSPOSE
	SCALES
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ DI, R12
	MOVQ limbs+96(FP), DX
limb:
	LIMB
	DECQ DX
	JZ tail
	VPSLLD $8, Z4, Z4
	VPSLLD $8, Z5, Z5
	VPSLLD $8, Z6, Z6
	VPSLLD $8, Z7, Z7
	ADDQ $1024, R12
	JMP limb
tail:
	LANETAIL((DI), Z4, Z0, Z25, Z26)
	LANETAIL((DI)(R10*1), Z5, Z1, Z25, Z26)
	LANETAIL((DI)(R10*2), Z6, Z2, Z25, Z26)
	LANETAIL((DI)(R11*1), Z7, Z3, Z25, Z26)
	ADDQ $512, AX
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $2176, DI
	DECQ CX
	JNZ step

	// Reduce: per token the sums of lanes 0–7 (the unit's first half) and 8–15 (its second).
	VSHUFI64X2 $0xB1, Z0, Z0, Z8
	VADDPS Z8, Z0, Z0
	VSHUFI64X2 $0xB1, Z1, Z1, Z8
	VADDPS Z8, Z1, Z1
	VSHUFI64X2 $0xB1, Z2, Z2, Z8
	VADDPS Z8, Z2, Z2
	VSHUFI64X2 $0xB1, Z3, Z3, Z8
	VADDPS Z8, Z3, Z3
	VSHUFI64X2 $0x88, Z1, Z0, Z8
	VSHUFI64X2 $0x88, Z3, Z2, Z9
	VSHUFPS $0x88, Z9, Z8, Z10
	VSHUFPS $0xDD, Z9, Z8, Z11
	VADDPS Z11, Z10, Z10
	VSHUFPS $0xB1, Z10, Z10, Z11
	VADDPS Z11, Z10, Z10
	VPMOVZXBD laneReduce<>(SB), Z12
	VPERMPS Z10, Z12, Z10
	// Y10 lanes 2t, 2t+1: token t's halves.
	MOVQ y+0(FP), R9
	MOVQ yStride+8(FP), DX
	LEAQ (R9)(DX*2), R12
	CMPQ rows+120(FP), $2
	JEQ two
	VSHUFPS $0xB1, Y10, Y10, Y11
	VADDPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X11
	VMOVSS X10, (R9)
	CMPQ ntok+112(FP), $1
	JLE stored
	VEXTRACTPS $2, X10, (R9)(DX*1)
	CMPQ ntok+112(FP), $2
	JLE stored
	VMOVSS X11, (R12)
	CMPQ ntok+112(FP), $3
	JLE stored
	VEXTRACTPS $2, X11, (R12)(DX*1)
	JMP stored
two:
	VEXTRACTF128 $1, Y10, X11
	VMOVQ X10, (R9)
	CMPQ ntok+112(FP), $1
	JLE stored
	VMOVHPS X10, (R9)(DX*1)
	CMPQ ntok+112(FP), $2
	JLE stored
	VMOVQ X11, (R12)
	CMPQ ntok+112(FP), $3
	JLE stored
	VMOVHPS X11, (R12)(DX*1)
stored:
	MOVQ rows+120(FP), DX
	LEAQ (R9)(DX*4), R9
	MOVQ R9, y+0(FP)
	MOVQ unitW+24(FP), DX
	ADDQ DX, w+16(FP)
	MOVQ unitSc+56(FP), DX
	ADDQ DX, sc+40(FP)
	ADDQ DX, bi+48(FP)
	DECQ units+104(FP)
	JNZ unit
	VZEROUPPER
	RET


// func laneRepackAsm(dst, w unsafe.Pointer, unitW, halfW int, sc, bi unsafe.Pointer, unitSc, halfSc, steps, units int)
//
// The weights of units ≥ 1 units (as qmmLanesAsm reads them: w, sc and bi advancing by unitW and
// unitSc a unit; steps ≥ 1 steps a unit) written out in lane order for qmmLanesQuadAsm: per unit
// and step (laneWBytes apart, units outermost) the 16 nibble registers (2k + p at 64·(2k + p)),
// then the 16 scales (1024) and biases (1088) as float32.
TEXT ·laneRepackAsm(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), DI
	MOVQ halfW+24(FP), BX
	MOVQ halfSc+56(FP), R13
	MOVL $0x0F0F0F0F, DX
	VPBROADCASTD DX, Z28
runit:
	MOVQ w+8(FP), AX
	MOVQ sc+32(FP), SI
	MOVQ bi+40(FP), R8
	MOVQ steps+64(FP), CX
rstep:
	// Prefetch this step of the unit 8 units on into L2: the weights of an expert few tokens chose
	// come from DRAM, and this is their first read (into L1, or 16 units on, measured slower).
	MOVQ unitW+16(FP), DX
	IMULQ $8, DX
	ADDQ AX, DX
	UNITPF(PREFETCHT1, DX, BX)
	MOVQ unitSc+48(FP), DX
	IMULQ $8, DX
	LEAQ (SI)(DX*1), R9
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(R13*1)
	LEAQ (R8)(DX*1), R9
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(R13*1)
	TRANSPOSE
	VMOVDQU64 Z8, 0(DI)
	VMOVDQU64 Z12, 64(DI)
	VMOVDQU64 Z9, 128(DI)
	VMOVDQU64 Z13, 192(DI)
	VMOVDQU64 Z10, 256(DI)
	VMOVDQU64 Z14, 320(DI)
	VMOVDQU64 Z11, 384(DI)
	VMOVDQU64 Z15, 448(DI)
	VMOVDQU64 Z20, 512(DI)
	VMOVDQU64 Z16, 576(DI)
	VMOVDQU64 Z21, 640(DI)
	VMOVDQU64 Z17, 704(DI)
	VMOVDQU64 Z22, 768(DI)
	VMOVDQU64 Z18, 832(DI)
	VMOVDQU64 Z23, 896(DI)
	VMOVDQU64 Z19, 960(DI)
	SCALES
	VMOVUPS Z25, 1024(DI)
	VMOVUPS Z26, 1088(DI)
	ADDQ $1152, DI
	ADDQ $512, AX
	ADDQ $32, SI
	ADDQ $32, R8
	DECQ CX
	JNZ rstep
	MOVQ unitW+16(FP), DX
	ADDQ DX, w+8(FP)
	MOVQ unitSc+48(FP), DX
	ADDQ DX, sc+32(FP)
	ADDQ DX, bi+40(FP)
	DECQ units+72(FP)
	JNZ runit
	VZEROUPPER
	RET

// func laneTransposeAsm(dst unsafe.Pointer, dstStride int, src unsafe.Pointer, srcStride, half int, sums *int32)
//
// The kernel's transpose for the token records: 16 groups' 32-byte digit arrays (groups 2j and
// 2j+1 in the 64 bytes at src + j·srcStride for j < 4, at src + half + (j−4)·srcStride for j ≥ 4)
// into 8 registers of lane order, register k (dword k of every group) stored at dst + k·dstStride;
// and each lane's sum of its 32 digits (VPDPBUSD by bytes of 1) into sums[0:16].
TEXT ·laneTransposeAsm(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), AX
	MOVQ srcStride+24(FP), CX
	MOVQ half+32(FP), BX
	LEAQ (CX)(CX*2), R8
	VMOVDQU64 (AX), Z8
	VMOVDQU64 (AX)(CX*1), Z9
	VMOVDQU64 (AX)(CX*2), Z10
	VMOVDQU64 (AX)(R8*1), Z11
	UNPACK4(Z24, Z25, Z26, Z27)
	ADDQ BX, AX
	VMOVDQU64 (AX), Z8
	VMOVDQU64 (AX)(CX*1), Z9
	VMOVDQU64 (AX)(CX*2), Z10
	VMOVDQU64 (AX)(R8*1), Z11
	UNPACK4(Z16, Z17, Z18, Z19)
	LEAQ (DX)(DX*2), R8
	LEAQ (DI)(DX*4), R9
	VSHUFI64X2 $0x88, Z16, Z24, Z8
	VSHUFI64X2 $0xDD, Z16, Z24, Z9
	VMOVDQU64 Z8, (DI)
	VMOVDQU64 Z9, (R9)
	VSHUFI64X2 $0x88, Z17, Z25, Z8
	VSHUFI64X2 $0xDD, Z17, Z25, Z9
	VMOVDQU64 Z8, (DI)(DX*1)
	VMOVDQU64 Z9, (R9)(DX*1)
	VSHUFI64X2 $0x88, Z18, Z26, Z8
	VSHUFI64X2 $0xDD, Z18, Z26, Z9
	VMOVDQU64 Z8, (DI)(DX*2)
	VMOVDQU64 Z9, (R9)(DX*2)
	VSHUFI64X2 $0x88, Z19, Z27, Z8
	VSHUFI64X2 $0xDD, Z19, Z27, Z9
	VMOVDQU64 Z8, (DI)(R8*1)
	VMOVDQU64 Z9, (R9)(R8*1)
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z10
	VPXORD Z11, Z11, Z11
	VMOVDQU64 (DI), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (DI)(DX*1), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (DI)(DX*2), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (DI)(R8*1), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (R9), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (R9)(DX*1), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (R9)(DX*2), Z8
	VPDPBUSD Z8, Z10, Z11
	VMOVDQU64 (R9)(R8*1), Z8
	VPDPBUSD Z8, Z10, Z11
	MOVQ sums+40(FP), AX
	VMOVDQU32 Z11, (AX)
	VZEROUPPER
	RET

// laneOrder: the group in each lane (bytes, widened): lane 4c + i holds group 8·(c/2) + 2·i + c%2.
DATA laneOrder<>+0(SB)/8, $0x0705030106040200
DATA laneOrder<>+8(SB)/8, $0x0F0D0B090E0C0A08
GLOBL laneOrder<>(SB), RODATA|NOPTR, $16

// laneReduce: VPERMPS indices (bytes, widened) gathering the reduction's 8 sums (lanes 0, 4, 8,
// 12 then 2, 6, 10, 14) into lanes 0–7.
DATA laneReduce<>+0(SB)/8, $0x0E0A06020C080400
DATA laneReduce<>+8(SB)/8, $0
GLOBL laneReduce<>(SB), RODATA|NOPTR, $16
