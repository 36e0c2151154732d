//go:build goexperiment.simd && amd64

#include "textflag.h"

// func accumOctetRows(o *float32, oRow int, p *float32, pRow, n int, v *float32, vRow, chunks int)
//
// accumOctet reading the weights as they lie, row by row: o[r·oRow + x] += Σ_j p[r·pRow + 4j]·
// v[j·vRow + x] for r < 8, j < n (n ≥ 1) and x < 32·chunks (oRow, pRow and vRow in bytes). Each
// weight is broadcast straight from its row (row r's address from one of three bases, rows 0, 3
// and 6, plus pRow scaled by 1, 2 or 4), so the caller needs no interleaved copy of the weights.
// Per 32-dimension chunk the 8 rows' outputs live in Z16–Z31 across all the keys; per key two value
// loads and eight broadcasts feed 16 FMAs.
TEXT ·accumOctetRows(SB), NOSPLIT, $0-64
	MOVQ o+0(FP), BX
	MOVQ oRow+8(FP), SI
	MOVQ p+16(FP), R11
	MOVQ pRow+24(FP), R15
	MOVQ n+32(FP), R12
	MOVQ v+40(FP), R13
	MOVQ vRow+48(FP), DX
	MOVQ chunks+56(FP), R14
// RLOAD and RSTORE move one output row's 32 dimensions between (R8) and its two accumulators and
// step R8 to the next row.
#define RLOAD(a, b) \
	VMOVUPS (R8), a \
	VMOVUPS 64(R8), b \
	ADDQ SI, R8
#define RSTORE(a, b) \
	VMOVUPS a, (R8) \
	VMOVUPS b, 64(R8) \
	ADDQ SI, R8
// RFMA adds one row's weight for this key (broadcast from addr) times the value vectors Z0, Z1.
#define RFMA(addr, w, a, b) \
	VBROADCASTSS addr, w \
	VFMADD231PS Z0, w, a \
	VFMADD231PS Z1, w, b

rchunk:
	MOVQ BX, R8
	RLOAD(Z16, Z17)
	RLOAD(Z18, Z19)
	RLOAD(Z20, Z21)
	RLOAD(Z22, Z23)
	RLOAD(Z24, Z25)
	RLOAD(Z26, Z27)
	RLOAD(Z28, Z29)
	RLOAD(Z30, Z31)
	MOVQ R13, DI
	MOVQ R11, R9
	LEAQ (R11)(R15*2), AX
	ADDQ R15, AX
	LEAQ (AX)(R15*2), CX
	ADDQ R15, CX
	MOVQ R12, R10
rkey:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	RFMA((R9), Z2, Z16, Z17)
	RFMA((R9)(R15*1), Z3, Z18, Z19)
	RFMA((R9)(R15*2), Z4, Z20, Z21)
	RFMA((AX), Z5, Z22, Z23)
	RFMA((R9)(R15*4), Z6, Z24, Z25)
	RFMA((AX)(R15*2), Z7, Z26, Z27)
	RFMA((CX), Z8, Z28, Z29)
	RFMA((AX)(R15*4), Z9, Z30, Z31)
	ADDQ DX, DI
	ADDQ $4, R9
	ADDQ $4, AX
	ADDQ $4, CX
	DECQ R10
	JNZ rkey
	MOVQ BX, R8
	RSTORE(Z16, Z17)
	RSTORE(Z18, Z19)
	RSTORE(Z20, Z21)
	RSTORE(Z22, Z23)
	RSTORE(Z24, Z25)
	RSTORE(Z26, Z27)
	RSTORE(Z28, Z29)
	RSTORE(Z30, Z31)
	ADDQ $128, BX
	ADDQ $128, R13
	DECQ R14
	JNZ rchunk
	VZEROUPPER
	RET
