package fast

import (
	"context"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/engine"
)

// kvSeg is one call of a session's history: a prefill of toks, or a decode of toks[0].
type kvSeg struct {
	prefill bool
	toks    []int32
}

// TestKVSharingMatchesReplay runs random sequences of prefills, decodes, snapshots, restores
// (into the session a snapshot came from or the other one), releases and closes (a new session
// then takes the closed one's recycled buffers) on two sessions, and
// checks every step's logits bit for bit against a fresh session that replays the same history
// (its calls, in order): whatever snapshots and sessions share KV arrays (kvShare), no write may
// reach rows another of them reads. Checked by mutation: with writable always true, or a restore
// that takes ownership from a live session, this fails.
func TestKVSharingMatchesReplay(t *testing.T) {
	m, vocab := openTiny(t, Options{MaxContext: 4096, Threads: 2})
	ctx := context.Background()
	full := engine.StepOptions{Full: true}
	run := func(s *Session, g kvSeg) ([]float32, error) {
		var r engine.StepResult
		var err error
		if g.prefill {
			r, err = s.Prefill(ctx, g.toks, full, nil)
		} else {
			r, err = s.Decode(ctx, g.toks[0], full)
		}
		l, err := engine.Logits(r, err)
		return slices.Clone(l), err
	}
	replay := func(h []kvSeg) ([]float32, error) {
		s := m.newSession()
		defer s.Close()
		var l []float32
		for _, g := range h {
			var err error
			if l, err = run(s, g); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	rapid.Check(t, func(rt *rapid.T) {
		type snap struct {
			p engine.Snapshot
			h []kvSeg
		}
		var ss [2]*Session
		var hs [2][]kvSeg
		for i := range ss {
			ss[i] = m.newSession()
		}
		defer func() {
			for _, s := range ss {
				s.Close()
			}
		}()
		var snaps []snap
		for step := range rapid.IntRange(4, 24).Draw(rt, "steps") {
			i := rapid.IntRange(0, 1).Draw(rt, "session")
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); {
			case op <= 1: // prefill (several KV rows at once, and DeltaNet chunks) or decode
				n := 1
				if op == 0 {
					n = rapid.IntRange(1, 40).Draw(rt, "tokens")
				}
				g := kvSeg{prefill: op == 0, toks: make([]int32, n)}
				for j := range g.toks {
					g.toks[j] = int32(rapid.IntRange(0, vocab-1).Draw(rt, "tok"))
				}
				got, err := run(ss[i], g)
				if err != nil {
					rt.Fatal(err)
				}
				hs[i] = append(slices.Clone(hs[i]), g)
				want, err := replay(hs[i])
				if err != nil {
					rt.Fatal(err)
				}
				if !bitsEqual(got, want) {
					rt.Fatalf("step %d, session %d: logits differ from a replay of its %d calls", step, i, len(hs[i]))
				}
			case op == 2 && len(snaps) < 4:
				p, err := ss[i].Snapshot()
				if err != nil {
					rt.Fatal(err)
				}
				snaps = append(snaps, snap{p, slices.Clone(hs[i])})
			case op == 3 && len(snaps) > 0:
				j := rapid.IntRange(0, len(snaps)-1).Draw(rt, "snapshot")
				if err := ss[i].Restore(snaps[j].p); err != nil {
					rt.Fatal(err)
				}
				hs[i] = slices.Clone(snaps[j].h)
			case op == 4 && len(snaps) > 0:
				j := rapid.IntRange(0, len(snaps)-1).Draw(rt, "snapshot")
				snaps[j].p.Release()
				snaps = slices.Delete(snaps, j, j+1)
			case op == 5: // close the session and start a new one on its recycled buffers
				ss[i].Close()
				ss[i], hs[i] = m.newSession(), nil
			}
		}
	})
}

// TestKVSharedInEngineFlow: the server's prompt-cache flow — snapshot, decode on, restore the
// snapshot, release it, prefill the next turn, snapshot again — copies no KV array: the session and
// both snapshots keep reading the arrays the first prefill allocated. (A clone on snapshot or
// restore would pass TestKVSharingMatchesReplay; this pins the sharing itself.)
func TestKVSharedInEngineFlow(t *testing.T) {
	m, vocab := openTiny(t, Options{MaxContext: 4096, Threads: 2})
	ctx := context.Background()
	toks := func(n, seed int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32((i+seed)*7919) % int32(vocab)
		}
		return out
	}
	s := m.newSession()
	defer s.Close()
	if _, err := s.Prefill(ctx, toks(100, 0), engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	li := slices.IndexFunc(s.kv, func(c *kvCache) bool { return c != nil })
	arr := &s.kv[li].k[:1][0] // the first key element of the first attention layer
	same := func(what string, c *kvCache) {
		t.Helper()
		if &c.k[:1][0] != arr {
			t.Fatalf("%s: the KV array was copied", what)
		}
	}
	p, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	same("snapshot", p.(*snapshot).kv[li])
	for i := range 5 {
		if _, err := s.Decode(ctx, int32(i), engine.StepOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	same("decode after a snapshot", s.kv[li])
	if err := s.Restore(p); err != nil {
		t.Fatal(err)
	}
	same("restore", s.kv[li])
	p.Release()
	if _, err := s.Prefill(ctx, toks(30, 1), engine.StepOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	same("prefill after restore and release", s.kv[li])
	q, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	same("second snapshot", q.(*snapshot).kv[li])
}
