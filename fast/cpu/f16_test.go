package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
)

// f16KVTol is the fp16 KV tiles' budget against the float32 tiles on the unrounded keys and
// values, relative to Σ|terms|: each stored element is within 2^-11 of itself (one fp16 rounding,
// 10 mantissa bits, normal range), plus the float32 tile's own opsTol.
const f16KVTol = 1.0/2048 + opsTol

// TestF16RowSIMD: every variant's F16Row and widening agree bit for bit with safetensors.Float32ToF16 / F16ToFloat32, on
// lengths around the 16-value vector and values across fp16's range (subnormals, overflow, ties).
func TestF16RowSIMD(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	r := rand.New(rand.NewPCG(5, 5))
	for name, k := range variants(p) {
		for _, n := range []int{1, 15, 16, 17, 256, 263} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(48)-30))
			}
			src[0] = 1 + 1.0/2048 // a tie: rounds to even (1)
			dst := make([]uint16, n)
			k.F16Row(dst, src)
			back := make([]float32, n)
			k.f.fromF16(back, dst)
			for i, f := range src {
				if dst[i] != safetensors.Float32ToF16(f) || math.Float32bits(back[i]) != math.Float32bits(safetensors.F16ToFloat32(dst[i])) {
					t.Fatalf("%s n %d: [%d] %g → %#04x → %g, want %#04x → %g", name, n, i, f, dst[i], back[i], safetensors.Float32ToF16(f), safetensors.F16ToFloat32(dst[i]))
				}
			}
		}
	}
}

// TestAttentionTilesF16: the fp16 tiles against the float32 tiles on the unrounded keys and values,
// within f16KVTol, with rows at a stride wider than the head (the cache's rows hold every KV head).
func TestAttentionTilesF16(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.SampledFrom([]int{3, 16, 32, 256}).Draw(rt, "d")
		m := rapid.IntRange(1, 11).Draw(rt, "m")
		n := rapid.OneOf(rapid.IntRange(1, 13), rapid.Just(maxTileKeys+5)).Draw(rt, "n")
		stride := d + rapid.SampledFrom([]int{0, 5, d}).Draw(rt, "extra")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 13))
		q, rows, pw, o0 := randVec(r, m*d), randVec(r, (n-1)*stride+d), randVec(r, m*n), randVec(r, m*d)
		h := make([]uint16, len(rows))
		f32ToF16Portable(h, rows)
		scratch := make([]float32, n*d)
		for name, k := range ks {
			s := make([]float32, m*n)
			k.ScoreTileF16(s, q, m, d, h, stride, n, scratch)
			for i := range m {
				for j := range n {
					var want, mass float64
					for x := range d {
						v := float64(q[i*d+x]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if math.Abs(float64(s[i*n+j])-want) > f16KVTol*mass+1e-30 {
						rt.Fatalf("%s ScoreTileF16 m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, j, s[i*n+j], want)
					}
				}
			}
			o := append([]float32(nil), o0...)
			k.AccumTileF16(o, m, d, pw, n, h, stride, scratch)
			for i := range m {
				for x := range d {
					want, mass := float64(o0[i*d+x]), math.Abs(float64(o0[i*d+x]))
					for j := range n {
						v := float64(pw[i*n+j]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if math.Abs(float64(o[i*d+x])-want) > f16KVTol*mass+1e-30 {
						rt.Fatalf("%s AccumTileF16 m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, x, o[i*d+x], want)
					}
				}
			}
		}
	})
}

// BenchmarkAttentionKV is a decode step's attention for one KV head (8 query heads, D = 256) over
// a cache of 32K positions whose rows hold 2 KV heads (stride 512), in blocks of 256 keys: scores
// then the weighted values, with K/V in float32 ("f32", ScoreTile/AccumTile) or fp16 ("f16",
// ScoreTileF16/AccumTileF16: half the bytes read, widened per block into an L2-resident scratch).
// One worker; the ratio of the two times is the figure (keys/s: cached positions per second).
func BenchmarkAttentionKV(b *testing.B) {
	const m, d, stride, ctx, blk = 8, 256, 512, 32768, 256
	p := NewPool(1)
	defer p.Close()
	k := New(p)
	r := rand.New(rand.NewPCG(1, 2))
	q, pw, o := randVec(r, m*d), randVec(r, m*blk), make([]float32, m*d)
	s, scratch := make([]float32, m*blk), make([]float32, blk*d)
	for _, impl := range []string{"f32", "f16"} {
		b.Run(impl, func(b *testing.B) {
			kv32 := randVec(r, 2*ctx*stride)
			kv16 := make([]uint16, len(kv32))
			k.F16Row(kv16, kv32)
			if impl == "f16" {
				kv32 = nil
			}
			for b.Loop() {
				for j := 0; j < ctx; j += blk {
					if impl == "f32" {
						k.ScoreTile(s, q, m, d, kv32[j*stride:], stride, blk)
						k.AccumTile(o, m, d, pw, blk, kv32[(ctx+j)*stride:], stride)
					} else {
						k.ScoreTileF16(s, q, m, d, kv16[j*stride:], stride, blk, scratch)
						k.AccumTileF16(o, m, d, pw, blk, kv16[(ctx+j)*stride:], stride, scratch)
					}
				}
			}
			b.ReportMetric(float64(ctx)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
