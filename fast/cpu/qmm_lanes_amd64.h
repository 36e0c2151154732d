// The integer GEMM kernels' shared macros (qmm_lanes_amd64.s, qmm_lanes_quad_amd64.s; UNITPF also
// qmm_vnni_amd64.s).

// UNPACK4(o0, o1, o2, o3): the 4×4 dword transposes inside each 128-bit lane of Z8–Z11 (VPUNPCK,
// through Z12–Z15) into o0–o3: o_m's lane c holds dword m of lane c of Z8, Z9, Z10, Z11 in turn.
#define UNPACK4(o0, o1, o2, o3) \
	VPUNPCKLDQ Z9, Z8, Z12 \
	VPUNPCKHDQ Z9, Z8, Z13 \
	VPUNPCKLDQ Z11, Z10, Z14 \
	VPUNPCKHDQ Z11, Z10, Z15 \
	VPUNPCKLQDQ Z14, Z12, o0 \
	VPUNPCKHQDQ Z14, Z12, o1 \
	VPUNPCKLQDQ Z15, Z13, o2 \
	VPUNPCKHQDQ Z15, Z13, o3

// SPLIT2(a, b, e0, d0, e1, d1): registers k and k+4 of the lane order from the first half's a and
// the second half's b (UNPACK4 outputs m = k; VSHUFI64X2 gathers their 128-bit lanes), split into
// even (low) and odd (high) nibbles: e0/d0 register k's, e1/d1 register k+4's. Z29–Z31 scratch,
// Z28 the nibble mask.
#define SPLIT2(a, b, e0, d0, e1, d1) \
	VSHUFI64X2 $0x88, b, a, Z29 \
	VSHUFI64X2 $0xDD, b, a, Z30 \
	VPANDD Z28, Z29, e0 \
	VPSRLW $4, Z29, Z31 \
	VPANDD Z28, Z31, d0 \
	VPANDD Z28, Z30, e1 \
	VPSRLW $4, Z30, Z31 \
	VPANDD Z28, Z31, d1

// TRANSPOSE: the unit's step of 16 groups (8 loads: AX, and halfW = BX on for the second half) into
// lane order, split into nibbles: register (k, p) (dword k, p = 0 even / 1 odd elements) in
// Z(8+k) / Z(12+k) for k < 4 and Z(20+k−4) / Z(16+k−4) for k ≥ 4. Clobbers Z24–Z27, Z29–Z31;
// reads the nibble mask in Z28.
#define TRANSPOSE \
	VMOVDQU64 0(AX), Z8 \
	VMOVDQU64 64(AX), Z9 \
	VMOVDQU64 128(AX), Z10 \
	VMOVDQU64 192(AX), Z11 \
	UNPACK4(Z24, Z25, Z26, Z27) \
	VMOVDQU64 0(AX)(BX*1), Z8 \
	VMOVDQU64 64(AX)(BX*1), Z9 \
	VMOVDQU64 128(AX)(BX*1), Z10 \
	VMOVDQU64 192(AX)(BX*1), Z11 \
	UNPACK4(Z16, Z17, Z18, Z19) \
	SPLIT2(Z24, Z16, Z8, Z12, Z20, Z16) \
	SPLIT2(Z25, Z17, Z9, Z13, Z21, Z17) \
	SPLIT2(Z26, Z18, Z10, Z14, Z22, Z18) \
	SPLIT2(Z27, Z19, Z11, Z15, Z23, Z19)

// SCALES: the step's 16 scales (Z25) and biases (Z26) as float32 in lane order (VPERMD by the lane
// order in Z27, which it loads from LANEORDER), from bf16 at SI and R8 (the halves R13 apart).
#define SCALES \
	VPMOVZXBD LANEORDER, Z27 \
	VMOVDQU32 (SI), X25 \
	VINSERTI32X4 $1, (SI)(R13*1), Y25, Y25 \
	VPMOVZXWD Y25, Z25 \
	VPERMD Z25, Z27, Z25 \
	VPSLLD $16, Z25, Z25 \
	VMOVDQU32 (R8), X26 \
	VINSERTI32X4 $1, (R8)(R13*1), Y26, Y26 \
	VPMOVZXWD Y26, Z26 \
	VPERMD Z26, Z27, Z26 \
	VPSLLD $16, Z26, Z26


// LANETAIL(rec, s, f, sc, bi): the tail of one unit, token and step — the token's integer sums s
// (the records' step at rec) converted, times its limb scales (rec + 2048), into f with the unit's
// row scales sc; then the unit's biases bi against the token's group sums (rec + 2112).
#define LANETAIL(rec, s, f, sc, bi) \
	VCVTDQ2PS s, s \
	VMULPS 2048 rec, s, s \
	VFMADD231PS sc, s, f \
	VFMADD231PS 2112 rec, bi, f

// UNITPF(op, r, h): prefetch instruction op on 4 lines at r and 4 at r + h: one lane unit step's
// packed weights (h the halves' distance, halfW), or a block of a 2-row tile's row pair (h the row
// bytes; qmm_vnni_amd64.s).
#define UNITPF(op, r, h) \
	op (r) \
	op 64(r) \
	op 128(r) \
	op 192(r) \
	op (r)(h*1) \
	op 64(r)(h*1) \
	op 128(r)(h*1) \
	op 192(r)(h*1)
