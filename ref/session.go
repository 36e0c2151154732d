package ref

import (
	"context"
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// ErrClosed is returned by a Session used after Close.
var ErrClosed = errors.New("ref: session is closed")

// State is the sequence state of the whole model: per layer a KV cache (attention layers) or a conv
// and recurrent state (DeltaNet layers), and the number of tokens processed.
type State struct {
	Pos      int              // tokens processed so far: the next token's position
	KV       []*KVCache       // [layers], nil for DeltaNet layers
	DeltaNet []*DeltaNetState // [layers], nil for attention layers
}

// NewState returns the empty state (position 0, zero conv and recurrent state, empty caches).
func (m *Model) NewState() *State {
	st := &State{KV: make([]*KVCache, m.cfg.NumLayers), DeltaNet: make([]*DeltaNetState, m.cfg.NumLayers)}
	for l, layer := range m.w.Layers {
		if layer.Kind == checkpoint.LinearAttention {
			st.DeltaNet[l] = NewDeltaNetState(m.cfg)
		} else {
			st.KV[l] = &KVCache{}
		}
	}
	return st
}

// Clone returns a deep copy of st.
func (st *State) Clone() *State {
	c := &State{Pos: st.Pos, KV: make([]*KVCache, len(st.KV)), DeltaNet: make([]*DeltaNetState, len(st.DeltaNet))}
	for l := range st.KV {
		if st.KV[l] != nil {
			c.KV[l] = st.KV[l].clone()
		}
		if st.DeltaNet[l] != nil {
			c.DeltaNet[l] = st.DeltaNet[l].clone()
		}
	}
	return c
}

// Session is one sequence on a Model; it implements engine.Session. One goroutine uses it at a time.
type Session struct {
	m      *Model
	st     *State
	closed bool
	obs    trace.Observer // nil: no observation
}

// Observe attaches o to the session (nil detaches it): every later step reports its named
// intermediates (package trace) to o.
func (s *Session) Observe(o trace.Observer) { s.obs = o }

// NewSession returns a session at position 0.
func (m *Model) NewSession() *Session { return &Session{m: m, st: m.NewState()} }

// MaxContext is the longest sequence a session may hold: max_position_embeddings.
func (m *Model) MaxContext() int { return m.cfg.MaxPositionEmbeddings }

// Len is the number of tokens processed so far.
func (s *Session) Len() int { return s.st.Pos }

// Prefill appends tokens using the chunked delta rule and returns the result at the last position,
// with what o asks for.
// When each is non-nil it gets the logits of every new position in order (computed one position at
// a time; the slice is only valid during the call). On an error before the last layer, including
// ctx cancellation (checked between layers), the state is left as it was; an error from each leaves
// the tokens appended.
func (s *Session) Prefill(ctx context.Context, tokens []int32, o engine.StepOptions, each func(i int, logits []float32) error) (engine.StepResult, error) {
	logits, err := s.prefill(ctx, tokens, nil, each)
	if err != nil {
		return engine.StepResult{}, err
	}
	return engine.NewStepResult(logits, o), nil
}

// PrefillHidden is Prefill for conformance tests: it calls hidden with the hidden states of the new
// tokens after each stage, h: [T][H], valid only during the call:
//
//	layer −1:           the embeddings
//	layer 0..L−1:       the output of decoder layer l (residual stream, before the final norm)
//	layer L (= layers): the final-normed hidden state, i.e. what lm_head reads
//
// In transformers' usual convention (hidden_states = embeddings, the outputs of layers 0..L−2, then
// the final-normed output of layer L−1), hidden_states[i] is layer i−1 here for i < L and
// hidden_states[L] is layer L. It returns the last position's logits.
func (s *Session) PrefillHidden(ctx context.Context, tokens []int32, hidden func(layer int, h [][]float32)) ([]float32, error) {
	return s.prefill(ctx, tokens, hidden, nil)
}

func (s *Session) prefill(ctx context.Context, tokens []int32, hidden func(int, [][]float32), each func(int, []float32) error) ([]float32, error) {
	h, err := s.forward(ctx, tokens, true, hidden)
	if err != nil {
		return nil, err
	}
	if each == nil {
		return s.logits(h[len(h)-1])
	}
	var logits []float32
	for i := range h {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if logits, err = s.m.Logits(h[i]); err != nil {
			return nil, err
		}
		if err := each(i, logits); err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// Decode appends one token using the recurrent delta-rule step and returns the result at its
// position, with what o asks for.
func (s *Session) Decode(ctx context.Context, token int32, o engine.StepOptions) (engine.StepResult, error) {
	h, err := s.forward(ctx, []int32{token}, false, nil)
	if err != nil {
		return engine.StepResult{}, err
	}
	logits, err := s.logits(h[0])
	if err != nil {
		return engine.StepResult{}, err
	}
	return engine.NewStepResult(logits, o), nil
}

// logits is Model.Logits of the last processed position, reported to the observer.
func (s *Session) logits(h []float32) ([]float32, error) {
	out, err := s.m.Logits(h)
	if err == nil && s.obs != nil {
		s.obs.Rows(trace.Model(trace.Logits), s.st.Pos-1, 1, out)
	}
	return out, err
}

// forward runs tokens through every layer from the session state and returns the last layer's
// output (before the final norm): [T][H]. On error the state is rolled back.
func (s *Session) forward(ctx context.Context, tokens []int32, chunked bool, hidden func(int, [][]float32)) ([][]float32, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if len(tokens) == 0 {
		return nil, errors.New("ref: no tokens")
	}
	if n := s.st.Pos + len(tokens); n > s.m.MaxContext() {
		return nil, fmt.Errorf("ref: context overflow: %d + %d tokens > max context %d", s.st.Pos, len(tokens), s.m.MaxContext())
	}
	h := make([][]float32, len(tokens)) // [T][H]
	for t, id := range tokens {
		row, err := Embed(&s.m.w.Embed, id)
		if err != nil {
			return nil, fmt.Errorf("ref: position %d: %w", t, err)
		}
		h[t] = row
	}
	if hidden != nil {
		hidden(-1, h)
	}
	if s.obs != nil {
		for t := range h {
			s.obs.Rows(trace.Model(trace.Embed), s.st.Pos+t, 1, h[t])
		}
	}
	saved := s.saveRecurrent()
	for l := range s.m.w.Layers {
		var err error
		if err = ctx.Err(); err == nil {
			h, err = s.m.decoderLayer(l, h, s.st, chunked, s.obs)
		}
		if err != nil {
			s.rollback(saved)
			return nil, err
		}
		if hidden != nil {
			hidden(l, h)
		}
	}
	s.st.Pos += len(tokens)
	if hidden != nil || s.obs != nil {
		normed := make([][]float32, len(h))
		for t := range h {
			normed[t] = make([]float32, len(h[t]))
			RMSNorm(normed[t], h[t], s.m.w.FinalNorm, s.m.cfg.RMSNormEps)
			if s.obs != nil {
				s.obs.Rows(trace.Model(trace.FinalNorm), s.st.Pos-len(h)+t, 1, normed[t])
			}
		}
		if hidden != nil {
			hidden(len(s.m.w.Layers), normed)
		}
	}
	return h, nil
}

// saveRecurrent copies the DeltaNet states (small) so that a failed forward can be undone; KV caches
// are undone by truncation to the old position.
func (s *Session) saveRecurrent() []*DeltaNetState {
	saved := make([]*DeltaNetState, len(s.st.DeltaNet))
	for l, g := range s.st.DeltaNet {
		if g != nil {
			saved[l] = g.clone()
		}
	}
	return saved
}

func (s *Session) rollback(saved []*DeltaNetState) {
	for l := range s.st.DeltaNet {
		if saved[l] != nil {
			s.st.DeltaNet[l] = saved[l]
		}
		if kv := s.st.KV[l]; kv != nil {
			kv.K, kv.V = kv.K[:s.st.Pos], kv.V[:s.st.Pos]
		}
	}
}

// snapshot is a deep copy of a session's state, tied to its model.
type snapshot struct {
	m  *Model
	st *State
}

func (sn *snapshot) Len() int { return sn.st.Pos }

// Release does nothing: the snapshot is Go memory, which the garbage collector frees.
func (*snapshot) Release() {}

// Snapshot deep-copies the state.
func (s *Session) Snapshot() (engine.Snapshot, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return &snapshot{m: s.m, st: s.st.Clone()}, nil
}

// Restore replaces the state with a deep copy of a snapshot taken from a session of the same Model.
func (s *Session) Restore(sn engine.Snapshot) error {
	if s.closed {
		return ErrClosed
	}
	r, ok := sn.(*snapshot)
	if !ok || r.m != s.m {
		return errors.New("ref: snapshot is not from this model's sessions")
	}
	s.st = r.st.Clone()
	return nil
}

// Close releases the state; later calls return ErrClosed.
func (s *Session) Close() error {
	s.closed, s.st = true, &State{}
	return nil
}

// Options tune the reference backend.
type Options struct {
	// MaxContext bounds a session's length as the backend reports it (0: max_position_embeddings).
	MaxContext int
}

// Backend is the reference backend; it implements engine.Backend and is safe for concurrent use
// through distinct sessions.
type Backend struct {
	m      *Model
	maxCtx int
}

// Open checks w (New) and returns the reference backend over it. The weights must stay valid
// (mapped) while the backend is used.
func Open(w *checkpoint.Weights, o Options) (engine.Backend, error) {
	m, err := New(w)
	if err != nil {
		return nil, err
	}
	maxCtx := o.MaxContext
	if maxCtx <= 0 {
		maxCtx = m.MaxContext()
	}
	return &Backend{m: m, maxCtx: maxCtx}, nil
}

// Model returns the backend's model.
func (b *Backend) Model() *Model { return b.m }

// Name is "ref".
func (b *Backend) Name() string { return "ref" }

// VocabSize is the logits length, the padded vocab.
func (b *Backend) VocabSize() int { return b.m.w.LMHead.Out }

// MaxContext is Options.MaxContext, or max_position_embeddings.
func (b *Backend) MaxContext() int { return b.maxCtx }

// NewSession returns an empty sequence.
func (b *Backend) NewSession() (engine.Session, error) { return b.m.NewSession(), nil }

// Close releases nothing: the reference backend holds only the caller's weights.
func (b *Backend) Close() error { return nil }

var (
	_ engine.Backend   = (*Backend)(nil)
	_ engine.Session   = (*Session)(nil)
	_ trace.Observable = (*Session)(nil)
)
