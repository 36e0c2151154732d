//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// f16ToF32SIMD widens fp16 to float32 16 values at a time with AVX-512 (VCVTPH2PS, exact), the
// tail and CPUs without AVX-512 in plain Go.
func f16ToF32SIMD(dst []float32, src []uint16) {
	n16 := len(src) &^ 15
	if n16 > 0 && archsimd.X86.AVX512() {
		f16ToF32Asm(&dst[0], &src[0], n16)
	} else {
		n16 = 0
	}
	f16ToF32Portable(dst[n16:len(src)], src[n16:])
}

// f16ToF32SIMD256 is f16ToF32SIMD for CPUs with F16C but not AVX-512 (simdImpl checks F16C): 8
// values at a time, the tail in plain Go.
func f16ToF32SIMD256(dst []float32, src []uint16) {
	n8 := len(src) &^ 7
	if n8 > 0 {
		f16ToF32F16C(&dst[0], &src[0], n8)
	}
	f16ToF32Portable(dst[n8:len(src)], src[n8:])
}

// f32ToF16SIMD narrows float32 to fp16 16 values at a time with AVX-512 (VCVTPS2PH, round to
// nearest even: bit for bit safetensors.Float32ToF16), the tail and CPUs without AVX-512 in plain Go.
func f32ToF16SIMD(dst []uint16, src []float32) {
	n16 := len(src) &^ 15
	if n16 > 0 && archsimd.X86.AVX512() {
		f32ToF16Asm(&dst[0], &src[0], n16)
	} else {
		n16 = 0
	}
	f32ToF16Portable(dst[n16:len(src)], src[n16:])
}

//go:noescape
func f16ToF32Asm(dst *float32, src *uint16, n int)

//go:noescape
func f32ToF16Asm(dst *uint16, src *float32, n int)

//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n int)

func hasF16C() bool
