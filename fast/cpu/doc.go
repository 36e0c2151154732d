// Package cpu holds lily's CPU kernels: fused-dequantization mat-vec and mat-mat over MLX affine
// 4/8-bit group-64 weights (model.md §3), a bf16 dense mat-vec, the small vector helpers a decode
// step needs, a fixed worker pool, and the machine measurements (read bandwidth, kernel peak) that
// the bench command reports fractions against.
//
// Every kernel has a portable pure-Go version. Built with GOEXPERIMENT=simd on amd64, a second
// version written with simd/archsimd (AVX2+FMA) is used when the CPU has those features; the choice
// is made once in [New]. [NewPortable] forces the portable version (tests compare the two).
//
// Weights stay in their stored form: packed []byte (little-endian uint32 words, element k of a word in
// bits [k*bits, (k+1)*bits), so in byte terms a 4-bit row is low nibble first), bf16 scales and biases
// as []uint16 bit patterns, one per group of 64 inputs. Nothing dequantizes a whole matrix.
package cpu
