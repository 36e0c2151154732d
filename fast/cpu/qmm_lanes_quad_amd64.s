//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "qmm_lanes_amd64.h"

// func qmmLanesQuadAsm(y *float32, yStride int, wt unsafe.Pointer, unitStride, steps int, rec unsafe.Pointer, recStride, limbs, quads, ntok, rows int)
//
// The lane-group GEMM (qmm_lanes.go) over weights already in lane order (laneRepackAsm: unit u at
// wt + u·unitStride, its steps laneWBytes apart): quads ≥ 1 runs of 4 units against 3 token records
// (rec, recStride apart), of which the first ntok (1–3) are stored into Y (yStride bytes a token;
// rows = 1 or 2 floats a unit, as qmmLanesAsm).
//
// Per step and limb, each of the 16 registers loads the 4 units' nibbles and the 3 tokens' digits
// once and issues 12 VPDPBUSD (0.58 loads a VPDPBUSD: qmmLanesAsm, one unit a tile, loads a
// token's digits for every one); the tail (convert, limb scales, row scales, biases against the
// group sums) once per unit, token and step.
//
// Registers: Z(3u + t) the float accumulator of unit u and token t, Z(12 + 3u + t) its integer
// sum; Z24–Z27 the units' nibbles, Z28–Z30 the tokens' digits; AX the quad's weights at the step,
// BX unitStride, R13 3·unitStride; DI the records at the step, R12 at the limb, R10 recStride;
// CX steps left, DX limbs left; R9 y.

// QW(off): register off/64 of one limb for the 4 units: their nibbles (AX) into Z24–Z27.
#define QW(off) \
	VMOVDQU64 off(AX), Z24 \
	VMOVDQU64 off(AX)(BX*1), Z25 \
	VMOVDQU64 off(AX)(BX*2), Z26 \
	VMOVDQU64 off(AX)(R13*1), Z27

// QT(addr, z, s0, s1, s2, s3): one token's digits of that register (at addr, into z) times the 4
// units' nibbles, into the token's sums s0–s3 (units 0–3).
#define QT(addr, z, s0, s1, s2, s3) \
	VMOVDQU64 addr, z \
	VPDPBUSD z, Z24, s0 \
	VPDPBUSD z, Z25, s1 \
	VPDPBUSD z, Z26, s2 \
	VPDPBUSD z, Z27, s3

// QREG3(off), QREG2(off), QREG1(off): register off/64 of one limb for the 4 units and the tile's
// 3 tokens (R12, R10 apart), or only its first 2 or 1 (a last tile of 2 or 1: the other sums stay
// zero), into Z12–Z23.
#define QREG3(off) \
	QW(off) \
	QT(off(R12), Z28, Z12, Z15, Z18, Z21) \
	QT(off(R12)(R10*1), Z29, Z13, Z16, Z19, Z22) \
	QT(off(R12)(R10*2), Z30, Z14, Z17, Z20, Z23)

#define QREG2(off) \
	QW(off) \
	QT(off(R12), Z28, Z12, Z15, Z18, Z21) \
	QT(off(R12)(R10*1), Z29, Z13, Z16, Z19, Z22)

#define QREG1(off) \
	QW(off) \
	QT(off(R12), Z28, Z12, Z15, Z18, Z21)

// QLIMB(Q): the limb's 16 registers, each by Q (QREG3, QREG2 or QREG1).
#define QLIMB(Q) \
	Q(0) \
	Q(64) \
	Q(128) \
	Q(192) \
	Q(256) \
	Q(320) \
	Q(384) \
	Q(448) \
	Q(512) \
	Q(576) \
	Q(640) \
	Q(704) \
	Q(768) \
	Q(832) \
	Q(896) \
	Q(960)

// QTAIL1(sc, bi, s0, f0), QTAIL2(…, s0, s1, f0, f1), QTAIL3(…, s0, s1, s2, f0, f1, f2): the step's
// tail for one unit (its row scales at sc, biases at bi) and the tile's first 1, 2 or 3 tokens
// (records R10 apart): sums s0… into f0… (LANETAIL). A last tile of 1 or 2 tokens runs only its
// own (the absent tokens' sums and accumulators are never read).
#define QTAIL1(sc, bi, s0, f0) \
	VMOVUPS bi, Z31 \
	LANETAIL((DI), s0, f0, sc, Z31)

#define QTAIL2(sc, bi, s0, s1, f0, f1) \
	QTAIL1(sc, bi, s0, f0) \
	LANETAIL((DI)(R10*1), s1, f1, sc, Z31)

#define QTAIL3(sc, bi, s0, s1, s2, f0, f1, f2) \
	QTAIL2(sc, bi, s0, s1, f0, f1) \
	LANETAIL((DI)(R10*2), s2, f2, sc, Z31)

// QREDUCE(a0, a1, a2, a3, dst, two, done): one token's accumulators of units 0–3 reduced to the
// sums of their lanes 0–7 and 8–15 and stored at dst: with two rows a unit all 8 (Y27: unit u's
// at 2u, 2u + 1), with one their pairwise sums (X27: unit u's at u). The 128-bit lanes of a unit
// pair are added (l0 + l1, l2 + l3), then each lane's 4 floats as (e0 + e1) + (e2 + e3), gathered
// by quadReduce (Z29); the one-row sums then compacted by quadCompact (Z30). The same additions in
// the same order as qmmLanesAsm's reduction: the results are bit for bit its own.
#define QREDUCE(a0, a1, a2, a3, dst, two, done) \
	VSHUFI64X2 $0x88, a1, a0, Z24 \
	VSHUFI64X2 $0xDD, a1, a0, Z25 \
	VADDPS Z25, Z24, Z24 \
	VSHUFI64X2 $0x88, a3, a2, Z26 \
	VSHUFI64X2 $0xDD, a3, a2, Z27 \
	VADDPS Z27, Z26, Z26 \
	VSHUFPS $0x88, Z26, Z24, Z27 \
	VSHUFPS $0xDD, Z26, Z24, Z28 \
	VADDPS Z28, Z27, Z27 \
	VSHUFPS $0xB1, Z27, Z27, Z28 \
	VADDPS Z28, Z27, Z27 \
	VPERMPS Z27, Z29, Z27 \
	CMPQ rows+80(FP), $2 \
	JEQ two \
	VSHUFPS $0xB1, Y27, Y27, Y26 \
	VADDPS Y26, Y27, Y27 \
	VPERMPS Z27, Z30, Z27 \
	VMOVUPS X27, dst \
	JMP done \
two: \
	VMOVUPS Y27, dst \
done:

TEXT ·qmmLanesQuadAsm(SB), NOSPLIT, $0-88
	MOVQ unitStride+24(FP), BX
	LEAQ (BX)(BX*2), R13
	MOVQ recStride+48(FP), R10
quad:
	MOVQ wt+16(FP), AX
	MOVQ rec+40(FP), DI
	MOVQ steps+32(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
qstep:
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ DI, R12
	MOVQ limbs+56(FP), DX
qlimb:
	CMPQ ntok+72(FP), $2
	JLT qlimb1
	JEQ qlimb2
	QLIMB(QREG3)
	JMP qlimbed
qlimb2:
	QLIMB(QREG2)
	JMP qlimbed
qlimb1:
	QLIMB(QREG1)
qlimbed:
	DECQ DX
	JZ qtail
	VPSLLD $8, Z12, Z12
	VPSLLD $8, Z13, Z13
	VPSLLD $8, Z14, Z14
	VPSLLD $8, Z15, Z15
	VPSLLD $8, Z16, Z16
	VPSLLD $8, Z17, Z17
	VPSLLD $8, Z18, Z18
	VPSLLD $8, Z19, Z19
	VPSLLD $8, Z20, Z20
	VPSLLD $8, Z21, Z21
	VPSLLD $8, Z22, Z22
	VPSLLD $8, Z23, Z23
	ADDQ $1024, R12
	JMP qlimb
qtail:
	CMPQ ntok+72(FP), $2
	JLT qtail1
	JEQ qtail2
	QTAIL3(1024(AX), 1088(AX), Z12, Z13, Z14, Z0, Z1, Z2)
	QTAIL3(1024(AX)(BX*1), 1088(AX)(BX*1), Z15, Z16, Z17, Z3, Z4, Z5)
	QTAIL3(1024(AX)(BX*2), 1088(AX)(BX*2), Z18, Z19, Z20, Z6, Z7, Z8)
	QTAIL3(1024(AX)(R13*1), 1088(AX)(R13*1), Z21, Z22, Z23, Z9, Z10, Z11)
	JMP qtailed
qtail2:
	QTAIL2(1024(AX), 1088(AX), Z12, Z13, Z0, Z1)
	QTAIL2(1024(AX)(BX*1), 1088(AX)(BX*1), Z15, Z16, Z3, Z4)
	QTAIL2(1024(AX)(BX*2), 1088(AX)(BX*2), Z18, Z19, Z6, Z7)
	QTAIL2(1024(AX)(R13*1), 1088(AX)(R13*1), Z21, Z22, Z9, Z10)
	JMP qtailed
qtail1:
	QTAIL1(1024(AX), 1088(AX), Z12, Z0)
	QTAIL1(1024(AX)(BX*1), 1088(AX)(BX*1), Z15, Z3)
	QTAIL1(1024(AX)(BX*2), 1088(AX)(BX*2), Z18, Z6)
	QTAIL1(1024(AX)(R13*1), 1088(AX)(R13*1), Z21, Z9)
qtailed:
	ADDQ $1152, AX
	ADDQ $2176, DI
	DECQ CX
	JNZ qstep
	VPMOVZXBD quadReduce<>(SB), Z29
	VPMOVZXBD quadCompact<>(SB), Z30
	MOVQ y+0(FP), R9
	MOVQ yStride+8(FP), DX
	LEAQ (R9)(DX*2), R12
	QREDUCE(Z0, Z3, Z6, Z9, (R9), two0, done0)
	CMPQ ntok+72(FP), $1
	JLE reduced
	QREDUCE(Z1, Z4, Z7, Z10, (R9)(DX*1), two1, done1)
	CMPQ ntok+72(FP), $2
	JLE reduced
	QREDUCE(Z2, Z5, Z8, Z11, (R12), two2, done2)
reduced:
	MOVQ rows+80(FP), DX
	SHLQ $4, DX
	ADDQ DX, y+0(FP)
	LEAQ (BX)(BX*1), DX
	LEAQ (DX)(DX*1), DX
	ADDQ DX, wt+16(FP)
	DECQ quads+64(FP)
	JNZ quad
	VZEROUPPER
	RET

// quadReduce: VPERMPS indices (bytes, widened) gathering the reduction's sums (lanes 0, 4, 8, 12,
// then 2, 6, 10, 14) into lanes 0–7.
DATA quadReduce<>+0(SB)/8, $0x0E0A06020C080400
DATA quadReduce<>+8(SB)/8, $0
GLOBL quadReduce<>(SB), RODATA|NOPTR, $16

// quadCompact: VPERMPS indices (bytes, widened) gathering lanes 0, 2, 4, 6 into lanes 0–3.
DATA quadCompact<>+0(SB)/8, $0x06040200
DATA quadCompact<>+8(SB)/8, $0
GLOBL quadCompact<>(SB), RODATA|NOPTR, $16
