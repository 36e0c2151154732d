package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrEmptyPrompt is returned for a request without prompt tokens.
var ErrEmptyPrompt = errors.New("the prompt has no tokens")

// ContextLengthError says that a request does not fit the context window.
type ContextLengthError struct {
	Prompt, MaxTokens, Context int
}

func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("this model's maximum context length is %d tokens, but %d prompt tokens and %d "+
		"completion tokens were requested", e.Context, e.Prompt, e.MaxTokens)
}

// TokenRangeError says that a prompt token id is outside the vocabulary.
type TokenRangeError struct {
	Index int
	ID    int32
	Vocab int
}

func (e *TokenRangeError) Error() string {
	return fmt.Sprintf("prompt token %d has id %d, outside the vocabulary [0, %d)", e.Index, e.ID, e.Vocab)
}

// TextDecoder turns generated ids into text, emitting text only when it is UTF-8-complete
// (the tokenizer's StreamDecoder).
type TextDecoder interface {
	Add(id int32) (string, error)
	Flush() string
}

// FinishReason says why generation ended.
type FinishReason string

const (
	// FinishStop: a stop id or a stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxTokens reached.
	FinishLength FinishReason = "length"
)

// Request is one generation.
type Request struct {
	// Prompt is the token sequence to continue; it must not be empty.
	Prompt []int32
	// MaxTokens is the most tokens to generate; 0 only scores the prompt (prefill, no decode).
	MaxTokens int
	// StopIDs end generation when generated (the model's end-of-turn ids). The stop token is counted
	// and listed in Result.Tokens but produces no text.
	StopIDs []int32
	// Stop strings end generation when they appear in the text; they are never emitted. They need Decoder.
	Stop []string
	// Decoder, when set, turns generated tokens into Step.Text.
	Decoder TextDecoder
	// Sampling picks tokens; the zero value is greedy.
	Sampling Sampling
	// Logprobs adds each generated token's logprob and TopLogprobs alternatives (0..20).
	Logprobs    bool
	TopLogprobs int
	// PromptLogprobs scores the prompt: Result.PromptLogprobs gets the logprob of every prompt token
	// after the first (with TopLogprobs alternatives). It disables prefix reuse for this request.
	PromptLogprobs bool
	// CachePrefix is how many prompt tokens the cached state should cover for the next request
	// (for chat, the start of the last turn, which re-renders identically). Outside 1..len(Prompt)-1
	// it means len(Prompt)-1.
	CachePrefix int
	// LogitBias is added to the logits of these ids before sampling.
	LogitBias map[int32]float32
	// RepetitionPenalty, when > 0 and ≠ 1, divides the positive logits and multiplies the negative
	// ones of every id in the prompt or generated so far (the transformers rule).
	RepetitionPenalty float64
	// MinTokens masks the StopIDs and ignores stop strings until this many tokens are generated.
	MinTokens int
	// IncludeStop keeps a matched stop string at the end of the text.
	IncludeStop bool
	// Constraint, when set, restricts every pick to the tokens it allows.
	Constraint Constraint
	// OnPrefill, when set, is called once the prompt is prefilled, with the result so far
	// (PromptLogprobs, CachedTokens); an error ends generation. Streams use it to send the scored
	// prompt before the first generated token.
	OnPrefill func(*Result) error
}

// Token is one token with its scores.
type Token struct {
	ID      int32
	Logprob float64 // set when logprobs were requested
	Top     []TopLogprob
}

// Step is what Generate reports after each decode step: the token (nil for the final flush of
// held-back text) and the text released by this step.
type Step struct {
	Token *Token
	Text  string
}

// Result sums up a finished generation.
type Result struct {
	Finish FinishReason
	// Tokens are the generated ids, including a final stop id.
	Tokens []int32
	// PromptLogprobs has len(Prompt)-1 entries (positions 1..) when PromptLogprobs was asked.
	PromptLogprobs []Token
	// CachedTokens is how many prompt tokens were reused from the cached state.
	CachedTokens int
}

// Engine runs generations on one backend, one at a time, and keeps the state of the last prompt
// for prefix reuse. Generate is safe for concurrent use; calls are serialized (the server admits
// one sequence at a time anyway).
type Engine struct {
	mu      sync.Mutex
	b       Backend
	window  int // the context window Check holds requests to, at most b.MaxContext()
	sess    Session
	cached  []int32  // tokens covered by snap
	snap    Snapshot // nil: nothing cached
	noCache bool     // the backend cannot snapshot
}

// New returns an engine on b whose context window is b.MaxContext().
func New(b Backend) *Engine { return NewWindow(b, 0) }

// NewWindow returns an engine on b whose context window is window tokens when 0 < window <
// b.MaxContext(), else b.MaxContext().
func NewWindow(b Backend, window int) *Engine {
	w := b.MaxContext()
	if window > 0 && window < w {
		w = window
	}
	return &Engine{b: b, window: w}
}

// Backend returns the engine's backend.
func (e *Engine) Backend() Backend { return e.b }

// Window returns the context window requests are checked against.
func (e *Engine) Window() int { return e.window }

// Check validates a request against the vocabulary and the context window without running it:
// the one check of prompt + MaxTokens against the window. least is the fewest completion tokens
// the caller needs room for (a chat turn needs 1); a MaxTokens below it is refused, and reported
// as least, like one that does not fit. Generate does not check again: call Check first.
func (e *Engine) Check(r *Request, least int) error {
	if len(r.Prompt) == 0 {
		return ErrEmptyPrompt
	}
	v := e.b.VocabSize()
	for i, id := range r.Prompt {
		if id < 0 || int(id) >= v {
			return &TokenRangeError{Index: i, ID: id, Vocab: v}
		}
	}
	return e.CheckLength(len(r.Prompt), r.MaxTokens, least)
}

// CheckLength is Check's context rule alone: prompt tokens and maxTokens (at least least) must fit
// the window. The server also applies it to a lower bound of the prompt's length before tokenizing.
func (e *Engine) CheckLength(prompt, maxTokens, least int) error {
	if maxTokens < max(least, 0) || maxTokens > e.window-prompt { // no sum: maxTokens may be near MaxInt
		return &ContextLengthError{Prompt: prompt, MaxTokens: max(maxTokens, least), Context: e.window}
	}
	return nil
}

// Close releases the session and the cached state.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropCache()
	if e.sess != nil {
		err := e.sess.Close()
		e.sess = nil
		return err
	}
	return nil
}

func (e *Engine) dropCache() {
	if e.snap != nil {
		e.snap.Release()
	}
	e.snap, e.cached = nil, nil
}

// Generate prefills r.Prompt (reusing the cached prefix when it can), then decodes until a stop id,
// a stop string, or MaxTokens. emit (may be nil) is called after every step; an error from emit or
// from ctx ends generation with that error. ctx is checked every step, so cancellation stops the
// work within one decode step (and within one prefill chunk, by the backend's contract).
// r must have passed Check; the backend still refuses a sequence longer than its MaxContext.
func (e *Engine) Generate(ctx context.Context, r *Request, emit func(Step) error) (*Result, error) {
	if emit == nil {
		emit = func(Step) error { return nil }
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{}
	procs := newProcessors(r)
	// What each step returns: the full logits when a logit processor runs, else what the sampler
	// and the logprobs need (the greedy id, or the top-k and the log-sum-exp).
	opt := r.Sampling.stepOptions(r.Logprobs, r.TopLogprobs)
	if procs.active() {
		opt = StepOptions{Full: true}
	}
	step, err := e.prefill(ctx, r, res, opt)
	if err != nil {
		return nil, err
	}
	if r.OnPrefill != nil {
		if err := r.OnPrefill(res); err != nil {
			return nil, err
		}
	}
	if r.MaxTokens == 0 {
		res.Finish = FinishLength
		return res, nil
	}
	sm := newSampler(r.Sampling)
	stops := &stopMatcher{include: r.IncludeStop}
	for _, s := range r.Stop {
		if s != "" {
			stops.stops = append(stops.stops, s)
		}
	}
	for {
		pickFrom := &step
		if procs.active() {
			// The processors run on a copy of the full logits (opt asked for them), so that
			// logprobs keep reporting the model's own distribution.
			x, err := procs.apply(step.Logits, len(res.Tokens))
			if err != nil {
				return nil, err
			}
			pickFrom = &StepResult{Logits: x}
		}
		id := sm.pick(pickFrom)
		sm.observe(id)
		if err := procs.observe(id); err != nil {
			return nil, err
		}
		res.Tokens = append(res.Tokens, id)
		tok := &Token{ID: id}
		if r.Logprobs {
			tok.Logprob, tok.Top = stepLogprobs(&step, id, r.TopLogprobs)
		}
		out := Step{Token: tok}
		isStopID := slices.Contains(r.StopIDs, id) && len(res.Tokens) > r.MinTokens
		hitString := false
		if r.Decoder != nil && !isStopID {
			text, err := r.Decoder.Add(id)
			if err != nil {
				return nil, fmt.Errorf("decode token %d: %w", id, err)
			}
			if len(res.Tokens) > r.MinTokens {
				out.Text, hitString = stops.add(text)
			} else {
				out.Text = stops.pass(text)
			}
		}
		if err := emit(out); err != nil {
			return nil, err
		}
		if hitString {
			res.Finish = FinishStop
			return res, nil
		}
		if isStopID {
			res.Finish = FinishStop
			break
		}
		if len(res.Tokens) >= r.MaxTokens {
			res.Finish = FinishLength
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if step, err = e.sess.Decode(ctx, id, opt); err != nil {
			return nil, err
		}
	}
	// Release what the decoder and the stop matcher still hold (not after a stop string: what
	// follows it is dropped).
	if r.Decoder != nil {
		text, hit := stops.add(r.Decoder.Flush())
		if !hit {
			text += stops.flush()
		}
		if text != "" {
			if err := emit(Step{Text: text}); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// prefill brings the session to the end of the prompt and returns the last position's result, with
// what opt asks for.
// It restores the cached state when that state covers a prefix of the prompt, and snapshots the state
// at r.CachePrefix for the next request.
func (e *Engine) prefill(ctx context.Context, r *Request, res *Result, opt StepOptions) (StepResult, error) {
	p := r.Prompt
	cut := r.CachePrefix
	if cut <= 0 || cut >= len(p) {
		cut = len(p) - 1
	}
	start := 0
	reuse := !r.PromptLogprobs && e.snap != nil && len(e.cached) < len(p) && slices.Equal(e.cached, p[:len(e.cached)])
	if reuse {
		if e.sess == nil {
			s, err := e.b.NewSession()
			if err != nil {
				return StepResult{}, err
			}
			e.sess = s
		}
		if err := e.sess.Restore(e.snap); err != nil {
			reuse = false
			e.dropCache()
		} else {
			start = len(e.cached)
			res.CachedTokens = start
		}
	}
	if !reuse {
		if e.sess != nil {
			_ = e.sess.Close()
			e.sess = nil
		}
		s, err := e.b.NewSession()
		if err != nil {
			return StepResult{}, err
		}
		e.sess = s
	}
	var each func(int, []float32) error
	if r.PromptLogprobs {
		res.PromptLogprobs = make([]Token, len(p)-1)
		each = func(i int, logits []float32) error {
			if i+1 < len(p) {
				t := Token{ID: p[i+1]}
				t.Logprob, t.Top = logprobs(logits, p[i+1], r.TopLogprobs)
				res.PromptLogprobs[i] = t
			}
			return nil
		}
	}
	offset := func(base int) func(int, []float32) error {
		if each == nil {
			return nil
		}
		return func(i int, l []float32) error { return each(base+i, l) }
	}
	// Part one: up to the cache point, then snapshot it (unless it is already what is cached).
	if !e.noCache && cut > start {
		e.dropCache()
		if _, err := e.sess.Prefill(ctx, p[start:cut], StepOptions{}, offset(start)); err != nil {
			return StepResult{}, err
		}
		snap, err := e.sess.Snapshot()
		if err != nil {
			e.noCache = true
		} else {
			e.snap, e.cached = snap, slices.Clone(p[:cut])
		}
		start = cut
	}
	return e.sess.Prefill(ctx, p[start:], opt, offset(start))
}

// WarmUp runs one short greedy generation — a prompt of tokens ids (fewer where the window is
// shorter) and two new tokens — through the path a request takes (a new session, the prefill with
// its snapshot, a decode step), then forgets it: the snapshot is released and the session closed,
// so the next request finds no cache and no state of it. What it leaves is what a first request
// would otherwise pay for: the backend's buffers allocated and touched, the mapped weights the
// steps read faulted in. It returns the prompt length it ran (0: the window holds none).
func (e *Engine) WarmUp(ctx context.Context, tokens int) (int, error) {
	n := min(tokens, e.window-2)
	if n < 1 {
		return 0, nil
	}
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(i % e.b.VocabSize())
	}
	r := &Request{Prompt: prompt, MaxTokens: 2}
	if err := e.Check(r, 1); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	_, err := e.Generate(ctx, r, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropCache()
	if e.sess != nil {
		err = errors.Join(err, e.sess.Close())
		e.sess = nil
	}
	if err != nil {
		return 0, fmt.Errorf("warm-up with a %d-token prompt: %w", n, err)
	}
	return n, nil
}
