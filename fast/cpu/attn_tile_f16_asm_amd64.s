//go:build goexperiment.simd && amd64

#include "textflag.h"

// ROWPF(r, idx): the 512 bytes (8 lines, one fp16 row of 256) at r + idx into L2.
#define ROWPF(r, idx) \
	PREFETCHT1 (r)(idx) \
	PREFETCHT1 64(r)(idx) \
	PREFETCHT1 128(r)(idx) \
	PREFETCHT1 192(r)(idx) \
	PREFETCHT1 256(r)(idx) \
	PREFETCHT1 320(r)(idx) \
	PREFETCHT1 384(r)(idx) \
	PREFETCHT1 448(r)(idx)

// KPF(r): the key row two quads on from row r (kRow = DX bytes apart), prefetched at each quad's
// start so that the block's keys stream in while earlier quads compute.
#define KPF(r) ROWPF(r, DX*8)

// VPF(r): the value row that lies vdelta bytes (AX) on from key row r (the cache's value array
// mirrors its key array): it is read once the block's scores are done.
#define VPF(r) ROWPF(r, AX*1)

// VPFQUAD: the quad's 4 value rows, unless vdelta is 0 (no values to prefetch).
#define VPFQUAD \
	MOVQ vdelta+64(FP), AX \
	TESTQ AX, AX \
	JZ novpf \
	VPF(DI) \
	VPF(R13) \
	VPF(R14) \
	VPF(R15) \
novpf:

// APF: the chunk's line in the value row 8 keys on, into L1 (the rows lie vRow = DX bytes apart).
#define APF PREFETCHT0 (DI)(DX*8)

#include "attn_tile_amd64.h"

// The fp16 KV cache's attention tiles: scoreQuads and accumOctet with each key or value vector
// converted from fp16 in the load (VCVTPH2PS from memory, exact), so the cache is read at half the
// bytes and no widened copy of the block is written and read back. The arithmetic is the float32
// tiles' own, in the same order (the same bodies, attn_tile_amd64.h): the results are bit for bit
// those of widening first.

// func scoreQuadsF16(s *float32, sRow int, q *float32, qRow int, keys *uint16, kRow, d, quads, vdelta int)
//
// scoreQuads with fp16 keys (kRow in bytes between key rows): AX steps through a key row's bytes,
// 32 (16 fp16 values) a step; the query rows are read at twice that offset. Each quad's value rows
// (vdelta bytes on from its key rows; vdelta 0: none) and the key rows two quads on are prefetched
// into L2 as the quad starts, so a cold cache streams in while the tiles compute.
TEXT ·scoreQuadsF16(SB), NOSPLIT, $0-72
	SCOREQUADS(VCVTPH2PS, 1, 32, 2)

// func accumOctetF16(o *float32, oRow int, pt *float32, n int, v *uint16, vRow, chunks int)
//
// accumOctet with fp16 values (vRow in bytes between value rows): per key the 32 dimensions of the
// chunk are two converting loads, 64 bytes of the row.
TEXT ·accumOctetF16(SB), NOSPLIT, $0-56
	ACCUMOCTET(VCVTPH2PS, 32, 64)
