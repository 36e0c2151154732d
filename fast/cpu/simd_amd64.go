//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// haveSIMD reports whether the archsimd kernels can run: they use AVX2 integer ops and FMA.
func haveSIMD() bool { return archsimd.X86.AVX2() && archsimd.X86.FMA() }

// simdImpl returns the archsimd kernels.
func simdImpl() impl {
	return impl{
		qmv4:   qmv4RowsSIMD,
		qmv8:   qmv8RowsSIMD,
		qmvQ8:  qmvQ8RowsSIMD,
		dot:    dotSIMD,
		axpy:   axpySIMD,
		bf16mv: bf16RowsSIMD,
		qmm4:   qmm4RowsSIMD,
	}
}

// hsum returns the sum of the 8 lanes of v.
func hsum(v archsimd.Float32x8) float32 {
	s := v.GetLo().Add(v.GetHi())
	s = s.AddPairs(s)
	s = s.AddPairs(s)
	return s.GetElem(0)
}

// f32x8 loads 8 float32 at p (no bounds check: callers validate shapes once per call).
func f32x8(p unsafe.Pointer) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(p))
}

// bf16x8 loads 8 bf16 at p and widens them to float32.
func bf16x8(p unsafe.Pointer) archsimd.Float32x8 {
	return archsimd.LoadUint16x8((*[8]uint16)(p)).ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
}

// biasDot returns Σ_g bias[g]·sum[g] over groups (a multiple of 8 handled in vectors, the rest scalar).
func biasDot(bias []uint16, sum []float32) float32 {
	var acc archsimd.Float32x8
	g := 0
	for ; g+8 <= len(bias); g += 8 {
		acc = bf16x8(unsafe.Pointer(&bias[g])).MulAdd(f32x8(unsafe.Pointer(&sum[g])), acc)
	}
	s := hsum(acc)
	for ; g < len(bias); g++ {
		s += BF16(bias[g]) * sum[g]
	}
	return s
}
