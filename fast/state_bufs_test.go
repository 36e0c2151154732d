package fast

import (
	"context"
	"math"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// TestStateRecycled: a closed session's and a released snapshot's state buffers serve the next
// session and snapshot (the same arrays, so no fresh memory), a recycled session computes bit for
// bit what a fresh one does (its state cleared: a prompt of several DeltaNet chunks reads it), a
// snapshot taken into recycled buffers restores exactly, and a released snapshot is refused. A
// session closed without a snapshot leaves its working buffers too (decode buffers, scratch, KV
// arrays: sessionBufs), and the session on them prefills and decodes bit for bit as it did.
func TestStateRecycled(t *testing.T) {
	m, vocab := openTiny(t, Options{MaxContext: 4096, Threads: 2})
	toks := make([]int32, 3*chunk+5)
	for i := range toks {
		toks[i] = int32(i*7919) % int32(vocab)
	}
	ctx := context.Background()
	full := engine.StepOptions{Full: true}
	prefill := func(s *Session) []float32 {
		t.Helper()
		r, err := s.Prefill(ctx, toks, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := engine.Logits(r, nil)
		return append([]float32(nil), l...)
	}
	dn := -1 // a DeltaNet layer
	for i := range m.layers {
		if m.layers[i].kind == checkpoint.LinearAttention {
			dn = i
			break
		}
	}
	same := func(a, b []float32) bool { return &a[0] == &b[0] }

	a := m.newSession()
	want := prefill(a)
	snapA, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ssmA := a.ssm[dn]
	a.Close()

	b := m.newSession()
	if !same(b.ssm[dn], ssmA) {
		t.Fatal("a new session after Close allocated its state instead of taking the closed one's")
	}
	if got := prefill(b); !bitsEqual(got, want) {
		t.Fatal("a session on recycled state buffers computed other logits than a fresh one")
	}
	ssmSnapA := snapA.(*snapshot).st.ssm[dn]
	snapA.Release()
	if err := b.Restore(snapA); err == nil {
		t.Fatal("Restore of a released snapshot succeeded")
	}
	snapB, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !same(snapB.(*snapshot).st.ssm[dn], ssmSnapA) {
		t.Fatal("a snapshot after Release allocated its state instead of taking the released one's")
	}
	next, err := b.Decode(ctx, 5, full)
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := engine.Logits(next, nil)
	l1 = append([]float32(nil), l1...)
	if _, err := b.Decode(ctx, 9, full); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(snapB); err != nil {
		t.Fatal(err)
	}
	again, err := b.Decode(ctx, 5, full)
	if err != nil {
		t.Fatal(err)
	}
	if l2, _ := engine.Logits(again, nil); !bitsEqual(l1, l2) {
		t.Fatal("a session restored from a snapshot in recycled buffers diverged")
	}

	// Working buffers (sessionBufs): c's, closed without a snapshot, serve d.
	li := -1 // an attention layer
	for i := range m.layers {
		if m.layers[i].kind != checkpoint.LinearAttention {
			li = i
			break
		}
	}
	decode := func(s *Session) []float32 {
		t.Helper()
		var l []float32
		for i := range 3 {
			r, err := s.Decode(ctx, int32(11*i+1), full)
			if err != nil {
				t.Fatal(err)
			}
			l, _ = engine.Logits(r, nil)
		}
		return append([]float32(nil), l...)
	}
	c := m.newSession()
	wantP, wantD := prefill(c), decode(c)
	dec, kc := c.dec, &c.kv[li].k[:1][0]
	c.Close()
	d := m.newSession()
	defer d.Close()
	if d.dec != dec || &d.kv[li].k[:1][0] != kc {
		t.Fatal("a new session after a Close without snapshots allocated its decode buffers or KV arrays afresh")
	}
	if gotP, gotD := prefill(d), decode(d); !bitsEqual(gotP, wantP) || !bitsEqual(gotD, wantD) {
		t.Fatal("a session on recycled working buffers computed other logits than the session that left them")
	}
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
