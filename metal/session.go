package metal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/metal/device"
)

// HeadTopK is how many candidates logits_topk_merge returns per step: 20, the top_k of the model's
// default sampling (engine.ModelDefaults), so that sampling with it reads back 20 ids and logits
// rather than the vocabulary; a step asking for more reads back the full logits.
const HeadTopK = 20

// Session is one sequence on the device: its recurrent state and KV caches, the chunk
// activations and the readback buffers. One goroutine uses it at a time.
type Session struct {
	e    *Model
	pos  int
	st   *state
	sc   *scratch
	bufs []device.Buffer // scratch and io buffers

	logits  []float32     // host copy of the last position's logits
	all     device.Buffer // [chunk, V] logits of every position, allocated on first Prefill with each
	allHost []float32
	topIDs  []int32
	topVals []float32
	cs      []float32      // one position's RoPE cos | sin: [2·rot/2]
	inbuf   []byte         // staging for per-call inputs
	outbuf  []byte         // staging for readback
	obs     trace.Observer // nil: no observation (trace.go)

	timed bool          // DecodeTimed: time the step on the GPU
	gpu   time.Duration // the last timed step's GPU time
	gpuOK bool          // the device measured gpu
}

func (e *Model) newSession() (*Session, error) {
	sc, bufs, err := e.newScratch()
	if err != nil {
		return nil, err
	}
	st, err := e.newState()
	if err != nil {
		for _, b := range bufs {
			e.dev.Free(b)
		}
		return nil, err
	}
	return &Session{e: e, st: st, sc: sc, bufs: bufs, logits: make([]float32, e.sizes.v),
		topIDs: make([]int32, e.topK), topVals: make([]float32, e.topK), cs: make([]float32, 2*e.rope.Half())}, nil
}

// Len is the number of tokens processed.
func (s *Session) Len() int { return s.pos }

func (s *Session) check(n int, toks ...int32) error {
	if s.st == nil {
		return errors.New("metal: session is closed")
	}
	if s.pos+n > s.e.maxCtx {
		return fmt.Errorf("metal: %d tokens after %d exceed the context of %d", n, s.pos, s.e.maxCtx)
	}
	for _, t := range toks {
		if t < 0 || int(t) >= s.e.w.embed.out {
			return fmt.Errorf("metal: token id %d outside the vocabulary [0, %d)", t, s.e.w.embed.out)
		}
	}
	return nil
}

// setInputs writes the token ids and the RoPE table (cos | sin of each new position) for toks at
// positions pos0.. into the shared input buffers.
func (s *Session) setInputs(toks []int32, pos0 int) error {
	sz := &s.e.sizes
	b := s.inbuf[:0]
	for _, t := range toks {
		b = binary.LittleEndian.AppendUint32(b, uint32(t))
	}
	if err := s.e.dev.Upload(s.sc.tokIDs.buf, s.sc.tokIDs.off, b); err != nil {
		return err
	}
	b = b[:0]
	if sz.rot > 0 {
		half := s.e.rope.Half()
		cs := s.cs[:2*half] // cos | sin of one position
		for i := range toks {
			s.e.rope.CosSin(pos0+i, cs[:half], cs[half:])
			for _, v := range cs {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		}
		if err := s.e.dev.Upload(s.sc.cs.buf, s.sc.cs.off, b); err != nil {
			return err
		}
	}
	s.inbuf = b
	return nil
}

// readback is the one place a step's results leave the GPU: the top-k and the log-sum-exp of the
// last position, and its full logits only when o asks for them or for more candidates than
// logits_topk_merge returns. (Prefill's each callback, prompt scoring, reads every position's logits in
// prefillChunk.)
func (s *Session) readback(o engine.StepOptions) (engine.StepResult, error) {
	sc, dev := s.sc, s.e.dev
	if o.Full || o.TopK > s.e.topK || s.e.topK < 1 || s.obs != nil {
		if len(s.outbuf) < 4*s.e.sizes.v {
			s.outbuf = make([]byte, 4*s.e.sizes.v)
		}
		b := s.outbuf[:4*s.e.sizes.v]
		if err := dev.Download(b, sc.logits.buf, sc.logits.off); err != nil {
			return engine.StepResult{}, err
		}
		floats(s.logits, b)
		s.observeLogits()
		return engine.NewStepResult(s.logits, o), nil
	}
	if len(s.outbuf) < 4*s.e.topK {
		s.outbuf = make([]byte, 4*s.e.topK)
	}
	b := s.outbuf
	if err := dev.Download(b[:4*s.e.topK], sc.top.buf, sc.top.off); err != nil {
		return engine.StepResult{}, err
	}
	for i := range s.topIDs {
		s.topIDs[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if err := dev.Download(b[:4*s.e.topK], sc.topv.buf, sc.topv.off); err != nil {
		return engine.StepResult{}, err
	}
	floats(s.topVals, b)
	if err := dev.Download(b[:4], sc.lse.buf, sc.lse.off); err != nil {
		return engine.StepResult{}, err
	}
	lse := math.Float32frombits(binary.LittleEndian.Uint32(b))
	r := engine.StepResult{Greedy: s.topIDs[0]}
	if o.TopK > 0 {
		r.LSE, r.TopIDs, r.TopLogits = float64(lse), s.topIDs[:o.TopK], s.topVals[:o.TopK]
	}
	return r, nil
}

func floats(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// Decode appends one token and returns the result at its position, with what o asks for. Its
// slices are reused by the next call.
func (s *Session) Decode(ctx context.Context, tok int32, o engine.StepOptions) (engine.StepResult, error) {
	if err := s.check(1, tok); err != nil {
		return engine.StepResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return engine.StepResult{}, err
	}
	if err := s.setInputs([]int32{tok}, s.pos); err != nil {
		return engine.StepResult{}, err
	}
	if err := s.run(s.decodePlan(), s.pos); err != nil {
		return engine.StepResult{}, fmt.Errorf("metal: decode at %d: %w", s.pos, err)
	}
	s.pos++
	return s.readback(o)
}

// Prefill appends tokens in chunks of the engine's chunk size and returns the result at the last
// position, with what o asks for; each, when non-nil, gets every position's logits.
func (s *Session) Prefill(ctx context.Context, toks []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	if len(toks) == 0 {
		return engine.StepResult{}, errors.New("metal: empty prefill")
	}
	if err := s.check(len(toks), toks...); err != nil {
		return engine.StepResult{}, err
	}
	for c0 := 0; c0 < len(toks); c0 += s.e.chunk {
		if err := ctx.Err(); err != nil {
			return engine.StepResult{}, err
		}
		c1 := min(c0+s.e.chunk, len(toks))
		if err := s.prefillChunk(toks[c0:c1], c0, each, c1 == len(toks)); err != nil {
			return engine.StepResult{}, err
		}
	}
	return s.readback(o)
}

// Close releases the session's device buffers.
func (s *Session) Close() error {
	if s.st == nil {
		return nil
	}
	s.st.free(s.e.dev)
	for _, b := range s.bufs {
		s.e.dev.Free(b)
	}
	if s.all != nil {
		s.e.dev.Free(s.all)
	}
	s.st, s.bufs, s.all = nil, nil, nil
	return nil
}
