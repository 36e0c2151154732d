//go:build goexperiment.simd && amd64

package cpu

import (
	"encoding/binary"
	"simd/archsimd"
	"unsafe"
)

// The AVX-512 mat-mat (qmmPanelsSIMD512), which QMatMat uses for X past qmmLargeX (T·In ≥ 512K:
// the dense projections over a prefill chunk), is a GEMM-style outer-product kernel rather than a
// set of dot products. Thread mapping: the pool hands each worker ranges of 32-row panels. Per panel
// the worker dequantizes the 32 rows once into a transposed panel P: [In][32] float32 in element
// order (256 KB at In = 2048, L2-resident), then for each chunk of qmmKC input elements (32 KB of
// P, L1-resident) runs a 32-row × 6-token register tile over every block of 6 token rows (blocks
// of 2 for the last T mod 6), accumulating into the panel's output tile [T][32]. X is packed once
// per call (qmmPack512) into those token blocks, [In][6] each, so a tile reads per input element
// two 64-byte weight vectors and 6 token values (broadcast from memory) for 12 FMAs into 12
// accumulators, and stores whole vectors: no horizontal sums, no X permutation. Rows past Out are
// zero weights; the output tile is copied into Y once per panel.
//
// The tile is small because the compiler allocates only 16 vector registers here and uses the
// 213 form of FMA only (a 32 × 12 tile spilled half its accumulators). In L1 the tile runs at about
// 65 GFLOP/s on one core of the CI machine, no faster than the 256-bit 4 × 2 dot-product tile
// (tile4x2, about 62): its 512-bit FMAs run at one per cycle there. What it gains is memory
// traffic: the row-block kernel reads every token row once per 4 rows, from L3 once X outgrows
// L2, and drops to about 43 GFLOP/s per core at [1024, 4096] × T 512, where this one holds 60.
// Below qmmLargeX the row-block kernel is as fast or faster (less set-up per row). On two workers,
// BenchmarkQMatMat/q4_2048x2048_dense/T512: 117–119 GFLOP/s against 81–93 for the row-block kernel
// (simdRows). MeasurePeakFLOPs' problem (T·In = 64K) stays on the row-block kernel.

const (
	qmmPanel = 32  // output rows per panel (two 16-lane vectors)
	qmmTB    = 6   // tokens per full register tile
	qmmTBr   = 2   // tokens per remainder tile
	qmmKC    = 256 // input elements per pass over the token blocks: a 32 KB panel chunk stays in L1
)

// qmmBlockWidth is the width of the packed token block that starts at token tt of T: qmmTB while
// that many tokens remain, then qmmTBr (the last block padded). Block tt starts at float tt·In of
// the packed X.
func qmmBlockWidth(tt, t int) int {
	if t-tt >= qmmTB {
		return qmmTB
	}
	return qmmTBr
}

// qmmPackLen512 is the length of the packed X: whole blocks plus 4 floats of padding for the last
// broadcast's 16-byte load.
func qmmPackLen512(t, in int) int {
	tt := 0
	for tt < t {
		tt += qmmBlockWidth(tt, t)
	}
	return tt*in + 4
}

// qmmPack512 packs X: [T, In] into token blocks: the block of width w at token tt holds
// xp[tt·In + i·w + j] = x[(tt+j)·In + i], zero for tokens past T.
func qmmPack512(xp, x []float32, t, in, _ int) {
	for tt := 0; tt < t; {
		w := qmmBlockWidth(tt, t)
		blk := xp[tt*in : (tt+w)*in]
		for j := range w {
			if tt+j >= t {
				for i := range in {
					blk[i*w+j] = 0
				}
				continue
			}
			xr := x[(tt+j)*in : (tt+j+1)*in]
			for i, v := range xr {
				blk[i*w+j] = v
			}
		}
		tt += w
	}
	clear(xp[len(xp)-4:])
}

// qmmScratch512 is the per-worker scratch of qmmPanelsSIMD512 in float32s: the panel (32·In), the
// transposed packed words (at most 8·In uint32 for 8-bit), the scale and bias tables (In/2 each)
// and the panel's output tile ([T rounded up to a block][32]).
func qmmScratch512(t, in int) int { return 41*in + (t+qmmTBr)*qmmPanel }

// dequantPanel writes rows [o0, o0+n) of m (n ≤ 32; rows past n are zero), dequantized, into the
// panel pw: [In][32] float32 in element order. A scalar integer pass first transposes the packed
// words (wt[w][r] = word w of row o0+r) and the bf16 scales and biases (as float32 bit patterns,
// sb[g][r] and sb[G+g][r]); then each 16-lane word vector yields 8 (4-bit) or 4 (8-bit) weight
// vectors by shift, mask, convert and one FMA with the group's scale and bias vectors.
func dequantPanel(pw unsafe.Pointer, wt, sb []uint32, m *QMat, o0, n int) {
	archsimd.ClearAVXUpperBits()
	groups, rb := m.Groups(), m.RowBytes()
	words := rb / 4
	wt, sb = wt[:words*qmmPanel], sb[:2*groups*qmmPanel]
	for r := range qmmPanel {
		if r >= n {
			for w := range words {
				wt[w*qmmPanel+r] = 0
			}
			for g := range 2 * groups {
				sb[g*qmmPanel+r] = 0
			}
			continue
		}
		o := o0 + r
		row := m.W[o*rb : (o+1)*rb]
		for w := range words {
			wt[w*qmmPanel+r] = binary.LittleEndian.Uint32(row[4*w:])
		}
		sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
		for g := range groups {
			sb[g*qmmPanel+r] = uint32(sc[g]) << 16
			sb[(groups+g)*qmmPanel+r] = uint32(bi[g]) << 16
		}
	}
	pq := unsafe.Pointer(unsafe.SliceData(wt))
	ps := unsafe.Pointer(unsafe.SliceData(sb))
	pb := unsafe.Add(ps, 4*groups*qmmPanel)
	per := 32 / m.Bits     // elements per word
	wpg := GroupSize / per // words per group
	mask := archsimd.BroadcastUint32x16(1<<m.Bits - 1)
	sh := archsimd.BroadcastUint32x16(uint32(m.Bits))
	for w := range words {
		g := w / wpg
		for h := range 2 {
			off := 4 * (g*qmmPanel + 16*h)
			s := u32x16(unsafe.Add(ps, off)).AsFloat32x16()
			b := u32x16(unsafe.Add(pb, off)).AsFloat32x16()
			q := u32x16(unsafe.Add(pq, 4*(w*qmmPanel+16*h)))
			d := unsafe.Add(pw, 4*(w*per*qmmPanel+16*h))
			for k := range per {
				q.And(mask).ConvertToFloat32().MulAdd(s, b).Store((*[16]float32)(unsafe.Add(d, 4*k*qmmPanel)))
				q = q.ShiftRight(sh)
			}
		}
	}
}

// u32x16 loads 16 uint32 at p.
func u32x16(p unsafe.Pointer) archsimd.Uint32x16 {
	return archsimd.LoadUint32x16((*[16]uint32)(p))
}

// qmmPanelsSIMD512 computes rows [lo, hi) of Y: [T, Out] = X · Wᵀ (lo a multiple of 32) from the
// packed X xp (qmmPack512); see the note at the top of this file.
func qmmPanelsSIMD512(y []float32, m *QMat, xp []float32, t int, buf []float32, lo, hi int) {
	in, out := m.In, m.Out
	buf = buf[:qmmScratch512(t, in)]
	pw := unsafe.Pointer(unsafe.SliceData(buf))
	wt := unsafe.Slice((*uint32)(unsafe.Pointer(&buf[qmmPanel*in])), 8*in)
	sb := unsafe.Slice((*uint32)(unsafe.Pointer(&buf[40*in])), in)
	yp := buf[41*in:]
	py0 := unsafe.Pointer(unsafe.SliceData(yp))
	px0 := unsafe.Pointer(unsafe.SliceData(xp))
	for o0 := lo; o0 < hi; o0 += qmmPanel {
		n := min(qmmPanel, hi-o0)
		dequantPanel(pw, wt, sb, m, o0, n)
		for k0 := 0; k0 < in; k0 += qmmKC {
			kn := min(qmmKC, in-k0)
			for tt := 0; tt < t; {
				w := qmmBlockWidth(tt, t)
				px := unsafe.Add(px0, 4*(tt*in+k0*w)) // block tt starts at float tt·In
				py := unsafe.Add(py0, 4*tt*qmmPanel)
				if w == qmmTB {
					tile32x6(unsafe.Add(pw, 4*k0*qmmPanel), px, kn, py, k0 > 0)
				} else {
					tile32x2(unsafe.Add(pw, 4*k0*qmmPanel), px, kn, py, k0 > 0)
				}
				tt += w
			}
		}
		archsimd.ClearAVXUpperBits()
		for j := range t {
			copy(y[j*out+o0:j*out+o0+n], yp[j*qmmPanel:j*qmmPanel+n])
		}
	}
}

// tile32x6 adds the 32-row × 6-token product of kn input elements to the output tile py
// ([6][32] float32; zero instead of its old value unless acc): pw is the panel at the chunk's first
// element ([kn][32] float32), px the token block there ([kn][6] float32). Per input element two
// 16-row weight vectors and 6 broadcast token values feed 12 FMAs into 12 accumulators; the
// compiler allocates only 16 vector registers here, so a larger tile spills. It is a separate
// function so that the compiler keeps every accumulator in a register.
func tile32x6(pw, px unsafe.Pointer, kn int, py unsafe.Pointer, acc bool) {
	var c0a, c0b, c1a, c1b, c2a, c2b, c3a, c3b, c4a, c4b, c5a, c5b archsimd.Float32x16
	if acc {
		c0a, c0b = f32x16(unsafe.Add(py, 0)), f32x16(unsafe.Add(py, 64))
		c1a, c1b = f32x16(unsafe.Add(py, 128)), f32x16(unsafe.Add(py, 192))
		c2a, c2b = f32x16(unsafe.Add(py, 256)), f32x16(unsafe.Add(py, 320))
		c3a, c3b = f32x16(unsafe.Add(py, 384)), f32x16(unsafe.Add(py, 448))
		c4a, c4b = f32x16(unsafe.Add(py, 512)), f32x16(unsafe.Add(py, 576))
		c5a, c5b = f32x16(unsafe.Add(py, 640)), f32x16(unsafe.Add(py, 704))
	}
	for range kn {
		w0, w1 := f32x16(pw), f32x16(unsafe.Add(pw, 64))
		b := bcast16(px)
		c0a, c0b = w0.MulAdd(b, c0a), w1.MulAdd(b, c0b)
		b = bcast16(unsafe.Add(px, 4))
		c1a, c1b = w0.MulAdd(b, c1a), w1.MulAdd(b, c1b)
		b = bcast16(unsafe.Add(px, 8))
		c2a, c2b = w0.MulAdd(b, c2a), w1.MulAdd(b, c2b)
		b = bcast16(unsafe.Add(px, 12))
		c3a, c3b = w0.MulAdd(b, c3a), w1.MulAdd(b, c3b)
		b = bcast16(unsafe.Add(px, 16))
		c4a, c4b = w0.MulAdd(b, c4a), w1.MulAdd(b, c4b)
		b = bcast16(unsafe.Add(px, 20))
		c5a, c5b = w0.MulAdd(b, c5a), w1.MulAdd(b, c5b)
		pw, px = unsafe.Add(pw, 128), unsafe.Add(px, 24)
	}
	c0a.Store((*[16]float32)(unsafe.Add(py, 0)))
	c0b.Store((*[16]float32)(unsafe.Add(py, 64)))
	c1a.Store((*[16]float32)(unsafe.Add(py, 128)))
	c1b.Store((*[16]float32)(unsafe.Add(py, 192)))
	c2a.Store((*[16]float32)(unsafe.Add(py, 256)))
	c2b.Store((*[16]float32)(unsafe.Add(py, 320)))
	c3a.Store((*[16]float32)(unsafe.Add(py, 384)))
	c3b.Store((*[16]float32)(unsafe.Add(py, 448)))
	c4a.Store((*[16]float32)(unsafe.Add(py, 512)))
	c4b.Store((*[16]float32)(unsafe.Add(py, 576)))
	c5a.Store((*[16]float32)(unsafe.Add(py, 640)))
	c5b.Store((*[16]float32)(unsafe.Add(py, 704)))
}

// tile32x2 is tile32x6 for a block of 2 tokens ([kn][2] float32, py [2][32]): 4 accumulators.
func tile32x2(pw, px unsafe.Pointer, kn int, py unsafe.Pointer, acc bool) {
	var c0a, c0b, c1a, c1b archsimd.Float32x16
	if acc {
		c0a, c0b = f32x16(unsafe.Add(py, 0)), f32x16(unsafe.Add(py, 64))
		c1a, c1b = f32x16(unsafe.Add(py, 128)), f32x16(unsafe.Add(py, 192))
	}
	for range kn {
		w0, w1 := f32x16(pw), f32x16(unsafe.Add(pw, 64))
		b := bcast16(px)
		c0a, c0b = w0.MulAdd(b, c0a), w1.MulAdd(b, c0b)
		b = bcast16(unsafe.Add(px, 4))
		c1a, c1b = w0.MulAdd(b, c1a), w1.MulAdd(b, c1b)
		pw, px = unsafe.Add(pw, 128), unsafe.Add(px, 8)
	}
	c0a.Store((*[16]float32)(unsafe.Add(py, 0)))
	c0b.Store((*[16]float32)(unsafe.Add(py, 64)))
	c1a.Store((*[16]float32)(unsafe.Add(py, 128)))
	c1b.Store((*[16]float32)(unsafe.Add(py, 192)))
}
