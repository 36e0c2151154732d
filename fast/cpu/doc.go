// Package cpu holds lily's CPU kernels: fused-dequantization mat-vec and mat-mat over MLX affine
// 4/8-bit group-64 weights (model.md §3), a bf16 dense mat-vec, the small vector helpers a decode
// step needs, a fixed worker pool, and the machine measurements (read bandwidth, kernel peak) that
// the bench command reports fractions against.
//
// Every kernel has a portable pure-Go version. Built with GOEXPERIMENT=simd on amd64, a second
// version written with simd/archsimd (AVX2+FMA, AVX-512 where it pays) is used when the CPU has those features; the choice
// is made once in [New]. [NewPortable] forces the portable version (tests compare the two).
//
// Decode mat-vecs: prepare the input once ([Vec.PrepareQ16]) and call [Kernels.QMatVecQ16] for 4-bit
// matrices, [Kernels.QMatVec] for 8-bit ones (the router). QMatVecQ16 rounds the activations to
// int16 per group of 64 (x ≈ d·q, d = max|x|/32767) and sums exact integer products with VPMADDWD
// (512-bit with AVX-512BW, else 256-bit); its inner loop costs a fraction of the float32 one, which
// converts every weight to float (BenchmarkQMatVecCPU). Its error budget, checked by
// TestQMatVecQ16Budget: |y − y_exact| ≤ Σ_g |scale_g|·(d_g/2)·Σ_{i∈g} q_i (plus float32 rounding),
// 256 times tighter than an int8 (llama.cpp Q8) path, whose error flipped the top-1 token of the
// fixture models too often to meet the fidelity budget. QMatVec keeps float32 activations.
//
// Weights stay in their stored form: packed []byte (little-endian uint32 words, element k of a word in
// bits [k*bits, (k+1)*bits), so in byte terms a 4-bit row is low nibble first), bf16 scales and biases
// as []uint16 bit patterns, one per group of 64 inputs. Nothing dequantizes a whole matrix.
package cpu
