//go:build goexperiment.simd && amd64

package cpu

func hasF16CForTest() bool { return hasF16C() }

// f16ToF32F16CForTest widens src (len a multiple of 8) with the F16C kernel.
func f16ToF32F16CForTest(dst []float32, src []uint16) { f16ToF32F16C(&dst[0], &src[0], len(src)) }
