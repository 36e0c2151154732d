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
	// shared is set while snapshots share these arrays (kv_share.go): rows they cover are
	// written only by copying the arrays first. nil: the arrays are this cache's alone.
	shared *kvShare
}

// kvGrowTokens is the step in which a cache grows, so that decode allocates once per this many
// tokens.
const kvGrowTokens = 1024

// grow returns x with length n and capacity for at least n, copying x when it must reallocate
// or when fresh is set, and whether it did.
func grow[T float32 | uint16](x []T, n, step int, fresh bool) ([]T, bool) {
	if fresh || cap(x) < n {
		y := make([]T, len(x), (n/step+1)*step)
		copy(y, x)
		return y[:n], true
	}
	return x[:n], false
}

// reserve sets the cache's length to n rows of w values for session s to write rows pos … n−1,
// growing its storage in steps of kvGrowTokens rows. Arrays that snapshots share and s may not
// write there (kvShare.writable) are copied first: the rows below pos stay, the snapshots keep
// the old arrays.
func (c *kvCache) reserve(s *Session, pos, n, w int) {
	fresh := c.shared != nil && !c.shared.writable(s, pos)
	var moved bool
	if c.f32 {
		c.kf, moved = grow(c.kf, n*w, kvGrowTokens*w, fresh)
		c.vf, _ = grow(c.vf, n*w, kvGrowTokens*w, moved)
	} else {
		c.k, moved = grow(c.k, n*w, kvGrowTokens*w, fresh)
		c.v, _ = grow(c.v, n*w, kvGrowTokens*w, moved)
	}
	if moved {
		c.unshare(s)
	}
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
