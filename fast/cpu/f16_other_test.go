//go:build !(goexperiment.simd && amd64)

package cpu

func hasF16CForTest() bool { return false }

func f16ToF32F16CForTest(dst []float32, src []uint16) {}
