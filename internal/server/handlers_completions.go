package server

import (
	"net/http"

	"github.com/lily-engine/lily/internal/engine"
)

// completionLogprobs builds the legacy logprobs object; offset is the text offset (bytes) of the
// first token.
type completionLogprobs struct {
	s      *Server
	k      int
	offset int
	lp     CompletionLogprobs
}

func newCompletionLogprobs(s *Server, k, offset int) *completionLogprobs {
	return &completionLogprobs{s: s, k: k, offset: offset, lp: CompletionLogprobs{
		Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{},
	}}
}

// add appends one token; t nil is the unscored first prompt token id.
func (c *completionLogprobs) add(id int32, t *engine.Token) {
	text := c.s.tokenText(id)
	c.lp.Tokens = append(c.lp.Tokens, text)
	c.lp.TextOffset = append(c.lp.TextOffset, c.offset)
	c.offset += len(text)
	if t == nil {
		c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, nil)
		c.lp.TopLogprobs = append(c.lp.TopLogprobs, nil)
		return
	}
	c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, ptr(c.s.finite(t.Logprob)))
	top := make(map[string]float64, len(t.Top))
	for _, a := range t.Top {
		if _, dup := top[c.s.tokenText(a.ID)]; !dup {
			top[c.s.tokenText(a.ID)] = c.s.finite(a.Logprob)
		}
	}
	c.lp.TopLogprobs = append(c.lp.TopLogprobs, top)
}

// take returns the entries so far and starts over (for streamed chunks).
func (c *completionLogprobs) take() *CompletionLogprobs {
	out := c.lp
	c.lp = newCompletionLogprobs(c.s, c.k, c.offset).lp
	return &out
}

// handleCompletions serves POST /v1/completions: a string or token-id prompt, echo with prompt
// logprobs (scoring with max_tokens 0), and return_token_ids.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) error {
	var req CompletionRequest
	req.Prompt.Absent = true
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	g, err := s.params(&req.SamplingParams, req.MaxTokens, "max_tokens", 0)
	if err != nil {
		return err
	}
	p := req.Prompt
	switch {
	case p.Absent:
		return &ParamError{Param: "prompt", Message: "is required"}
	case p.Multiple:
		return &ParamError{Param: "prompt", Message: "only one prompt per request is supported"}
	}
	logprobs := req.Logprobs != nil
	k := 0
	if logprobs {
		if k = *req.Logprobs; k < 0 || k > maxTopLogprobs {
			return &ParamError{Param: "logprobs", Message: "must be between 0 and 20"}
		}
	}
	er := &engine.Request{
		StopIDs:        s.stopIDs,
		Stop:           g.stop,
		Decoder:        s.m.NewDecoder(true),
		Sampling:       g.sampling,
		Logprobs:       logprobs,
		TopLogprobs:    k,
		PromptLogprobs: req.Echo && logprobs,
	}
	promptText := p.Text
	if p.IsIDs {
		er.Prompt = p.IDs
		if req.Echo {
			if promptText, err = s.m.Tok.Decode(p.IDs, false); err != nil {
				return &ParamError{Param: "prompt", Message: err.Error()}
			}
		}
	} else {
		if err := s.checkTextFits(p.Text, 0); err != nil {
			return err
		}
		er.Prompt = s.m.Tok.Encode(p.Text)
	}
	if err := s.fit(er, g, 0); err != nil {
		return err
	}
	t, err := s.q.join()
	if err != nil {
		return err
	}
	defer t.release()
	resp := CompletionResponse{ID: "cmpl-" + s.cfg.RandomID(24), Object: "text_completion",
		Created: s.cfg.Now().Unix(), Model: s.m.Name}
	var lp *completionLogprobs
	if logprobs {
		lp = newCompletionLogprobs(s, k, 0)
	}
	echoText := ""
	if req.Echo {
		echoText = promptText
	}
	// addPrompt puts the scored prompt tokens first (the first one has no score).
	addPrompt := func(res *engine.Result) {
		if lp == nil || !req.Echo {
			return
		}
		lp.add(er.Prompt[0], nil)
		for i := range res.PromptLogprobs {
			lp.add(res.PromptLogprobs[i].ID, &res.PromptLogprobs[i])
		}
	}
	if g.stream {
		return s.streamCompletion(w, r, t, er, g, resp, lp, echoText, addPrompt)
	}
	text := []byte(echoText)
	var gen []engine.Token
	res, err := s.generate(r.Context(), t, er, func(st engine.Step) error {
		text = append(text, st.Text...)
		if st.Token != nil {
			gen = append(gen, *st.Token)
		}
		return nil
	})
	if err != nil {
		return err
	}
	choice := CompletionChoice{Text: string(text), FinishReason: ptr(string(res.Finish))}
	if lp != nil {
		addPrompt(res)
		for i := range gen {
			lp.add(gen[i].ID, &gen[i])
		}
		choice.Logprobs = lp.take()
	}
	if g.returnIDs {
		choice.PromptTokenIDs, choice.TokenIDs = er.Prompt, nonNil(res.Tokens)
	}
	resp.Choices, resp.Usage = []CompletionChoice{choice}, usage(len(er.Prompt), res)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// streamCompletion writes the completion as SSE chunks: the echoed prompt (with its scores) once
// prefill is done, one chunk per step, the finish reason, the usage (when asked), and [DONE].
func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, t *ticket, er *engine.Request, g genParams,
	base CompletionResponse, lp *completionLogprobs, echoText string, addPrompt func(*engine.Result)) error {
	chunk := func(c CompletionChoice) CompletionResponse {
		out := base
		out.Choices = []CompletionChoice{c}
		return out
	}
	sse := startSSE(w, s.cfg.KeepAlive)
	defer sse.close()
	er.OnPrefill = func(res *engine.Result) error {
		if echoText == "" && !g.returnIDs {
			return nil
		}
		c := CompletionChoice{Text: echoText}
		if lp != nil && echoText != "" {
			addPrompt(res)
			c.Logprobs = lp.take()
		}
		if g.returnIDs {
			c.PromptTokenIDs = er.Prompt
		}
		return sse.event(chunk(c))
	}
	res, err := s.generate(r.Context(), t, er, func(st engine.Step) error {
		c := CompletionChoice{Text: st.Text}
		if st.Token != nil {
			if lp != nil {
				lp.add(st.Token.ID, st.Token)
				c.Logprobs = lp.take()
			}
			if g.returnIDs {
				c.TokenIDs = []int32{st.Token.ID}
			}
		}
		if c.Text == "" && c.Logprobs == nil && c.TokenIDs == nil {
			return nil
		}
		return sse.event(chunk(c))
	})
	if err != nil {
		if r.Context().Err() == nil {
			_ = sse.event(s.streamErrorBody(r, err))
			sse.done()
		}
		return nil
	}
	if err := sse.event(chunk(CompletionChoice{FinishReason: ptr(string(res.Finish))})); err != nil {
		return nil
	}
	if g.includeUsage {
		u := base
		u.Choices, u.Usage = []CompletionChoice{}, usage(len(er.Prompt), res)
		_ = sse.event(u)
	}
	sse.done()
	return nil
}
