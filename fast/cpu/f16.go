package cpu

import (
	"github.com/lily-engine/lily/internal/safetensors"
)

// The KV cache in IEEE half precision (fp16): keys and values are stored as uint16 bit patterns,
// converted on append (F16Row, round to nearest even) and read back into float32 by the tiles.
// fp16 keeps 10 mantissa bits (bf16 7): |x − fp16(x)| ≤ 2^-11·|x| for normal values; post-norm keys
// and values sit far below fp16's largest finite value (65504) and above its smallest normal
// (6.1e-5) in all but a sliver of their elements, where the absolute error is at most 2^-25.

func f32ToF16Portable(dst []uint16, src []float32) {
	for i, f := range src {
		dst[i] = safetensors.Float32ToF16(f)
	}
}

func f16ToF32Portable(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = safetensors.F16ToFloat32(h)
	}
}

// F16Row converts src into dst: [len(src)] fp16, rounding to nearest even: the KV cache's append.
func (k *Kernels) F16Row(dst []uint16, src []float32) {
	if len(dst) < len(src) {
		panic("cpu: F16Row: destination shorter than the source")
	}
	k.f.toF16(dst[:len(src)], src)
}

// widenRows converts n rows of d fp16 values at stride rs into scratch: [n, d] float32.
func (k *Kernels) widenRows(scratch []float32, rows []uint16, rs, d, n int) []float32 {
	if len(scratch) < n*d {
		panic("cpu: fp16 tile: scratch shorter than n·d")
	}
	if rs == d {
		k.f.fromF16(scratch[:n*d], rows[:n*d])
		return scratch[:n*d]
	}
	for j := range n {
		k.f.fromF16(scratch[j*d:(j+1)*d], rows[j*rs:j*rs+d])
	}
	return scratch[:n*d]
}

// ScoreTileF16 is ScoreTile against keys stored as fp16 (keys: n rows of d at stride ks). The SIMD
// kernels read the fp16 keys inside their register tiles where the shapes allow; otherwise the keys
// are widened into scratch ([n, d] float32, at least n·d; the caller's, so that concurrent callers
// share nothing) and the float32 tile runs on them. Either way the conversion is exact and the
// scores are those of the float32 tile on the widened keys, bit for bit. s: [m, n]. vals, when
// not nil, are the n value rows that the scores will weight (at stride ks, as the keys): the SIMD
// tiles prefetch them into L2 while they compute, as they do the keys ahead of the tile.
func (k *Kernels) ScoreTileF16(s, q []float32, m, d int, keys []uint16, ks, n int, scratch []float32, vals []uint16) {
	if m <= 0 || n <= 0 {
		return
	}
	if len(s) < m*n || len(q) < m*d || ks < d || len(keys) < (n-1)*ks+d {
		panic("cpu: ScoreTileF16: buffers too short for the shapes")
	}
	if k.f.scoreTileF16 != nil {
		k.f.scoreTileF16(s, q, m, d, keys, ks, n, scratch, vals)
		return
	}
	k.f.scoreTile(s, q, m, d, k.widenRows(scratch, keys, ks, d, n), d, n)
}

// AccumTileF16 is AccumTile with values stored as fp16 (v: n rows of d at stride vs): read inside
// the SIMD register tiles where the shapes allow, else widened into scratch ([n, d] float32) first;
// bit for bit AccumTile on the widened values either way. p: [m, n], o: [m, d].
func (k *Kernels) AccumTileF16(o []float32, m, d int, p []float32, n int, v []uint16, vs int, scratch []float32) {
	if m <= 0 || n <= 0 {
		return
	}
	if len(o) < m*d || len(p) < m*n || vs < d || len(v) < (n-1)*vs+d {
		panic("cpu: AccumTileF16: buffers too short for the shapes")
	}
	if k.f.accumTileF16 != nil {
		k.f.accumTileF16(o, m, d, p, n, v, vs, scratch)
		return
	}
	k.f.accumTile(o, m, d, p, n, k.widenRows(scratch, v, vs, d, n), d)
}
