//go:build goexperiment.simd && amd64

#include "textflag.h"

// func scoreQuads(s *float32, sRow int, q *float32, qRow int, keys *float32, kRow, d, quads int)
//
// The scores of 4 query rows against quads×4 keys: s[i·sRow + 4c + j] = q_i · key_{4c+j} for
// i, j < 4, c < quads (sRow, qRow and kRow in bytes between rows; d a positive multiple of 16).
// Per key quad, 16 accumulators (Z16–Z31: row i, key j in Z(16+4i+j)) take per 16 dimensions four
// key loads, four query loads and 16 FMAs, each key vector serving the four rows and each query
// vector the four keys; then each row's four accumulators fold to four sums (256-bit halves added,
// three VHADDPS, the 128-bit halves added) stored together. Assembly because the tile needs 24
// vector registers: archsimd code gets 15 from the compiler and spilled two of its 2×4 tile's.
TEXT ·scoreQuads(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), BX
	MOVQ sRow+8(FP), R8
	MOVQ q+16(FP), SI
	MOVQ qRow+24(FP), R9
	MOVQ keys+32(FP), DI
	MOVQ kRow+40(FP), DX
	MOVQ d+48(FP), CX
	SHLQ $2, CX
	LEAQ (SI)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	MOVQ quads+56(FP), R9
// ZERO4 clears four accumulators.
#define ZERO4(a, b, c, d) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c \
	VPXORD d, d, d

// QROW loads 16 dimensions of one query row (at row+AX) into q and adds its products with the
// four key vectors Z0–Z3 to that row's accumulators.
#define QROW(row, q, a, b, c, d) \
	VMOVUPS (row)(AX*1), q \
	VFMADD231PS Z0, q, a \
	VFMADD231PS Z1, q, b \
	VFMADD231PS Z2, q, c \
	VFMADD231PS Z3, q, d

// SUMROW folds one row's four accumulators to their four sums, stores them at (AX) and steps AX to
// the next output row (R8 bytes on). Y0–Y7 are scratch (VHADDPS has no EVEX form: registers 0–15).
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
	VMOVUPS (DI)(AX*1), Z0
	VMOVUPS (R13)(AX*1), Z1
	VMOVUPS (R14)(AX*1), Z2
	VMOVUPS (R15)(AX*1), Z3
	QROW(SI, Z4, Z16, Z17, Z18, Z19)
	QROW(R10, Z5, Z20, Z21, Z22, Z23)
	QROW(R11, Z6, Z24, Z25, Z26, Z27)
	QROW(R12, Z7, Z28, Z29, Z30, Z31)
	ADDQ $64, AX
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

// func accumOctet(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)
//
// AccumTile for 8 output rows: o[r·oRow + x] += Σ_j pt[8j + r]·v[j·vRow + x] for r < 8, j < n
// (n ≥ 1) and x < 32·chunks (oRow and vRow in bytes; pt: the 8 rows' weights interleaved by key).
// Per 32-dimension chunk the 8 rows' outputs live in 16 accumulators (Z16–Z31: row r in Z(16+2r),
// Z(17+2r)) across all the keys; per key two value loads and eight weight broadcasts feed 16 FMAs,
// each value vector serving the eight rows (the archsimd 4-row strip reloads it per strip and spends
// a broadcast shuffle per weight).
TEXT ·accumOctet(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), BX
	MOVQ oRow+8(FP), SI
	MOVQ pt+16(FP), R11
	MOVQ n+24(FP), R12
	MOVQ v+32(FP), R13
	MOVQ vRow+40(FP), DX
	MOVQ chunks+48(FP), R14
// LOADROW and STOREROW move one output row's 32 dimensions between (R8) and its two accumulators (load or
// store) and steps R8 to the next row.
#define LOADROW(a, b) \
	VMOVUPS (R8), a \
	VMOVUPS 64(R8), b \
	ADDQ SI, R8
#define STOREROW(a, b) \
	VMOVUPS a, (R8) \
	VMOVUPS b, 64(R8) \
	ADDQ SI, R8

// WROW adds one row's weight for this key (broadcast from off(R9)) times the value vectors Z0, Z1.
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
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
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
	ADDQ $128, R13
	DECQ R14
	JNZ chunk
	VZEROUPPER
	RET
