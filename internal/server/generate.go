package server

import (
	"context"
	"unicode/utf8"

	"github.com/lily-engine/lily/internal/engine"
)

// generate waits for the ticket's turn, then runs the request on the engine. Both end early when
// ctx ends (the client went away), the engine within one decode step.
func (s *Server) generate(ctx context.Context, t *ticket, r *engine.Request, emit func(engine.Step) error) (*engine.Result, error) {
	releasePrep(ctx) // the pre-queue work is done
	if err := t.wait(ctx); err != nil {
		return nil, err
	}
	return s.eng.Generate(ctx, r, emit)
}

// lastIndex returns the position of the last id in ids, or 0 when absent (the engine's default).
func lastIndex(ids []int32, id int32) int {
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] == id {
			return i
		}
	}
	return 0
}

// tokenText is the text of one token as logprobs show it (special tokens kept; a partial UTF-8
// character shows as U+FFFD).
func (s *Server) tokenText(id int32) string {
	t, err := s.m.Tok.Decode([]int32{id}, false)
	if err != nil {
		return ""
	}
	return t
}

func bytesOf(s string) []int {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

// chatLogprob converts an engine token to the chat logprobs entry.
func (s *Server) chatLogprob(t *engine.Token) TokenLogprob {
	text := s.tokenText(t.ID)
	e := TokenLogprob{Token: text, Logprob: s.finite(t.Logprob), Bytes: bytesOf(text), TopLogprobs: []TopLogprob{}}
	for _, a := range t.Top {
		at := s.tokenText(a.ID)
		e.TopLogprobs = append(e.TopLogprobs, TopLogprob{Token: at, Logprob: s.finite(a.Logprob), Bytes: bytesOf(at)})
	}
	return e
}

// finite is engine.FiniteLogprob for the wire; the first non-finite value is logged (once).
func (s *Server) finite(v float64) float64 {
	f, ok := engine.FiniteLogprob(v)
	if !ok {
		s.nanOnce.Do(func() {
			s.log.Warn("the model produced a non-finite log-probability; it is sent as the floor value",
				"value", v, "floor", engine.LogprobFloor)
		})
	}
	return f
}

func usage(promptTokens int, res *engine.Result) *Usage {
	u := &Usage{PromptTokens: promptTokens, CompletionTokens: len(res.Tokens), TotalTokens: promptTokens + len(res.Tokens)}
	u.PromptTokensDetails = &PromptTokensDetails{CachedTokens: res.CachedTokens}
	return u
}

func ptr[T any](v T) *T { return &v }
