package fast

import "github.com/lily-engine/lily/fast/cpu"

// kvCache is one attention layer's cache: rows of Hkv·D post-norm post-RoPE keys and of values,
// one per position. By default it holds IEEE half precision (cpu.Kernels.F16Row on append, round
// to nearest even): half the bytes of float32 for attention to read and for sessions and
// snapshots to hold, within conformance's fp16 KV budget. Options.KVCacheF32 keeps float32, the
// exact path that the transformers goldens check to 1e-3.
type kvCache struct {
	k, v   []uint16  // fp16: [len, Hkv*D]
	kf, vf []float32 // float32 (Options.KVCacheF32): [len, Hkv*D]
	f32    bool
}

// kvGrowTokens is the step in which a cache grows, so that decode allocates once per this many
// tokens.
const kvGrowTokens = 1024

// grow returns x with length n and capacity for at least n, copying x when it must reallocate.
func grow[T float32 | uint16](x []T, n, step int) []T {
	if cap(x) < n {
		y := make([]T, len(x), (n/step+1)*step)
		copy(y, x)
		x = y
	}
	return x[:n]
}

// reserve sets the cache's length to n rows of w values, growing its storage in steps of
// kvGrowTokens rows.
func (c *kvCache) reserve(n, w int) {
	if c.f32 {
		c.kf, c.vf = grow(c.kf, n*w, kvGrowTokens*w), grow(c.vf, n*w, kvGrowTokens*w)
		return
	}
	c.k, c.v = grow(c.k, n*w, kvGrowTokens*w), grow(c.v, n*w, kvGrowTokens*w)
}

// put writes the rows of keys and values (both [t, w], float32) at rows pos … pos+t−1.
func (c *kvCache) put(k *cpu.Kernels, pos, w int, keys, vals []float32) {
	at, end := pos*w, pos*w+len(keys)
	if c.f32 {
		copy(c.kf[at:end], keys)
		copy(c.vf[at:end], vals)
		return
	}
	k.F16Row(c.k[at:end], keys)
	k.F16Row(c.v[at:end], vals)
}

// clone is a deep copy (nil for nil: layers without attention).
func (c *kvCache) clone() *kvCache {
	if c == nil {
		return nil
	}
	return &kvCache{f32: c.f32, k: exact(c.k), v: exact(c.v), kf: exact(c.kf), vf: exact(c.vf)}
}

// exact is a copy of x with capacity len(x) (append may round up), nil for empty.
func exact[T float32 | uint16](x []T) []T {
	if len(x) == 0 {
		return nil
	}
	y := make([]T, len(x))
	copy(y, x)
	return y
}

// scoreTile: s: [m, n] = q: [m, d] times n cached keys from element off at stride ks; scratch:
// [n, d] float32 the fp16 keys are widened into.
func (c *kvCache) scoreTile(ops vecOps, s, q []float32, m, d, off, ks, n int, scratch []float32) {
	if c.f32 {
		ops.scoreTile(s, q, m, d, c.kf[off:], ks, n)
		return
	}
	ops.scoreTileF16(s, q, m, d, c.k[off:], ks, n, scratch, c.v[off:])
}

// accumTile: o: [m, d] += p: [m, n] times n cached values from element off at stride vs; scratch:
// [n, d] float32 the fp16 values are widened into.
func (c *kvCache) accumTile(ops vecOps, o []float32, m, d int, p []float32, n, off, vs int, scratch []float32) {
	if c.f32 {
		ops.accumTile(o, m, d, p, n, c.vf[off:], vs)
		return
	}
	ops.accumTileF16(o, m, d, p, n, c.v[off:], vs, scratch)
}

// bytes is the cache's resident size (its capacity).
func (c *kvCache) bytes() int {
	return 2*(cap(c.k)+cap(c.v)) + 4*(cap(c.kf)+cap(c.vf))
}
