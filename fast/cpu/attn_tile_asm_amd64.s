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

// ZEROROW starts a row's two accumulators at zero, for an output that is overwritten (its old
// contents never read); NTROW stores them with non-temporal stores (64-byte aligned rows), past the
// caches, for an output not read again before other traffic would evict it. Both step R8 to the
// next row.
#define ZEROROW(a, b) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	ADDQ SI, R8
#define NTROW(a, b) \
	VMOVNTPS a, (R8) \
	VMOVNTPS b, 64(R8) \
	ADDQ SI, R8

// ROWLINES prefetches one output row's chunk (two lines at AX) and steps AX to the next row.
#define ROWLINES \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	ADDQ SI, AX

// NEXTOCTET prefetches into L1 the chunk's 32 dimensions of the 8 output rows after this octet's
// (BX + 8·oRow on): the chunked delta rule's state update walks a head's state octet by octet, and
// a cold state's lines otherwise arrive one octet at a time, at DRAM latency (past the last octet
// it prefetches whatever follows, which a prefetch may do).
#define NEXTOCTET \
	LEAQ (BX)(SI*8), AX \
	ROWLINES \
	ROWLINES \
	ROWLINES \
	ROWLINES \
	ROWLINES \
	ROWLINES \
	ROWLINES \
	ROWLINES

// func accumOctetNext(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)
//
// accumOctet, prefetching the next octet's rows of o (NEXTOCTET).
TEXT ·accumOctetNext(SB), NOSPLIT, $0-56
	ACCUMOCTETX(VMOVUPS, 64, 128, LOADROW, STOREROW, NEXTOCTET)

// func setOctetNext(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)
//
// accumOctet with o overwritten rather than added to (its old contents never read), prefetching
// the next octet's rows (whose stores would otherwise each wait for the line to be read).
TEXT ·setOctetNext(SB), NOSPLIT, $0-56
	ACCUMOCTETX(VMOVUPS, 64, 128, ZEROROW, STOREROW, NEXTOCTET)

// func setOctetStream(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)
//
// accumOctet with o overwritten by non-temporal stores (o and oRow 64-byte aligned): neither read
// nor brought into the caches. The caller fences (storeFence) before the stores are read.
TEXT ·setOctetStream(SB), NOSPLIT, $0-56
	ACCUMOCTETX(VMOVUPS, 64, 128, ZEROROW, NTROW, NOOPF)

// func storeFence()
//
// SFENCE: the non-temporal stores before it are globally visible before any store after it.
TEXT ·storeFence(SB), NOSPLIT, $0-0
	SFENCE
	RET
