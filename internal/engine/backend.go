// Package engine holds what every backend shares: the Backend/Session contract (design.md §3) and the
// generation loop built on it.
package engine

import "context"

// Backend turns token ids into next-token scores. A Backend is safe for concurrent use only
// through distinct Sessions; one Session is used by one goroutine at a time.
type Backend interface {
	// Name names the backend for logs and /v1/models: "ref", "fast", "metal" or "metal-emu".
	Name() string
	// VocabSize is the logits length (the padded vocab, 248320 for the real model).
	VocabSize() int
	// MaxContext is the longest sequence a session may hold.
	MaxContext() int
	// NewSession returns an empty sequence state (position 0).
	NewSession() (Session, error)
	// Close releases what the backend holds (worker pools, devices, device buffers). Its sessions
	// must be closed first; the weights it was opened on are the caller's.
	Close() error
}

// Session is the state of one sequence: KV cache, conv and recurrent state, position.
type Session interface {
	// Len is the number of tokens processed so far (the next token's position).
	Len() int
	// Prefill appends tokens and returns the result at the last position, with what o asks for.
	// When each is non-nil it is called with the logits [V] of every position i in
	// 0..len(tokens)-1 (prompt scoring); the slice is only valid during the call.
	// It checks ctx between chunks/layers and returns ctx.Err() when cancelled.
	Prefill(ctx context.Context, tokens []int32, o StepOptions, each func(i int, logits []float32) error) (StepResult, error)
	// Decode appends one token and returns the result at its position, with what o asks for.
	// The result's slices are valid until the session's next step.
	Decode(ctx context.Context, token int32, o StepOptions) (StepResult, error)
	// Snapshot copies the state so that Restore can return to it (prompt caching).
	Snapshot() (Snapshot, error)
	// Restore replaces the state with a snapshot taken from a session of the same backend.
	Restore(Snapshot) error
	// Close releases the state.
	Close() error
}

// Snapshot is an opaque copy of a session's state.
type Snapshot interface {
	// Len is the number of tokens the state covers.
	Len() int
	// Release frees what the snapshot holds (device buffers on a GPU backend) now rather than when
	// the garbage collector finds it; the snapshot must not be restored afterwards. A second call
	// does nothing.
	Release()
}
