package fast

import (
	"context"
	"errors"
	"fmt"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// Session is one sequence's state: conv and recurrent state per DeltaNet layer, KV cache per attention
// layer, the position, and the decode plan's buffers. One goroutine uses it at a time.
type Session struct {
	m        *Model
	pos      int
	stateSet            // conv and ssm: the DeltaNet layers' recurrent state (state_bufs.go)
	kv       []*kvCache // per layer (attention only)
	dec      *decodeBufs
	scr      []*deltanetScratch // the chunked delta rule's, per pool worker
	moe      expertBufs         // moeExperts' buffers, kept across the layers and chunks of a Prefill call
	pf       prefillBufs        // the prefill plan's chunk-sized activations, kept as long
	work     workerBufs         // the prefill plan's per-worker scratch, kept as long

	vecBufs map[int][]*cpu.Vec // prepared mat-vec inputs by length (fast/cpu kernels only)
	vecUsed map[int]int        // how many of vecBufs[n] the current gathered dispatch holds
	kept    preparedVec        // the previous dispatch's last prepared input (vecsAgain)
	mv      []cpu.MatVec       // the current gathered dispatch
	cur     int                // the layer the decode tasks work on
	tasks   decodeTasks
	att     attnArgs
	obs     trace.Observer // nil: no observation (trace.go)
}

// NewSession returns an empty sequence.
func (m *Model) NewSession() (engine.Session, error) { return m.newSession(), nil }

func (m *Model) newSession() *Session {
	s := &Session{m: m, vecUsed: map[int]int{}}
	n := len(m.layers)
	s.stateSet = m.takeState(true)
	sb := m.sessions.take()
	if sb == nil {
		d := m.dims
		sb = &sessionBufs{dec: newDecodeBufs(m), scr: make([]*deltanetScratch, m.run.Workers()), kv: make([]*kvCache, n)}
		for w := range sb.scr {
			sb.scr[w] = newDeltaNetScratch(d.Dk, d.Dv)
		}
	}
	s.dec, s.scr, s.vecBufs = sb.dec, sb.scr, sb.vecs
	if s.vecBufs == nil {
		s.vecBufs = map[int][]*cpu.Vec{}
	}
	s.kv = make([]*kvCache, n)
	for i, l := range m.layers {
		if l.kind != checkpoint.LinearAttention {
			s.kv[i] = sb.kv[i]
			if s.kv[i] == nil {
				s.kv[i] = &kvCache{f32: m.kv32}
			}
		}
	}
	s.tasks = s.newDecodeTasks()
	return s
}

// Len is the number of tokens processed.
func (s *Session) Len() int { return s.pos }

// kvReserve makes room in every KV cache for n more tokens.
func (s *Session) kvReserve(n int) {
	w := s.m.dims.KVWidth()
	for _, c := range s.kv {
		if c != nil {
			c.reserve(s, s.pos, s.pos+n, w)
		}
	}
}

func (s *Session) checkRoom(n int) error {
	if s.pos+n > s.m.maxCtx {
		return fmt.Errorf("fast: %d tokens after %d exceed the context of %d", n, s.pos, s.m.maxCtx)
	}
	return nil
}

// Decode appends one token and returns the result at its position, with what o asks for. Its
// slices are reused by the next call.
func (s *Session) Decode(ctx context.Context, tok int32, o engine.StepOptions) (engine.StepResult, error) {
	if err := s.checkRoom(1); err != nil {
		return engine.StepResult{}, err
	}
	if err := s.m.embedRow(tok, s.dec.h); err != nil {
		return engine.StepResult{}, err
	}
	s.kvReserve(1)
	if err := s.decodeStep(ctx); err != nil {
		return engine.StepResult{}, err
	}
	return engine.NewStepResultGreedy(s.dec.logits, int32(s.m.k.Argmax(s.dec.logits)), o), nil
}

// Prefill appends tokens in chunks and returns the result at the last position, with what o asks for.
func (s *Session) Prefill(ctx context.Context, toks []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	if len(toks) == 0 {
		return engine.StepResult{}, errors.New("fast: empty prefill")
	}
	if err := s.checkRoom(len(toks)); err != nil {
		return engine.StepResult{}, err
	}
	for _, t := range toks {
		if t < 0 || int(t) >= s.m.embed.out {
			return engine.StepResult{}, fmt.Errorf("fast: token id %d outside the vocabulary [0, %d)", t, s.m.embed.out)
		}
	}
	// The chunk-sized buffers serve every chunk of this call; an idle session holds none of them.
	s.borrowPrefillBufs()
	defer s.returnPrefillBufs()
	var last []float32
	for c0 := 0; c0 < len(toks); c0 += prefillChunk {
		c1 := min(c0+prefillChunk, len(toks))
		var err error
		last, err = s.prefillChunk(ctx, toks[c0:c1], c0, each)
		if err != nil {
			return engine.StepResult{}, err
		}
	}
	return engine.NewStepResult(last, o), nil
}

// borrowPrefillBufs takes the model's spare prefill buffers, if another call left them, for this
// Prefill call.
func (s *Session) borrowPrefillBufs() {
	sp := &s.m.spare
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(s.pf.slots) == 0 && len(sp.slots) > 0 {
		s.pf.slots, sp.slots = sp.slots, nil
	}
	if s.moe.yd == nil && sp.moe.yd != nil {
		s.moe, sp.moe = sp.moe, expertBufs{}
	}
	if s.work.f32 == nil && sp.work.f32 != nil {
		s.work, sp.work = sp.work, workerBufs{}
	}
}

// returnPrefillBufs hands the buffers the prefill plan kept across the chunks of a Prefill call to
// the model as its spare (replacing any other: the model keeps one set), so that the session holds
// none of them.
func (s *Session) returnPrefillBufs() {
	sp := &s.m.spare
	sp.mu.Lock()
	sp.slots, sp.moe, sp.work = s.pf.slots, s.moe, s.work
	sp.mu.Unlock()
	s.pf.drop()
	s.moe, s.work = expertBufs{}, workerBufs{}
}

// prefillHeld returns the bytes of chunk-sized prefill buffers the session holds (none between
// calls).
func (s *Session) prefillHeld() int { return s.pf.bytes() + s.moe.bytes() + s.work.bytes() }

// snapshot is a session's state at one position: a copy of the recurrent state (conv and ssm) and
// views of the KV cache's rows, shared with the session (kvShare).
type snapshot struct {
	m   *Model
	pos int
	st  stateSet // conv and ssm; nil once released
	kv  []*kvCache
}

func (p *snapshot) Len() int { return p.pos }

// Release hands the snapshot's state buffers to the model for the next session or snapshot
// (stateSpare) and unpins its KV rows (kvShare); it cannot be restored afterwards.
func (p *snapshot) Release() {
	p.m.giveState(p.st)
	for _, c := range p.kv {
		if c != nil {
			c.shared.unpin(p.pos)
		}
	}
	p.st, p.kv = stateSet{}, nil
}

// Snapshot copies the recurrent state and shares the KV cache's rows (kvShare).
func (s *Session) Snapshot() (engine.Snapshot, error) {
	if s.conv == nil {
		return nil, errors.New("fast: session is closed")
	}
	st := s.m.takeState(false)
	copyState(st, s.stateSet)
	w := s.m.dims.KVWidth()
	kv := make([]*kvCache, len(s.kv))
	for i, c := range s.kv {
		if c != nil {
			kv[i] = c.pin(s, s.pos, w)
		}
	}
	return &snapshot{m: s.m, pos: s.pos, st: st, kv: kv}, nil
}

// Restore replaces the state with a snapshot of the same model, copied into the session's own
// buffers.
func (s *Session) Restore(x engine.Snapshot) error {
	p, ok := x.(*snapshot)
	if !ok || p.m != s.m {
		return errors.New("fast: snapshot is from another backend or model")
	}
	if p.st.conv == nil {
		return errors.New("fast: snapshot was released")
	}
	if s.conv == nil {
		return errors.New("fast: session is closed")
	}
	copyState(s.stateSet, p.st)
	for i, c := range p.kv {
		if c != nil {
			s.kv[i].unshare(s)
			s.kv[i] = c.restore(s)
		}
	}
	s.pos = p.pos
	return nil
}

// Close releases the state: its buffers go to the model for the next session or snapshot, and
// its working buffers to the next session (sessionBufs).
func (s *Session) Close() error {
	s.m.giveState(s.stateSet)
	if s.dec != nil { // not closed before
		sb := &sessionBufs{dec: s.dec, scr: s.scr, vecs: s.vecBufs, kv: make([]*kvCache, len(s.kv))}
		for i, c := range s.kv {
			switch {
			case c == nil:
			case c.shared == nil:
				sb.kv[i] = &kvCache{f32: c.f32, k: c.k[:0], v: c.v[:0], kf: c.kf[:0], vf: c.vf[:0]}
			default: // arrays a snapshot reads stay with it
				c.unshare(s)
			}
		}
		s.m.sessions.give(sb)
	}
	s.stateSet, s.kv, s.dec, s.scr, s.vecBufs = stateSet{}, nil, nil, nil, nil
	return nil
}
