package metal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lily-engine/lily/metal/device"
)

// defaultChunk is how many prompt tokens one prefill command buffer processes.
const defaultChunk = 128

// defaultTopK is how many candidates logits_topk returns per step (see Session.Top).
const defaultTopK = 8

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
	lse     float32
	cs      []float32 // one position's RoPE cos | sin: [2·rot/2]
	inbuf   []byte    // staging for per-call inputs
	outbuf  []byte    // staging for readback

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

// Top returns the last step's top candidates as the GPU computed them (logits_topk): ids and
// logits in descending order (ties to the lower id) and log Σ exp(logits). These are what a
// sampler needs; the slices are reused by the next call.
func (s *Session) Top() (ids []int32, logits []float32, lse float32) {
	return s.topIDs, s.topVals, s.lse
}

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

// readback is the one place a step's results leave the GPU: the top-k of the last position, and
// its full logits. The full [V] logits are read back only because engine.Session returns them; a
// sampler needs just Top, and this is the place to change when the contract becomes top-k only.
// (Prefill's each callback, prompt scoring, reads every position's logits in prefillChunk.)
func (s *Session) readback() error {
	sc, dev := s.sc, s.e.dev
	if len(s.outbuf) < 4*max(s.e.sizes.v, s.e.topK) {
		s.outbuf = make([]byte, 4*max(s.e.sizes.v, s.e.topK))
	}
	b := s.outbuf
	if err := dev.Download(b[:4*s.e.topK], sc.top.buf, sc.top.off); err != nil {
		return err
	}
	for i := range s.topIDs {
		s.topIDs[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if err := dev.Download(b[:4*s.e.topK], sc.topv.buf, sc.topv.off); err != nil {
		return err
	}
	floats(s.topVals, b)
	if err := dev.Download(b[:4], sc.lse.buf, sc.lse.off); err != nil {
		return err
	}
	s.lse = math.Float32frombits(binary.LittleEndian.Uint32(b))
	if err := dev.Download(b[:4*s.e.sizes.v], sc.logits.buf, sc.logits.off); err != nil {
		return err
	}
	floats(s.logits, b)
	return nil
}

func floats(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// Decode appends one token and returns the logits at its position: [V]. The slice is reused by
// the next call.
func (s *Session) Decode(ctx context.Context, tok int32) ([]float32, error) {
	if err := s.check(1, tok); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.setInputs([]int32{tok}, s.pos); err != nil {
		return nil, err
	}
	if err := s.run(s.decodePlan()); err != nil {
		return nil, fmt.Errorf("metal: decode at %d: %w", s.pos, err)
	}
	s.pos++
	if err := s.readback(); err != nil {
		return nil, err
	}
	return s.logits, nil
}

// Prefill appends tokens in chunks of the engine's chunk size and returns the logits at the last
// position; each, when non-nil, gets every position's logits.
func (s *Session) Prefill(ctx context.Context, toks []int32, each func(int, []float32) error) ([]float32, error) {
	if len(toks) == 0 {
		return nil, errors.New("metal: empty prefill")
	}
	if err := s.check(len(toks), toks...); err != nil {
		return nil, err
	}
	for c0 := 0; c0 < len(toks); c0 += s.e.chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c1 := min(c0+s.e.chunk, len(toks))
		if err := s.prefillChunk(toks[c0:c1], c0, each, c1 == len(toks)); err != nil {
			return nil, err
		}
	}
	return s.logits, nil
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
