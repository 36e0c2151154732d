package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestAttentionTilesMatchFloat64: ScoreTile and AccumTile on every variant against float64 sums,
// on tile shapes around the SIMD tiles (2×4 scores, 4 rows × 32 dimensions) and their leftovers,
// key counts past AccumTile's pass length, head sizes the SIMD paths take and ones they hand to
// the per-row helpers, and rows at a stride wider than the head (the KV cache's rows hold every KV
// head of a position). Budget: opsTol of the summed magnitudes, as for Dots and AxpyRows.
func TestAttentionTilesMatchFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom([]int{3, 16, 32, 48, 256}).Draw(t, "d")
		m := rapid.IntRange(1, 11).Draw(t, "m")
		n := rapid.OneOf(rapid.IntRange(1, 13), rapid.Just(maxTileKeys+5)).Draw(t, "n")
		stride := d + rapid.SampledFrom([]int{0, 5, d}).Draw(t, "extra")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 12))
		f := func(n int) []float32 { return randVec(r, n) }
		q, rows, pw, o0 := f(m*d), f((n-1)*stride+d), f(m*n), f(m*d)
		for name, k := range ks {
			s := make([]float32, m*n)
			k.ScoreTile(s, q, m, d, rows, stride, n)
			for i := range m {
				for j := range n {
					var want, mass float64
					for x := range d {
						v := float64(q[i*d+x]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if !near(float64(s[i*n+j]), want, mass) {
						t.Fatalf("%s ScoreTile m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, j, s[i*n+j], want)
					}
				}
			}
			o := append([]float32(nil), o0...)
			k.AccumTile(o, m, d, pw, n, rows, stride)
			for i := range m {
				for x := range d {
					want, mass := float64(o0[i*d+x]), math.Abs(float64(o0[i*d+x]))
					for j := range n {
						v := float64(pw[i*n+j]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if !near(float64(o[i*d+x]), want, mass) {
						t.Fatalf("%s AccumTile m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, x, o[i*d+x], want)
					}
				}
			}
		}
	})
}

// BenchmarkAttentionBlock is one block of attention for the query heads that share a KV head, the
// real sizes (8 heads, D = 256, keys at the KV cache's stride of 2 KV heads): "per_head" is the
// per-query helpers (Dots, then AxpyRows, head by head), "tiles" is ScoreTile and AccumTile for all
// eight at once, with rows = 8 (a decode step) and rows = 64 (8 prompt positions in prefill);
// "tiles_f16" the same on the keys and values stored as fp16 (ScoreTileF16 and AccumTileF16, which
// convert them inside the register tiles), "tiles_f16widen" widening the fp16 block into a float32
// scratch before the float32 tiles (the portable kernels' way).
// GFLOP/s counts 4·rows·keys·D per call (the two products); the softmax between them is left out.
func BenchmarkAttentionBlock(b *testing.B) {
	const d, stride = 256, 512
	p := NewPool(1)
	defer p.Close()
	k := New(p)
	r := newRand(3)
	for _, rows := range []int{8, 64} {
		for _, keys := range []int{64} {
			q, kv, o := randVec(r, rows*d), randVec(r, keys*stride), make([]float32, rows*d)
			s := randVec(r, rows*keys)
			flops := 4.0 * float64(rows*keys*d)
			b.Run(fmt.Sprintf("rows%d/keys%d/per_head", rows, keys), func(b *testing.B) {
				for b.Loop() {
					for i := range rows {
						k.Dots(s[i*keys:(i+1)*keys], q[i*d:(i+1)*d], kv, stride)
						k.AxpyRows(o[i*d:(i+1)*d], s[i*keys:(i+1)*keys], kv, stride)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(fmt.Sprintf("rows%d/keys%d/tiles", rows, keys), func(b *testing.B) {
				for b.Loop() {
					k.ScoreTile(s, q, rows, d, kv, stride, keys)
					k.AccumTile(o, rows, d, s, keys, kv, stride)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			kv16, scratch := make([]uint16, len(kv)), make([]float32, keys*d)
			k.F16Row(kv16, kv)
			b.Run(fmt.Sprintf("rows%d/keys%d/tiles_f16", rows, keys), func(b *testing.B) {
				for b.Loop() {
					k.ScoreTileF16(s, q, rows, d, kv16, stride, keys, scratch, nil)
					k.AccumTileF16(o, rows, d, s, keys, kv16, stride, scratch)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(fmt.Sprintf("rows%d/keys%d/tiles_f16widen", rows, keys), func(b *testing.B) {
				for b.Loop() {
					k.f.scoreTile(s, q, rows, d, k.widenRows(scratch, kv16, stride, d, keys), d, keys)
					k.f.accumTile(o, rows, d, s, keys, k.widenRows(scratch, kv16, stride, d, keys), d)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
