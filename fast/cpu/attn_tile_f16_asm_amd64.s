//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "attn_tile_amd64.h"

// The fp16 KV cache's attention tiles: scoreQuads and accumOctet with each key or value vector
// converted from fp16 in the load (VCVTPH2PS from memory, exact), so the cache is read at half the
// bytes and no widened copy of the block is written and read back. The arithmetic is the float32
// tiles' own, in the same order (the same bodies, attn_tile_amd64.h): the results are bit for bit
// those of widening first.

// func scoreQuadsF16(s *float32, sRow int, q *float32, qRow int, keys *uint16, kRow, d, quads int)
//
// scoreQuads with fp16 keys (kRow in bytes between key rows): AX steps through a key row's bytes,
// 32 (16 fp16 values) a step; the query rows are read at twice that offset.
TEXT ·scoreQuadsF16(SB), NOSPLIT, $0-64
	SCOREQUADS(VCVTPH2PS, 1, 32, 2)

// func accumOctetF16(o *float32, oRow int, pt *float32, n int, v *uint16, vRow, chunks int)
//
// accumOctet with fp16 values (vRow in bytes between value rows): per key the 32 dimensions of the
// chunk are two converting loads, 64 bytes of the row.
TEXT ·accumOctetF16(SB), NOSPLIT, $0-56
	ACCUMOCTET(VCVTPH2PS, 32, 64)
