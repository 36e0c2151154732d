// The attention tiles' bodies, shared by the float32 tiles (attn_tile_asm_amd64.s) and the fp16
// ones (attn_tile_f16_asm_amd64.s), which differ only in how a key or value vector is loaded
// (VMOVUPS, or VCVTPH2PS converting 16 fp16 values exactly) and so in the bytes a vector spans.

// ZERO4 clears four accumulators.
#define ZERO4(a, b, c, d) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c \
	VPXORD d, d, d

// QROW loads 16 dimensions of one query row (at qaddr) into q and adds its products with the four
// key vectors Z0–Z3 to that row's accumulators.
#define QROW(qaddr, q, a, b, c, d) \
	VMOVUPS qaddr, q \
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

// SCOREQUADS is scoreQuads' body after its arguments: KLOAD loads 16 key dimensions into a
// register, ESHIFT is log2 of a key element's bytes (2: float32, 1: fp16), KSTEP the bytes of 16
// key elements, QSCALE the query's element bytes over the key's (the factor on AX, which steps
// through a key row's bytes, that addresses the query row). Each quad starts with VPFQUAD (the
// quad's value rows) and KPF of its 4 rows (the key rows two quads on), which the including file
// defines: prefetches, or nothing.
#define SCOREQUADS(KLOAD, ESHIFT, KSTEP, QSCALE) \
	MOVQ s+0(FP), BX \
	MOVQ sRow+8(FP), R8 \
	MOVQ q+16(FP), SI \
	MOVQ qRow+24(FP), R9 \
	MOVQ keys+32(FP), DI \
	MOVQ kRow+40(FP), DX \
	MOVQ d+48(FP), CX \
	SHLQ $ESHIFT, CX \
	LEAQ (SI)(R9*1), R10 \
	LEAQ (R10)(R9*1), R11 \
	LEAQ (R11)(R9*1), R12 \
	MOVQ quads+56(FP), R9 \
quad: \
	LEAQ (DI)(DX*1), R13 \
	LEAQ (R13)(DX*1), R14 \
	LEAQ (R14)(DX*1), R15 \
	ZERO4(Z16, Z17, Z18, Z19) \
	ZERO4(Z20, Z21, Z22, Z23) \
	ZERO4(Z24, Z25, Z26, Z27) \
	ZERO4(Z28, Z29, Z30, Z31) \
	VPFQUAD \
	KPF(DI) \
	KPF(R13) \
	KPF(R14) \
	KPF(R15) \
	XORQ AX, AX \
step: \
	KLOAD (DI)(AX*1), Z0 \
	KLOAD (R13)(AX*1), Z1 \
	KLOAD (R14)(AX*1), Z2 \
	KLOAD (R15)(AX*1), Z3 \
	QROW((SI)(AX*QSCALE), Z4, Z16, Z17, Z18, Z19) \
	QROW((R10)(AX*QSCALE), Z5, Z20, Z21, Z22, Z23) \
	QROW((R11)(AX*QSCALE), Z6, Z24, Z25, Z26, Z27) \
	QROW((R12)(AX*QSCALE), Z7, Z28, Z29, Z30, Z31) \
	ADDQ $KSTEP, AX \
	CMPQ AX, CX \
	JB step \
	MOVQ BX, AX \
	SUMROW(Z16, Z17, Z18, Z19, Y16, Y17, Y18, Y19) \
	SUMROW(Z20, Z21, Z22, Z23, Y20, Y21, Y22, Y23) \
	SUMROW(Z24, Z25, Z26, Z27, Y24, Y25, Y26, Y27) \
	SUMROW(Z28, Z29, Z30, Z31, Y28, Y29, Y30, Y31) \
	ADDQ $16, BX \
	LEAQ (R15)(DX*1), DI \
	DECQ R9 \
	JNZ quad \
	VZEROUPPER \
	RET

// LOADROW and STOREROW move one output row's 32 dimensions between (R8) and its two accumulators
// (load or store) and step R8 to the next row.
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

// ACCUMOCTETX is the body of accumOctet and its variants after their arguments: VLOAD loads 16
// value dimensions into a register, VHALF is the bytes of 16 value elements (where a chunk's second
// vector starts) and VCHUNK those of a chunk's 32. LROW starts a row's two accumulators (LOADROW,
// or ZEROROW where the output is overwritten), SROW ends them (STOREROW, or a non-temporal store),
// and OPF runs after a chunk's rows are started (a prefetch of the output's next rows, or nothing).
// Each key starts with APF, which the including file defines (a prefetch of the chunk in a later
// key's row, or nothing).
#define ACCUMOCTETX(VLOAD, VHALF, VCHUNK, LROW, SROW, OPF) \
	MOVQ o+0(FP), BX \
	MOVQ oRow+8(FP), SI \
	MOVQ pt+16(FP), R11 \
	MOVQ n+24(FP), R12 \
	MOVQ v+32(FP), R13 \
	MOVQ vRow+40(FP), DX \
	MOVQ chunks+48(FP), R14 \
chunk: \
	MOVQ BX, R8 \
	LROW(Z16, Z17) \
	LROW(Z18, Z19) \
	LROW(Z20, Z21) \
	LROW(Z22, Z23) \
	LROW(Z24, Z25) \
	LROW(Z26, Z27) \
	LROW(Z28, Z29) \
	LROW(Z30, Z31) \
	OPF \
	MOVQ R13, DI \
	MOVQ R11, R9 \
	MOVQ R12, R10 \
key: \
	APF \
	VLOAD (DI), Z0 \
	VLOAD VHALF(DI), Z1 \
	WROW(0, Z2, Z16, Z17) \
	WROW(4, Z3, Z18, Z19) \
	WROW(8, Z4, Z20, Z21) \
	WROW(12, Z5, Z22, Z23) \
	WROW(16, Z6, Z24, Z25) \
	WROW(20, Z7, Z26, Z27) \
	WROW(24, Z8, Z28, Z29) \
	WROW(28, Z9, Z30, Z31) \
	ADDQ DX, DI \
	ADDQ $32, R9 \
	DECQ R10 \
	JNZ key \
	MOVQ BX, R8 \
	SROW(Z16, Z17) \
	SROW(Z18, Z19) \
	SROW(Z20, Z21) \
	SROW(Z22, Z23) \
	SROW(Z24, Z25) \
	SROW(Z26, Z27) \
	SROW(Z28, Z29) \
	SROW(Z30, Z31) \
	ADDQ $128, BX \
	ADDQ $VCHUNK, R13 \
	DECQ R14 \
	JNZ chunk \
	VZEROUPPER \
	RET

// ACCUMOCTET is accumOctet's body: the output's rows loaded and stored, nothing prefetched.
#define NOOPF
#define ACCUMOCTET(VLOAD, VHALF, VCHUNK) ACCUMOCTETX(VLOAD, VHALF, VCHUNK, LOADROW, STOREROW, NOOPF)
