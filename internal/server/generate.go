package server

import (
	"context"
	"strconv"
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
	tm := s.metrics.begin(len(r.Prompt))
	res, err := s.eng.Generate(ctx, r, func(st engine.Step) error {
		if st.Token != nil {
			tm.step()
		}
		if emit == nil {
			return nil
		}
		return emit(st)
	})
	tm.done(res)
	return res, err
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

// tokenBytes is the token's own bytes as logprobs' `bytes` shows them: a byte token that is part
// of a character keeps its byte, so that distinct tokens stay distinct.
func (s *Server) tokenBytes(id int32) []int {
	raw := s.m.Tok.TokenBytes(id)
	b := make([]int, len(raw))
	for i, c := range raw {
		b[i] = int(c)
	}
	return b
}

// idToken is vLLM's return_tokens_as_token_ids spelling of a token.
func idToken(id int32) string { return "token_id:" + strconv.Itoa(int(id)) }

// logprobToken is the `token` of a logprobs entry: its text, or "token_id:N" when asked.
func (s *Server) logprobToken(id int32, asIDs bool) string {
	if asIDs {
		return idToken(id)
	}
	return s.tokenText(id)
}

// chatLogprob converts an engine token to the chat logprobs entry.
func (s *Server) chatLogprob(t *engine.Token, asIDs bool) TokenLogprob {
	e := TokenLogprob{Token: s.logprobToken(t.ID, asIDs), Logprob: s.finite(t.Logprob), Bytes: s.tokenBytes(t.ID), TopLogprobs: []TopLogprob{}}
	for _, a := range t.Top {
		e.TopLogprobs = append(e.TopLogprobs, TopLogprob{Token: s.logprobToken(a.ID, asIDs), Logprob: s.finite(a.Logprob), Bytes: s.tokenBytes(a.ID)})
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

// topKey is a token's key in the completions top_logprobs map: its text, unless its bytes are not
// whole characters (they would show as U+FFFD) or the text is already a key; then "token_id:N", so
// that every alternative keeps its own entry.
func (s *Server) topKey(id int32, taken map[string]float64) string {
	text := s.tokenText(id)
	if _, dup := taken[text]; dup || !utf8.Valid(s.m.Tok.TokenBytes(id)) {
		return idToken(id)
	}
	return text
}

// usage counts the prompt once and the tokens of every choice; cached tokens are the first
// choice's (the others reuse the prompt the first one prefilled).
func usage(promptTokens int, res ...*engine.Result) *Usage {
	u := &Usage{PromptTokens: promptTokens}
	for _, r := range res {
		u.CompletionTokens += len(r.Tokens)
	}
	u.TotalTokens = promptTokens + u.CompletionTokens
	u.PromptTokensDetails = &PromptTokensDetails{CachedTokens: res[0].CachedTokens}
	return u
}

func ptr[T any](v T) *T { return &v }
