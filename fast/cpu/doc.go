// Package cpu holds lily's CPU kernels: fused-dequantization mat-vec and mat-mat over MLX affine
// 4/8-bit group-64 weights (model.md §3), a bf16 dense mat-vec, the vector helpers a decode step
// needs (dot, axpy, SiLU with a float32 exp, and the attention block helpers Dots, ExpShift and
// AxpyRows), a fixed worker pool, and the machine measurements (read bandwidth, kernel peak) that
// the bench command reports fractions against.
//
// Every kernel has a portable pure-Go version. Built with GOEXPERIMENT=simd on amd64, a second
// version written with simd/archsimd (AVX2+FMA, AVX-512 where it pays) is used when the CPU has
// those features; the choice is made once in [New]. [NewPortable] forces the portable version
// (tests compare the two, and run the 256-bit versions on AVX-512 machines too).
//
// Decode mat-vecs: prepare each input once ([Vec.Prepare], or [Vec.PrepareQ16] for the int16 copy)
// and run [Kernels.QMatVec] / [Kernels.QMatVecQ16], or [Kernels.QMatVecs] for a gathered set in one
// pool dispatch. QMatVec keeps float32 activations: with AVX-512 the 4-bit loop reads a pair of
// groups per 64-byte load and turns every nibble into a float32 with one VPERMPS lookup (no mask, no
// conversion), ~26 vector instructions per 128 weights. QMatVecQ16 rounds the activations to int16
// per group of 64 (x ≈ d·q, d = max|x|/32767) and sums exact integer products with VPMADDWD; its
// error budget, checked by TestQMatVecQ16Budget: |y − y_exact| ≤ Σ_g |scale_g|·(d_g/2)·Σ_{i∈g} q_i
// (plus float32 rounding). The fast engine uses it for the lm_head only unless asked, and not at all
// where the CPU has AVX-512 VNNI ([Kernels.VNNI]): there QMatVec runs 4-bit rows of whole 8-group
// blocks on VPDPBUSD, with x prepared as three int8 limbs per element (x ≈ (d/65536)·(65536·a +
// 256·b + c), d = max|x|/127 per group: within d/131072, 6e-8 of the group's largest |x|, which is
// float32's own rounding), the dot products exact in int32: ~17 instructions per 128 weights, about
// 10 cycles, against ~19 for the float32 loop (budget: TestQMatVecLimbBudget). That kernel is
// written in Go assembly (qmv_vnni_amd64.s): archsimd has no VPDPBUSD. So are the AVX-512 attention
// tiles (attn_tile_asm_amd64.s: 4×4 scores, 8 rows × 32 dimensions of values), which need more
// than the 15 vector registers the compiler gives archsimd code.
//
// Prefill mat-mats ([Kernels.QMatMat]) of 4-bit matrices of whole 8-group blocks run, where the CPU
// has AVX-512 VNNI, on an integer GEMM (qmm_int.go, qmm_vnni_amd64.s): each token row is prepared
// once per call as the same limbs (qmm_limbs.go's records: limbs, the per-pair multipliers and the
// group sums in the order the tile reads them), and a 2-row × 4-token assembly tile unpacks each
// pair of groups of its two rows once and multiplies it with the four tokens' first two limbs by
// VPDPBUSD, x read as (d/256)·(256·a + b), within d/512 per group (qmmLimbs; budget:
// TestQMatMatIntBudget). The widths of the model (In 512 and multiples of 1024) run instead on the
// lane-group kernels (qmm_lanes.go): the same integer sums with one group in every 32-bit lane,
// the weights transposed into that order in registers (qmm_lanes_amd64.s, per tile of 4 tokens)
// or, from a few tokens on, once per call and row block into a scratch that a 4-row × 3-token
// tile reads (qmm_lanes_quad_amd64.s), so that the float tail runs once per 16 groups and each
// load of a token's digits feeds 4 rows. Elsewhere, and for 8-bit matrices, the float32 row-block
// kernels run.
//
// A KV cache in fp16 (f16.go): [Kernels.F16Row] converts a K or V row on append (round to nearest
// even; VCVTPS2PH with AVX-512, bit for bit safetensors.Float32ToF16), and [Kernels.ScoreTileF16] and
// [Kernels.AccumTileF16] read the cached rows inside the assembly register tiles with AVX-512
// (attn_tile_f16_asm_amd64.s: each key or value vector loaded by VCVTPH2PS from memory, exact), the
// float32 tiles' arithmetic in their order, so the results are bit for bit those of widening first;
// leftover keys and rows, CPUs without AVX-512 and the portable kernels widen the block into the
// caller's float32 scratch and run the float32 tiles on it. The cache reads half the bytes (budget
// f16KVTol against the unrounded rows).
//
// The SIMD mat-vecs prefetch the packed weights ahead of the row they compute: the float32 ones 2 KiB
// ahead into L1 (PREFETCHT0 through prefetch_amd64.s, as neither archsimd nor the compiler expose a
// prefetch; see prefetchAhead), the VNNI loops inline, into L2 at least 8 KiB ahead and into L1 one
// pass ahead (see vnniPrefetchL2: an L1 prefetch from DRAM held a Zen 4 core to 10 GB/s). Without
// prefetch the hardware prefetchers leave each core stalled on DRAM about as long as it computes.
//
// Weights stay in their stored form: packed []byte (little-endian uint32 words, element k of a word in
// bits [k*bits, (k+1)*bits), so in byte terms a 4-bit row is low nibble first), bf16 scales and biases
// as []uint16 bit patterns, one per group of 64 inputs. Nothing dequantizes a whole matrix.
package cpu
