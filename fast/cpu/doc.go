// Package cpu holds lily's CPU kernels: fused-dequantization mat-vec and mat-mat over MLX affine
// 4/8-bit group-64 weights (model.md §3), a bf16 dense mat-vec, the small vector helpers a decode
// step needs, a fixed worker pool, and the machine measurements (read bandwidth, kernel peak) that
// the bench command reports fractions against.
//
// Every kernel has a portable pure-Go version. Built with GOEXPERIMENT=simd on amd64, a second
// version written with simd/archsimd (AVX2+FMA) is used when the CPU has those features; the choice
// is made once in [New]. [NewPortable] forces the portable version (tests compare the two).
//
// Decode mat-vecs: prepare the input once ([Vec.PrepareQ8]) and call [Kernels.QMatVecQ8] for 4-bit
// matrices, [Kernels.QMatVec] for 8-bit ones (the router). QMatVecQ8 rounds the activations to int8
// per group of 64 (x ≈ d·q, d = max|x|/127, as llama.cpp's Q8 path) and sums exact integer products;
// on this project's 2-core AVX2 machines its inner loop costs less than half of the float32 one
// (BenchmarkQMatVecCPU), which is what lets one core keep up with DRAM. Its error budget, checked by
// TestQMatVecQ8Budget: |y − y_exact| ≤ Σ_g |scale_g|·(d_g/2)·Σ_{i∈g} q_i (plus float32 rounding);
// on random data the observed error is about 0.5% of rms(y) (about one bf16 ulp), 1.5% of rms(y) at
// most over 512 outputs (float32 activations: 2e-7). QMatVec keeps float32 activations (error ~1e-6 relative) for callers that need it.
//
// Weights stay in their stored form: packed []byte (little-endian uint32 words, element k of a word in
// bits [k*bits, (k+1)*bits), so in byte terms a 4-bit row is low nibble first), bf16 scales and biases
// as []uint16 bit patterns, one per group of 64 inputs. Nothing dequantizes a whole matrix.
package cpu
