package fast

import (
	"context"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"

	"github.com/lily-engine/lily/internal/safetensors"
)

// kvSessions prefills the same prompt on fixture tiny-a with the fp16 cache and with the float32
// one and returns both sessions.
func kvSessions(t *testing.T, n int) (f16, f32 *Session) {
	t.Helper()
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(i*7919) % int32(ck.Weights.Config.VocabSize)
	}
	open := func(kv32 bool) *Session {
		b, err := Open(ck.Weights, Options{MaxContext: 4096, Threads: 2, KVCacheF32: kv32})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		s, _ := b.NewSession()
		if _, err := s.Prefill(context.Background(), toks, engine.StepOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		return s.(*Session)
	}
	return open(false), open(true)
}

func kvBytes(kv []*kvCache) (n int) {
	for _, c := range kv {
		if c != nil {
			n += c.bytes()
		}
	}
	return n
}

// TestKVCacheHalfMemory: the fp16 cache of a session and of its snapshot holds exactly half the
// bytes of the float32 one, and is not empty.
func TestKVCacheHalfMemory(t *testing.T) {
	s16, s32 := kvSessions(t, 100)
	if a, b := kvBytes(s16.kv), kvBytes(s32.kv); a == 0 || 2*a != b {
		t.Fatalf("session KV bytes: fp16 %d, float32 %d", a, b)
	}
	if a, b := s16.m.KVElementBytes(), s32.m.KVElementBytes(); a != 2 || b != 4 {
		t.Fatalf("KVElementBytes: fp16 cache %d, float32 cache %d", a, b)
	}
	p16, _ := s16.Snapshot()
	p32, _ := s32.Snapshot()
	if a, b := kvBytes(p16.(*snapshot).kv), kvBytes(p32.(*snapshot).kv); a == 0 || 2*a != b {
		t.Fatalf("snapshot KV bytes: fp16 %d, float32 %d", a, b)
	}
}

// TestKVCacheStoresRoundedRows: the first attention layer sees the same keys and values with
// either cache (nothing before it reads the cache), so the fp16 cache must hold exactly the
// float32 cache's rows rounded to nearest even.
func TestKVCacheStoresRoundedRows(t *testing.T) {
	s16, s32 := kvSessions(t, 70)
	for li, c := range s16.kv {
		if c == nil {
			continue
		}
		f := s32.kv[li]
		if len(c.k) == 0 || len(c.k) != len(f.kf) || len(c.v) != len(f.vf) {
			t.Fatalf("layer %d: lengths fp16 %d/%d, float32 %d/%d", li, len(c.k), len(c.v), len(f.kf), len(f.vf))
		}
		for i := range c.k {
			if c.k[i] != safetensors.Float32ToF16(f.kf[i]) || c.v[i] != safetensors.Float32ToF16(f.vf[i]) {
				t.Fatalf("layer %d element %d: fp16 %#x/%#x, float32 %g/%g", li, i, c.k[i], c.v[i], f.kf[i], f.vf[i])
			}
		}
		return
	}
	t.Fatal("no attention layer")
}
