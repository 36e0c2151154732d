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
	asIDs  bool // return_tokens_as_token_ids
	lp     CompletionLogprobs
}

func newCompletionLogprobs(s *Server, k, offset int, asIDs bool) *completionLogprobs {
	return &completionLogprobs{s: s, k: k, offset: offset, asIDs: asIDs, lp: CompletionLogprobs{
		Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{},
	}}
}

// add appends one token; t nil is the unscored first prompt token id.
func (c *completionLogprobs) add(id int32, t *engine.Token) {
	text := c.s.tokenText(id)
	c.lp.Tokens = append(c.lp.Tokens, c.s.logprobToken(id, c.asIDs))
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
		key := idToken(a.ID)
		if !c.asIDs {
			key = c.s.topKey(a.ID, top)
		}
		top[key] = c.s.finite(a.Logprob)
	}
	c.lp.TopLogprobs = append(c.lp.TopLogprobs, top)
}

// take returns the entries so far and starts over (for streamed chunks).
func (c *completionLogprobs) take() *CompletionLogprobs {
	out := c.lp
	c.lp = newCompletionLogprobs(c.s, c.k, c.offset, c.asIDs).lp
	return &out
}

// handleCompletions serves POST /v1/completions: a string or token-id prompt, echo with prompt
// logprobs (scoring with max_tokens 0), return_token_ids, and n choices generated one after the
// other (the prompt prefilled once: the later choices reuse it from the prompt cache).
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
	if req.Suffix != nil && *req.Suffix != "" {
		return &ParamError{Param: "suffix", Message: "is not supported: the model has no fill-in-the-middle format"}
	}
	if req.BestOf != nil && *req.BestOf != 1 {
		return &ParamError{Param: "best_of", Message: "only best_of=1 is supported; use n for several choices"}
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
		Stop:           g.stop,
		Sampling:       g.sampling,
		Logprobs:       logprobs,
		TopLogprobs:    k,
		PromptLogprobs: req.Echo && logprobs,
	}
	s.apply(er, g.x)
	if p.IsIDs {
		er.Prompt = p.IDs
	} else {
		if err := s.checkTextFits(p.Text, 0); err != nil {
			return err
		}
		er.Prompt = s.m.Tok.Encode(p.Text)
	}
	if err := s.fit(er, g, 0); err != nil {
		return withParam(err, "prompt")
	}
	promptText := p.Text
	if p.IsIDs && req.Echo {
		if promptText, err = s.m.Tok.Decode(p.IDs, false); err != nil {
			return &ParamError{Param: "prompt", Message: err.Error()}
		}
	}
	fresh, err := s.constraint(g.x.format, er.StopIDs)
	if err != nil {
		return err
	}
	t, err := s.q.join()
	if err != nil {
		return err
	}
	defer t.release()
	resp := CompletionResponse{ID: "cmpl-" + s.cfg.RandomID(24), Object: "text_completion",
		Created: s.cfg.Now().Unix(), Model: s.m.Name}
	echoText := ""
	if req.Echo {
		echoText = promptText
	}
	choices := make([]*completionChoice, g.x.n)
	for i := range choices {
		c := &completionChoice{index: i, er: s.choiceRequest(er, i, g.x, fresh), echo: req.Echo, echoText: echoText}
		if logprobs {
			c.lp = newCompletionLogprobs(s, k, 0, g.x.idsAsTokens)
		}
		choices[i] = c
	}
	if g.stream {
		return s.streamCompletions(w, r, t, g, resp, choices)
	}
	results := make([]*engine.Result, len(choices))
	for i, c := range choices {
		text := []byte(echoText)
		var gen []engine.Token
		res, err := s.generate(r.Context(), t, c.er, func(st engine.Step) error {
			text = append(text, st.Text...)
			if st.Token != nil {
				gen = append(gen, *st.Token)
			}
			return nil
		})
		if err != nil {
			return err
		}
		results[i] = res
		choice := CompletionChoice{Index: i, Text: string(text), FinishReason: ptr(string(res.Finish))}
		if c.lp != nil {
			c.addPrompt(res)
			for i := range gen {
				c.lp.add(gen[i].ID, &gen[i])
			}
			choice.Logprobs = c.lp.take()
		}
		if g.returnIDs {
			choice.PromptTokenIDs, choice.TokenIDs = er.Prompt, nonNil(res.Tokens)
		}
		resp.Choices = append(resp.Choices, choice)
	}
	resp.Usage = usage(len(er.Prompt), results...)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// choiceRequest returns the request of choice i: a copy of er with its own decoder and constraint
// and, when a seed is set, seed+i, so that the choices differ and stay reproducible.
func (s *Server) choiceRequest(er *engine.Request, i int, x extraParams, fresh func(*engine.Request) engine.Constraint) *engine.Request {
	c := *er
	c.Decoder = s.m.NewDecoder(x.skipSpecial)
	if c.Sampling.HasSeed {
		c.Sampling.Seed += uint64(i)
	}
	if fresh != nil {
		c.Constraint = fresh(&c)
	}
	return &c
}

// completionChoice is the state of one choice of a completion.
type completionChoice struct {
	index    int
	er       *engine.Request
	lp       *completionLogprobs
	echo     bool
	echoText string
}

// addPrompt puts the scored prompt tokens first (the first one has no score).
func (c *completionChoice) addPrompt(res *engine.Result) {
	if c.lp == nil || !c.echo {
		return
	}
	c.lp.add(c.er.Prompt[0], nil)
	for i := range res.PromptLogprobs {
		c.lp.add(res.PromptLogprobs[i].ID, &res.PromptLogprobs[i])
	}
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// streamCompletions writes the choices one after the other as SSE chunks: for each, the echoed
// prompt (with its scores) once prefill is done, one chunk per step and the finish reason; then
// the usage (when asked) and [DONE].
func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, t *ticket, g genParams,
	base CompletionResponse, choices []*completionChoice) error {
	chunk := func(c CompletionChoice) CompletionResponse {
		out := base
		out.Choices = []CompletionChoice{c}
		return out
	}
	sse := startSSE(w, s.cfg.KeepAlive)
	defer sse.close()
	results := make([]*engine.Result, len(choices))
	for i, ch := range choices {
		er, lp := ch.er, ch.lp
		er.OnPrefill = func(res *engine.Result) error {
			if ch.echoText == "" && !g.returnIDs {
				return nil
			}
			c := CompletionChoice{Index: i, Text: ch.echoText}
			if lp != nil && ch.echoText != "" {
				ch.addPrompt(res)
				c.Logprobs = lp.take()
			}
			if g.returnIDs {
				c.PromptTokenIDs = er.Prompt
			}
			return sse.event(chunk(c))
		}
		res, err := s.generate(r.Context(), t, er, func(st engine.Step) error {
			c := CompletionChoice{Index: i, Text: st.Text}
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
		results[i] = res
		if err := sse.event(chunk(CompletionChoice{Index: i, FinishReason: ptr(string(res.Finish))})); err != nil {
			return nil
		}
	}
	if g.includeUsage {
		u := base
		u.Choices, u.Usage = []CompletionChoice{}, usage(len(choices[0].er.Prompt), results...)
		_ = sse.event(u)
	}
	sse.done()
	return nil
}
