//go:build !(goexperiment.simd && amd64)

package cpu

// haveSIMD is false: this build has no archsimd kernels (plain go build, or not amd64).
func haveSIMD() bool { return false }

// simdImpl is never called when haveSIMD is false.
func simdImpl(simdLevel) impl { return portableImpl() }

// clearUpper has nothing to clear without the archsimd kernels.
func clearUpper() {}

// limbsSIMD is unavailable: Vec.limbsInto runs its portable loop.
func limbsSIMD(*Vec, []int8, limbLayout, []float32) bool { return false }

// recordPatternsSIMD is unavailable: limbRecords.fill runs recordPatterns.
func recordPatternsSIMD([]byte, []float32, int, float32, *limbConsts) bool { return false }

// groupSums is groupSumsPortable in this build.
func groupSums(sum, x []float32) { groupSumsPortable(sum, x) }
