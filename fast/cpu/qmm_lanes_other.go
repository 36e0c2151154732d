//go:build !(goexperiment.simd && amd64)

package cpu

// laneTranspose reports false: without the vector kernels the records are transposed in plain Go
// (laneTransposePortable).
func laneTranspose(dst []byte, dstStride int, src []byte, srcStride, half int, sums *[16]int32) bool {
	return false
}
