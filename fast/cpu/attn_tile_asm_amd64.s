//go:build goexperiment.simd && amd64

#include "textflag.h"
// KPF, VPFQUAD, APF: the float32 tiles prefetch nothing (see attn_tile_f16_asm_amd64.s).
#define KPF(r)
#define VPFQUAD
#define APF
#include "attn_tile_amd64.h"

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
	SCOREQUADS(VMOVUPS, 2, 64, 1)

// func accumOctet(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)
//
// AccumTile for 8 output rows: o[r·oRow + x] += Σ_j pt[8j + r]·v[j·vRow + x] for r < 8, j < n
// (n ≥ 1) and x < 32·chunks (oRow and vRow in bytes; pt: the 8 rows' weights interleaved by key).
// Per 32-dimension chunk the 8 rows' outputs live in 16 accumulators (Z16–Z31: row r in Z(16+2r),
// Z(17+2r)) across all the keys; per key two value loads and eight weight broadcasts feed 16 FMAs,
// each value vector serving the eight rows (the archsimd 4-row strip reloads it per strip and spends
// a broadcast shuffle per weight).
TEXT ·accumOctet(SB), NOSPLIT, $0-56
	ACCUMOCTET(VMOVUPS, 64, 128)
