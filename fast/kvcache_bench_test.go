package fast

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/synth"
)

// BenchmarkDecodeKV times one decode step after 8,192 cached positions with the fp16 cache and
// with the float32 one, in the same run, on a 4-layer model whose attention has the real shape
// (16 query heads, 2 KV heads of 256) and whose other matrices are the tiny preset's, so that the
// step is mostly attention: the ratio of the two is the cache's effect on long-context decode.
func BenchmarkDecodeKV(b *testing.B) {
	c, err := synth.Preset(synth.PresetTiny)
	if err != nil {
		b.Fatal(err)
	}
	c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim = 4, 16, 2, 256
	c.MRopeSection = []int{11, 11, 10} // the real rotary split of 64 of 256 dims
	p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := synth.Write(context.Background(), p, dir, synth.Options{Seed: 5}); err != nil {
		b.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ck.Close()
	const ctx = 8192
	for _, kv := range []struct {
		name string
		f32  bool
	}{{"f32", true}, {"f16", false}} {
		b.Run(kv.name, func(b *testing.B) {
			m, err := Open(ck.Weights, Options{MaxContext: 2 * ctx, Threads: 2, KVCacheF32: kv.f32})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			es, _ := m.NewSession()
			s := es.(*Session)
			fillKV(s, ctx)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if s.pos+1 >= 2*ctx {
					s.pos = ctx
				}
				if _, err := s.Decode(context.Background(), int32(i%100), engine.StepOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fillKV puts n positions of random keys and values (the scale of RMS-normed rows) in every
// attention layer's cache of s, as if a prompt of n tokens had been prefilled.
func fillKV(s *Session, n int) {
	w := s.m.cfg.NumKVHeads * s.m.cfg.HeadDim
	s.kvReserve(n)
	r := rand.New(rand.NewPCG(1, 2))
	row, val := make([]float32, n*w), make([]float32, n*w)
	for i := range row {
		row[i], val[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, c := range s.kv {
		if c != nil {
			c.put(s.m.k, 0, w, row, val)
		}
	}
	s.pos = n
}
