package cpu

import "github.com/lily-engine/lily/internal/safetensors"

// qmmRowBlock is the number of output rows dequantized together by the mat-mat: the block's
// dequantized weights (qmmRowBlock × In float32, 32 KB at In = 2048) stay in L1/L2 while every
// token row is multiplied with them.
const qmmRowBlock = 4

// qmmScratchRows is the rows of each worker's dequantization scratch: the kernels' largest block
// (qmmWideRows on the 512-bit kernels).
const qmmScratchRows = 16

// qmmRowsFunc is a mat-mat kernel: rows [lo, hi) of Y (lo a multiple of qmmRowBlock) from X, with
// at least qmmRowBlock·In float32s of scratch in buf (QMatMat gives qmmScratchRows·In; a kernel
// runs its larger blocks only where buf holds them).
type qmmRowsFunc func(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int)

// qmmLargeX is the default size of X (T·In elements, 2 MB of float32: a core's L2) from which
// QMatMat runs in blocks of qmmTokenBlock tokens. The row-block kernels re-read every token row
// for each block of 4 weight rows, which past L2 comes from L3; in blocks of 64 tokens X stays in
// L2 and each weight row is dequantized once per block, as for an expert that 64 tokens chose
// (BenchmarkQMatMat/q4_2048x2048_dense/T512 compares the blocked and unblocked runs).
const qmmLargeX = 1 << 19

// qmmTokenBlock is the token count of one block of a large-X QMatMat (Kernels.tokenBlock). The
// integer GEMM takes blocks of twice as many (tokenBlockFor): each block writes the weights out in
// lane order once (laneRepack), so larger blocks write them fewer times, while the block's token
// records should stay in L2. At 4,096 inputs blocks of 64 ran 3–4% slower than of 128, and at 512
// blocks of 256 5% slower (BenchmarkQMatMatIntBlocks; 2,048 inputs: all within 2%).
const qmmTokenBlock = 64

// tokenBlockFor returns the token block of large-X mat-mats of m (see qmmTokenBlock).
func (k *Kernels) tokenBlockFor(m *QMat) int {
	if k.intGEMM(m) {
		return 2 * k.tokenBlock
	}
	return k.tokenBlock
}

// qmmPermute prepares X for the SIMD kernels: each group in unpack order.
func qmmPermute(xp, x []float32, bits int) {
	for g := 0; g < len(x); g += GroupSize {
		if bits == 4 {
			permute4(xp[g:g+GroupSize], x[g:g+GroupSize])
		} else {
			permute8(xp[g:g+GroupSize], x[g:g+GroupSize])
		}
	}
}

// qmmTask is the pool task of one quantized mat-mat; items are blocks of qmmRowBlock output rows.
type qmmTask struct {
	k *Kernels
	y []float32
	m *QMat
	x []float32
	t int
}

func (t *qmmTask) Do(w, lo, hi int) {
	t.k.f.qmm(t.y, t.m, t.x, t.t, t.k.buf[w], lo*qmmRowBlock, min(hi*qmmRowBlock, t.m.Out))
}

// QMatMat computes Y: [T, Out] = X: [T, In] · W: [Out, In]ᵀ for a 4- or 8-bit matrix: the prefill
// product of several token rows with one (expert's) matrix. The impl's kernel gets X packed as it
// wants it; each worker takes blocks of 4 output rows, dequantizes a block once (w = scale·q + bias
// in float32) into its scratch, and multiplies every token row with it. Past qmmLargeX the tokens
// run in blocks of qmmTokenBlock.
func (k *Kernels) QMatMat(y []float32, m *QMat, x []float32, t int) {
	k.checkMM(y, m, x, t)
	if tb := k.tokenBlockFor(m); t > tb && t*m.In >= k.largeX {
		for t0 := 0; t0 < t; t0 += tb {
			n := min(tb, t-t0)
			k.QMatMat(y[t0*m.Out:], m, x[t0*m.In:(t0+n)*m.In], n)
		}
		return
	}
	if k.intGEMM(m) {
		k.one[0] = MatMat{Y: y, M: m}
		k.qmmInt(x[:t*m.In], t, k.one[:])
		k.one[0] = MatMat{}
		return
	}
	if need := qmmScratchRows * m.In; len(k.buf[0]) < need {
		for i := range k.buf {
			k.buf[i] = make([]float32, need)
		}
	}
	x = x[:t*m.In]
	if k.f.qmmPerm {
		if len(k.xperm) < len(x) {
			k.xperm = make([]float32, len(x))
		}
		qmmPermute(k.xperm[:len(x)], x, m.Bits)
		x = k.xperm[:len(x)]
	}
	k.mm = qmmTask{k: k, y: y, m: m, x: x, t: t}
	k.pool.RunTask((m.Out+qmmRowBlock-1)/qmmRowBlock, &k.mm)
	k.mm = qmmTask{}
}

// dequantRow writes row o of m, dequantized, in element order: dst[i] = scale·q_i + bias.
func dequantRow(dst []float32, m *QMat, o int) {
	groups, rb := m.Groups(), m.RowBytes()
	row := m.W[o*rb : (o+1)*rb]
	for g := range groups {
		s, b := safetensors.BF16ToFloat32(m.Scales[o*groups+g]), safetensors.BF16ToFloat32(m.Biases[o*groups+g])
		d := dst[g*GroupSize : (g+1)*GroupSize]
		if m.Bits == 4 {
			for j, p := range row[g*32 : g*32+32] {
				d[2*j] = s*float32(p&15) + b
				d[2*j+1] = s*float32(p>>4) + b
			}
		} else {
			for j, p := range row[g*64 : g*64+64] {
				d[j] = s*float32(p) + b
			}
		}
	}
}

// qmmRowsPortable computes rows [lo, hi) of Y: [T, Out] = X: [T, In] · Wᵀ, dequantizing blocks of
// qmmRowBlock rows into buf (qmmRowBlock × In).
func qmmRowsPortable(y []float32, m *QMat, x []float32, t int, buf []float32, lo, hi int) {
	in := m.In
	for o0 := lo; o0 < hi; o0 += qmmRowBlock {
		n := min(qmmRowBlock, hi-o0)
		for r := range n {
			dequantRow(buf[r*in:(r+1)*in], m, o0+r)
		}
		for tt := range t {
			xr := x[tt*in : (tt+1)*in]
			for r := range n {
				y[tt*m.Out+o0+r] = dotPortable(buf[r*in:(r+1)*in], xr)
			}
		}
	}
}

// permute4 writes the 64 values of one group in 4-bit unpack order: word j of the group holds
// elements 8j..8j+7, and nibble k of all 8 words is one vector, so dst[8k+j] = src[8j+k].
func permute4(dst, src []float32) {
	for k := range 8 {
		for j := range 8 {
			dst[k*8+j] = src[8*j+k]
		}
	}
}

// permute16 is permute4 for a pair of groups read as one 64-byte vector of 16 words: nibble k of
// the 16 words (elements 8j+k of the pair) is one vector, so dst[16k+j] = src[8j+k].
func permute16(dst, src []float32) {
	for k := range 8 {
		for j := range 16 {
			dst[k*16+j] = src[8*j+k]
		}
	}
}

// permute8 is permute4 for 8-bit words: each 32-byte half h holds 8 words of 4 elements, and
// byte k of the 8 words is one vector, so dst[32h+8k+j] = src[32h+4j+k].
func permute8(dst, src []float32) {
	for h := range 2 {
		for k := range 4 {
			for j := range 8 {
				dst[h*32+k*8+j] = src[32*h+4*j+k]
			}
		}
	}
}
