//go:build goexperiment.simd && amd64

#include "textflag.h"

// The fp16 KV cache's attention tiles: scoreQuads and accumOctet with each key or value vector
// converted from fp16 in the load (VCVTPH2PS from memory, exact), so the cache is read at half the
// bytes and no widened copy of the block is written and read back. The arithmetic is the float32
// tiles' own, in the same order: the results are bit for bit those of widening first.

// func scoreQuadsF16(s *float32, sRow int, q *float32, qRow int, keys *uint16, kRow, d, quads int)
//
// scoreQuads with fp16 keys (kRow in bytes between key rows). AX steps through a key row's bytes,
// 32 (16 fp16 values) a step; the query rows are read at twice that offset.
TEXT ·scoreQuadsF16(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), BX
	MOVQ sRow+8(FP), R8
	MOVQ q+16(FP), SI
	MOVQ qRow+24(FP), R9
	MOVQ keys+32(FP), DI
	MOVQ kRow+40(FP), DX
	MOVQ d+48(FP), CX
	SHLQ $1, CX
	LEAQ (SI)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	MOVQ quads+56(FP), R9
#define ZERO4(a, b, c, d) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c \
	VPXORD d, d, d

// QROW loads 16 dimensions of one query row (at row+2·AX) into q and adds its products with the
// four key vectors Z0–Z3 to that row's accumulators.
#define QROW(row, q, a, b, c, d) \
	VMOVUPS (row)(AX*2), q \
	VFMADD231PS Z0, q, a \
	VFMADD231PS Z1, q, b \
	VFMADD231PS Z2, q, c \
	VFMADD231PS Z3, q, d

// SUMROW is scoreQuads' fold of one row's four accumulators to their four sums, stored at (AX).
#define SUMROW(a, b, c, d, ya, yb, yc, yd) \
	VEXTRACTF64X4 $1, a, Y4 \
	VADDPS ya, Y4, Y0 \
	VEXTRACTF64X4 $1, b, Y5 \
	VADDPS yb, Y5, Y1 \
	VEXTRACTF64X4 $1, c, Y6 \
	VADDPS yc, Y6, Y2 \
	VEXTRACTF64X4 $1, d, Y7 \
	VADDPS yd, Y7, Y3 \
	VHADDPS Y1, Y0, Y0 \
	VHADDPS Y3, Y2, Y2 \
	VHADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVUPS X0, (AX) \
	ADDQ R8, AX

quad:
	LEAQ (DI)(DX*1), R13
	LEAQ (R13)(DX*1), R14
	LEAQ (R14)(DX*1), R15
	ZERO4(Z16, Z17, Z18, Z19)
	ZERO4(Z20, Z21, Z22, Z23)
	ZERO4(Z24, Z25, Z26, Z27)
	ZERO4(Z28, Z29, Z30, Z31)
	XORQ AX, AX
step:
	VCVTPH2PS (DI)(AX*1), Z0
	VCVTPH2PS (R13)(AX*1), Z1
	VCVTPH2PS (R14)(AX*1), Z2
	VCVTPH2PS (R15)(AX*1), Z3
	QROW(SI, Z4, Z16, Z17, Z18, Z19)
	QROW(R10, Z5, Z20, Z21, Z22, Z23)
	QROW(R11, Z6, Z24, Z25, Z26, Z27)
	QROW(R12, Z7, Z28, Z29, Z30, Z31)
	ADDQ $32, AX
	CMPQ AX, CX
	JB step

	MOVQ BX, AX
	SUMROW(Z16, Z17, Z18, Z19, Y16, Y17, Y18, Y19)
	SUMROW(Z20, Z21, Z22, Z23, Y20, Y21, Y22, Y23)
	SUMROW(Z24, Z25, Z26, Z27, Y24, Y25, Y26, Y27)
	SUMROW(Z28, Z29, Z30, Z31, Y28, Y29, Y30, Y31)
	ADDQ $16, BX
	LEAQ (R15)(DX*1), DI
	DECQ R9
	JNZ quad
	VZEROUPPER
	RET

// func accumOctetF16(o *float32, oRow int, pt *float32, n int, v *uint16, vRow, chunks int)
//
// accumOctet with fp16 values (vRow in bytes between value rows): per key the 32 dimensions of the
// chunk are two converting loads, 64 bytes of the row.
TEXT ·accumOctetF16(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), BX
	MOVQ oRow+8(FP), SI
	MOVQ pt+16(FP), R11
	MOVQ n+24(FP), R12
	MOVQ v+32(FP), R13
	MOVQ vRow+40(FP), DX
	MOVQ chunks+48(FP), R14
#define LOADROW(a, b) \
	VMOVUPS (R8), a \
	VMOVUPS 64(R8), b \
	ADDQ SI, R8
#define STOREROW(a, b) \
	VMOVUPS a, (R8) \
	VMOVUPS b, 64(R8) \
	ADDQ SI, R8
#define WROW(off, w, a, b) \
	VBROADCASTSS off(R9), w \
	VFMADD231PS Z0, w, a \
	VFMADD231PS Z1, w, b

chunk:
	MOVQ BX, R8
	LOADROW(Z16, Z17)
	LOADROW(Z18, Z19)
	LOADROW(Z20, Z21)
	LOADROW(Z22, Z23)
	LOADROW(Z24, Z25)
	LOADROW(Z26, Z27)
	LOADROW(Z28, Z29)
	LOADROW(Z30, Z31)
	MOVQ R13, DI
	MOVQ R11, R9
	MOVQ R12, R10
key:
	VCVTPH2PS (DI), Z0
	VCVTPH2PS 32(DI), Z1
	WROW(0, Z2, Z16, Z17)
	WROW(4, Z3, Z18, Z19)
	WROW(8, Z4, Z20, Z21)
	WROW(12, Z5, Z22, Z23)
	WROW(16, Z6, Z24, Z25)
	WROW(20, Z7, Z26, Z27)
	WROW(24, Z8, Z28, Z29)
	WROW(28, Z9, Z30, Z31)
	ADDQ DX, DI
	ADDQ $32, R9
	DECQ R10
	JNZ key
	MOVQ BX, R8
	STOREROW(Z16, Z17)
	STOREROW(Z18, Z19)
	STOREROW(Z20, Z21)
	STOREROW(Z22, Z23)
	STOREROW(Z24, Z25)
	STOREROW(Z26, Z27)
	STOREROW(Z28, Z29)
	STOREROW(Z30, Z31)
	ADDQ $128, BX
	ADDQ $64, R13
	DECQ R14
	JNZ chunk
	VZEROUPPER
	RET
