//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// A note on the code in the *_simd_amd64.go files. The Go compiler does not emit VZEROUPPER, and
// it encodes scalar float32 code and GPR→XMM moves with legacy SSE instructions. On the machines
// lily runs CI on, one legacy SSE instruction executed while the upper halves of the YMM registers
// are dirty costs about 500 ns. So the hot loops below are pure VEX code: shift counts are vectors
// (VPSRLVD, not VPSRLD with a count moved from a GPR), scales are broadcast from memory, row
// results leave through vector stores, and every kernel calls archsimd.ClearAVXUpperBits before it
// returns to scalar Go code.

// haveSIMD reports whether the archsimd kernels can run: they use AVX2 integer ops and FMA.
func haveSIMD() bool { return archsimd.X86.AVX2() && archsimd.X86.FMA() }

// simdImpl returns the archsimd kernels: the 512-bit mat-vecs, axpy and scaleAxpy, and the 512-bit
// row-block mat-mat (qmmRowsSIMD512) where the CPU has AVX-512 and level allows, and the VNNI 4-bit
// mat-vec where it also has AVX-512 VNNI and level is levelBest (and the 8-bit one where it has
// VBMI too); tests run the lower levels on machines that have more.
func simdImpl(level simdLevel) impl {
	q4, q16, q8 := qmv4RowsSIMD, qmvQ16RowsSIMD, qmv8RowsSIMD
	axpy, scaleAxpy := axpySIMD, scaleAxpySIMD
	rows := qmmRowsSIMD
	var readSumPF func([]uint64) uint64
	vnni, vnni8 := false, false
	var q4Next, q8Next nextRowsFunc
	var tile qmmTileFunc
	var tileRows qmmTileRowsFunc
	var lanes qmmLanesFunc
	var repack laneRepackFunc
	var quad qmmLanesQuadFunc
	var quads laneQuadsFunc
	// The fp16 KV cache: read inside the AVX-512 tiles; elsewhere widened with F16C where the CPU
	// has it (every AVX2 CPU lily knows of; a virtual machine may hide it), else in plain Go.
	fromF16 := f16ToF32Portable
	if hasF16C() {
		fromF16 = f16ToF32SIMD256
	}
	var scoreF16 func(s, q []float32, m, d int, keys []uint16, ks, n int, scratch []float32, vals []uint16)
	var accumF16 func(o []float32, m, d int, p []float32, n int, v []uint16, vs int, scratch []float32)
	if archsimd.X86.AVX512() && level >= level512 { // level256: the tests' F16C path
		fromF16, scoreF16, accumF16 = f16ToF32SIMD, scoreTileF16SIMD, accumTileF16SIMD
	}
	if archsimd.X86.AVX512() && level >= level512 {
		rows = qmmRowsSIMD512
		q4, q16 = qmv4RowsSIMD512, qmvQ16RowsSIMD512
		axpy, scaleAxpy = axpySIMD512, scaleAxpySIMD512
		readSumPF = readSum512
		if archsimd.X86.AVX512VNNI() && level >= levelBest {
			q4, q4Next, vnni, tile, tileRows, lanes = qmv4RowsVNNI, qmv4RowsVNNINext, true, qmm4TileVNNI, qmm4RowsVNNI, qmmLanes
			repack, quad, quads = laneRepack, qmmLanesQuad, laneQuadsOuter
			if archsimd.X86.AVX512VBMI() {
				q8, q8Next, vnni8 = qmv8RowsVNNI, qmv8RowsVNNINext, true
			}
		}
	}
	return impl{
		qmv4:         q4,
		qmv8:         q8,
		qmv4Next:     q4Next,
		qmv8Next:     q8Next,
		vnni8:        vnni8,
		qmvQ16:       q16,
		dot:          dotSIMD,
		axpy:         axpy,
		scaleAxpy:    scaleAxpy,
		bf16mv:       bf16RowsSIMD,
		qmm:          rows,
		qmmPerm:      true,
		vnni:         vnni,
		qmmTile:      tile,
		qmmTileRows:  tileRows,
		qmmLanes:     lanes,
		laneRepack:   repack,
		qmmLanesQuad: quad,
		laneQuads:    quads,
		readSum:      readSumSIMD,
		readSumPF:    readSumPF,
		siluMul:      siluMulSIMD,
		sigmoidMul:   sigmoidMulSIMD,
		rmsNorm64:    rmsNorm64SIMD,
		dots:         dotsSIMD,
		expShift:     expShiftSIMD,
		axpyRows:     axpyRowsSIMD,
		scoreTile:    scoreTileSIMD,
		accumTile:    accumTileSIMD,
		deltaUpdate:  deltaUpdateSIMD,
		maxOf:        maxOfSIMD,
		argmax:       argmaxSIMD,
		toF16:        f32ToF16SIMD,
		fromF16:      fromF16,
		expTiny:      expTinySIMD,
		scaleRows:    scaleRowsSIMD,
		causalDecay:  causalDecaySIMD,
		accumTileT:   accumTileTSIMD,

		unitLowerInverse: unitLowerInverseSIMD,
		accumTileLower:   accumTileLowerSIMD,
		gatedScale:       gatedScaleSIMD,
		mulAdd:           mulAddSIMD,
		convSiLU4:        convSiLU4SIMD,
		scoreTileLower:   scoreTileLowerSIMD,
		scoreTileF16:     scoreF16,
		accumTileF16:     accumF16,
	}
}

// f32x8 loads 8 float32 at p (no bounds check: callers validate shapes once per call).
func f32x8(p unsafe.Pointer) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(p))
}

// bcast loads the float32 at p into all 8 lanes (p must have 3 readable float32 after it).
func bcast(p unsafe.Pointer) archsimd.Float32x8 {
	return archsimd.LoadFloat32x4((*[4]float32)(p)).Broadcast1To8()
}

// bf16x8 loads 8 bf16 at p and widens them to float32; c16 holds 16 in every lane.
func bf16x8(p unsafe.Pointer, c16 archsimd.Uint32x8) archsimd.Float32x8 {
	return archsimd.LoadUint16x8((*[8]uint16)(p)).ExtendToUint32().ShiftLeft(c16).AsFloat32x8()
}

// reduce8 returns [Σ r[0], …, Σ r[7]]: the lane sums of 8 vectors, as one vector.
func reduce8(r *[8]archsimd.Float32x8) archsimd.Float32x8 {
	t0 := r[0].AddPairsGrouped(r[1])
	t1 := r[2].AddPairsGrouped(r[3])
	t2 := r[4].AddPairsGrouped(r[5])
	t3 := r[6].AddPairsGrouped(r[7])
	u0 := t0.AddPairsGrouped(t1) // per 128-bit half: partial sums of r0..r3
	u1 := t2.AddPairsGrouped(t3) // of r4..r7
	return u0.Select128FromPair(0, 2, u1).Add(u0.Select128FromPair(1, 3, u1))
}

// storeRows writes the lane sums of r[0..n) to y[0..n) and clears the upper YMM state.
func storeRows(y []float32, r *[8]archsimd.Float32x8, n int) {
	s := reduce8(r)
	if n == 8 {
		s.Store((*[8]float32)(y[:8]))
		archsimd.ClearAVXUpperBits()
		return
	}
	var t [8]float32
	s.Store(&t)
	archsimd.ClearAVXUpperBits()
	copy(y[:n], t[:n])
}

// hsum returns the sum of the lanes of v and clears the upper YMM state (for scalar results).
func hsum(v archsimd.Float32x8) float32 {
	var t [8]float32
	v.Store(&t)
	archsimd.ClearAVXUpperBits()
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))
}

// readSumSIMD returns a wrapping lane-wise sum of x folded to one word: 128 bytes a step in four
// 256-bit loads.
func readSumSIMD(x []uint64) uint64 {
	n := len(x) * 8
	if n == 0 {
		return 0
	}
	p := unsafe.Pointer(&x[0])
	var s0, s1, s2, s3 archsimd.Uint32x8
	i := 0
	for ; i+128 <= n; i += 128 {
		s0 = s0.Add(archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(p, i))))
		s1 = s1.Add(archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(p, i+32))))
		s2 = s2.Add(archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(p, i+64))))
		s3 = s3.Add(archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(p, i+96))))
	}
	var out [8]uint32
	s0.Add(s1).Add(s2.Add(s3)).Store(&out)
	archsimd.ClearAVXUpperBits()
	var s uint64
	for _, e := range out {
		s += uint64(e)
	}
	for j := i / 8; j < len(x); j++ {
		s += x[j]
	}
	return s
}

// clearUpper returns the upper vector state to clean (VZEROUPPER). The pool calls it before every
// task: besides kernels, the Go runtime dirties it — its asynchronous preemption restores all ZMM
// registers and returns without VZEROUPPER — and a task of plain Go float code (convolutions, the
// chunked delta rule, attention) would then run about 100 times slower (see the note above).
func clearUpper() { archsimd.ClearAVXUpperBits() }
