package fast

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/synth"
)

// BenchmarkDecodeKV times one decode step after 8,192 cached positions with the fp16 cache and
// with the float32 one, in the same run, on a 4-layer model whose attention has the real shape
// (16 query heads, 2 KV heads of 256) and whose other matrices are the tiny preset's, so that the
// step is mostly attention: the ratio of the two is the cache's effect on long-context decode. On
// 2 workers, and on 1 ("/w1": no pool to spin, so cpu-ns/op, the process's CPU time per step, is
// the work alone, which a shared host's waits for a core do not inflate as they do ns/op).
func BenchmarkDecodeKV(b *testing.B) {
	ck, _ := attnShapeCheckpoint(b)
	defer ck.Close()
	const ctx = 8192
	for _, kv := range kvBenchCases() {
		b.Run(kv.name, func(b *testing.B) {
			m, err := Open(ck.Weights, Options{MaxContext: 2 * ctx, Threads: kv.workers, KVCacheF32: kv.f32})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			es, _ := m.NewSession()
			s := es.(*Session)
			fillKV(s, ctx)
			b.ResetTimer()
			cpu0 := processCPU(b)
			for i := 0; b.Loop(); i++ {
				if s.pos+1 >= 2*ctx {
					s.pos = ctx
				}
				if _, err := s.Decode(context.Background(), int32(i%100), engine.StepOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkAttendKV times the attention of one decode step alone (attend: the per-split tiles on
// the pool, then the merge of the partial softmaxes) over 8,192 cached positions of one layer, the
// real shape (16 query heads, 2 KV heads of 256), with the float32 cache and with the fp16 one in
// the same run, on 2 workers and on 1 ("/w1": no pool, so cpu-ns/op is the work alone). cpu-ns/op
// is the process's CPU time per call (both workers, their spinning included), which a shared
// host's waits for a core do not inflate as they do ns/op.
func BenchmarkAttendKV(b *testing.B) {
	ck, c := attnShapeCheckpoint(b)
	defer ck.Close()
	const ctx = 8192
	for _, kv := range kvBenchCases() {
		b.Run(kv.name, func(b *testing.B) {
			m, err := Open(ck.Weights, Options{MaxContext: 2 * ctx, Threads: kv.workers, KVCacheF32: kv.f32})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			es, _ := m.NewSession()
			s := es.(*Session)
			fillKV(s, ctx)
			li := 0
			for s.kv[li] == nil {
				li++
			}
			hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
			r := rand.New(rand.NewPCG(3, 4))
			q, out := make([]float32, hq*hd), make([]float32, hq*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64()) / 16 // a unit-variance query scaled by D^-1/2
			}
			cpu0 := processCPU(b)
			for b.Loop() {
				s.attend(q, s.kv[li], ctx, hq, hkv, hd, out)
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// attnShapeCheckpoint writes and opens a 4-layer synthetic checkpoint whose attention has the real
// shape (16 query heads, 2 KV heads of 256, the real rotary split of 64 of 256 dims) and whose other
// matrices are the tiny preset's: a decode step on it is mostly attention.
func attnShapeCheckpoint(b *testing.B) (*checkpoint.Checkpoint, synth.Config) {
	c, err := synth.Preset(synth.PresetTiny)
	if err != nil {
		b.Fatal(err)
	}
	c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim = 4, 16, 2, 256
	c.MRopeSection = []int{11, 11, 10}
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
	return ck, c
}

// kvBenchCases are the KV-cache benchmarks' cases: each cache on the pool of 2 and on 1 worker.
type kvBenchCase struct {
	name    string
	f32     bool
	workers int
}

func kvBenchCases() []kvBenchCase {
	return []kvBenchCase{{"f32", true, 2}, {"f16", false, 2}, {"f32/w1", true, 1}, {"f16/w1", false, 1}}
}

// BenchmarkAttendKVCold is BenchmarkAttendKV's fp16 attention over 8,192 positions of one layer,
// on 2 workers, rotating through 5 sessions' caches (80 MB, beyond a 32 MB last-level cache), as a
// decode step finds its cache: the rest of the step's weights stream through the caches between
// one step's attention and the next. cpu-ns/op as in BenchmarkAttendKV.
func BenchmarkAttendKVCold(b *testing.B) {
	ck, c := attnShapeCheckpoint(b)
	defer ck.Close()
	const ctx = 8192
	m, err := Open(ck.Weights, Options{MaxContext: 2 * ctx, Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var ss []*Session
	for range 5 {
		es, err := m.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		s := es.(*Session)
		fillKV(s, ctx)
		ss = append(ss, s)
	}
	li := 0
	for ss[0].kv[li] == nil {
		li++
	}
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	r := rand.New(rand.NewPCG(3, 4))
	q, out := make([]float32, hq*hd), make([]float32, hq*hd)
	for i := range q {
		q[i] = float32(r.NormFloat64()) / 16
	}
	cpu0 := processCPU(b)
	for i := 0; b.Loop(); i++ {
		s := ss[i%len(ss)]
		s.attend(q, s.kv[li], ctx, hq, hkv, hd, out)
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
