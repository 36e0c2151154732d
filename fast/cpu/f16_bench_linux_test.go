package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkAttentionKV is a decode step's attention for one KV head (8 query heads, D = 256) over
// a cache of 32K positions whose rows hold 2 KV heads (stride 512), in blocks of 256 keys: scores
// then the weighted values, with K/V in float32 ("f32", ScoreTile/AccumTile), fp16 ("f16",
// ScoreTileF16/AccumTileF16: half the bytes read, converted inside the register tiles), or fp16
// widened per block into an L2-resident scratch before the float32 tiles ("f16widen", the
// portable kernels' way and the SIMD one's before the fp16 tiles). One worker on the benchmark's locked thread; the ratios of the
// times are the figure (keys/s: cached positions per second; keys/s-cpu: per second of that
// thread's CPU time, which other processes on a shared host change little).
func BenchmarkAttentionKV(b *testing.B) {
	const m, d, stride, ctx, blk = 8, 256, 512, 32768, 256
	p := NewPool(1)
	defer p.Close()
	k := New(p)
	r := rand.New(rand.NewPCG(1, 2))
	q, pw, o := randVec(r, m*d), randVec(r, m*blk), make([]float32, m*d)
	s, scratch := make([]float32, m*blk), make([]float32, blk*d)
	for _, impl := range []string{"f32", "f16", "f16widen"} {
		b.Run(impl, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			kv32 := randVec(r, 2*ctx*stride)
			kv16 := make([]uint16, len(kv32))
			k.F16Row(kv16, kv32)
			if impl != "f32" {
				kv32 = nil
			}
			c0 := threadCPU()
			for b.Loop() {
				for j := 0; j < ctx; j += blk {
					switch impl {
					case "f32":
						k.ScoreTile(s, q, m, d, kv32[j*stride:], stride, blk)
						k.AccumTile(o, m, d, pw, blk, kv32[(ctx+j)*stride:], stride)
					case "f16widen":
						k.f.scoreTile(s, q, m, d, k.widenRows(scratch, kv16[j*stride:], stride, d, blk), d, blk)
						k.f.accumTile(o, m, d, pw, blk, k.widenRows(scratch, kv16[(ctx+j)*stride:], stride, d, blk), d)
					default:
						k.ScoreTileF16(s, q, m, d, kv16[j*stride:], stride, blk, scratch, kv16[(ctx+j)*stride:])
						k.AccumTileF16(o, m, d, pw, blk, kv16[(ctx+j)*stride:], stride, scratch)
					}
				}
			}
			b.ReportMetric(float64(ctx)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			b.ReportMetric(float64(ctx)*float64(b.N)/(threadCPU()-c0).Seconds(), "keys/s-cpu")
		})
	}
}
