package fast

import (
	"sync"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// stateSet is one copy of the DeltaNet layers' recurrent state, per layer (nil for attention
// layers): conv [(K−1)·C] and ssm [Hv, Dk, Dv], the buffers a session or a snapshot holds.
type stateSet struct {
	conv, ssm [][]float32
}

// stateSpare is the model's one spare stateSet: a closed session and a released snapshot leave
// theirs here, and the next new session or snapshot takes it instead of allocating afresh. Fresh
// memory costs a page fault per 4 KiB page on first touch — at the real shapes 2 MiB of state a
// DeltaNet layer, 63 MiB over 30 layers — which a new conversation, each prompt-cache snapshot and
// every restore paid inside the prefill's first state update (6% of a 16-token BenchmarkPrefill).
// One spare covers both of the engine's flows: on a cache hit the restore copies into the
// session's own set, the dropped snapshot's set is spare, and the next snapshot takes it; on a
// miss the closed session's set is spare, the new session takes it, and the snapshot the one its
// release left.
type stateSpare = spare[stateSet]

// spare is one buffer set a model keeps for the next user (stateSpare, sessionSpare).
type spare[T any] struct {
	mu sync.Mutex
	v  *T
}

// take removes and returns the spare, or nil.
func (sp *spare[T]) take() *T {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	v := sp.v
	sp.v = nil
	return v
}

// give makes v the spare (replacing any other); the giver must not use it again.
func (sp *spare[T]) give(v *T) {
	sp.mu.Lock()
	sp.v = v
	sp.mu.Unlock()
}

// takeState returns the spare set, or a new one, for the model's layers. zero: its values are all
// zero (a new session's); otherwise unspecified (a copy about to overwrite them).
func (m *Model) takeState(zero bool) stateSet {
	set := m.states.take()
	if set == nil {
		return newStateSet(m)
	}
	if zero {
		for i := range set.conv {
			clear(set.conv[i])
			clear(set.ssm[i])
		}
	}
	return *set
}

// giveState makes set the model's spare (replacing any other); the giver must not use it again.
func (m *Model) giveState(set stateSet) {
	if set.conv != nil {
		m.states.give(&set)
	}
}

// newStateSet allocates a zero stateSet for m's layers.
func newStateSet(m *Model) stateSet {
	n := len(m.layers)
	set := stateSet{conv: make([][]float32, n), ssm: make([][]float32, n)}
	d := m.dims
	for i, l := range m.layers {
		if l.kind == checkpoint.LinearAttention {
			set.conv[i] = make([]float32, (d.K-1)*d.ConvDim())
			set.ssm[i] = make([]float32, d.Hv*d.Dk*d.Dv)
		}
	}
	return set
}

// copyState copies src's values into dst (sets of the same model).
func copyState(dst, src stateSet) {
	for i := range src.conv {
		copy(dst.conv[i], src.conv[i])
		copy(dst.ssm[i], src.ssm[i])
	}
}

// sessionBufs are the working buffers a closed session leaves for the next new one: the decode
// plan's (decodeBufs, 1 MiB of it the logits row), the DeltaNet prefill's per-worker scratch, and
// the KV arrays no snapshot shares (at length 0; a new session's first reserve reuses their
// capacity). None needs clearing: each is written before it is read (TestStateRecycled checks a
// recycled session's prefill and decode bit for bit against a fresh one's). Fresh, these cost a
// new session the runtime's zeroing and a page fault per 4 KiB on first touch.
type sessionBufs struct {
	dec  *decodeBufs
	scr  []*deltanetScratch
	vecs map[int][]*cpu.Vec // the prepared mat-vec inputs (Session.vecBufs; prepared before each use)
	kv   []*kvCache         // per layer: an empty cache over recycled arrays, or nil
}

// sessionSpare is the model's one spare sessionBufs (the last closed session's).
type sessionSpare = spare[sessionBufs]
