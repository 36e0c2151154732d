package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/lily-engine/lily/internal/engine"
)

// chatTurn accumulates one assistant turn from parser deltas; one goroutine owns it.
type chatTurn struct {
	s         *Server
	index     int
	er        *engine.Request
	maxCalls  int // 0: any number
	parser    Parser
	reasoning strings.Builder
	content   strings.Builder
	calls     []ToolCall
	callPos   map[int]int // parser tool index → position in calls
	logprobs  []TokenLogprob
}

// apply folds deltas into the turn and returns the streamed delta for them (ok false when empty).
func (c *chatTurn) apply(ds []Delta) (ChatDelta, bool) {
	var d ChatDelta
	var content strings.Builder
	for _, x := range ds {
		d.ReasoningContent += x.Reasoning
		c.reasoning.WriteString(x.Reasoning)
		content.WriteString(x.Content)
		c.content.WriteString(x.Content)
		if tc := x.ToolCall; tc != nil {
			pos, seen := c.callPos[tc.Index]
			if !seen && c.maxCalls > 0 && len(c.calls) >= c.maxCalls {
				continue // parallel_tool_calls false: the constraint ends the turn after one call
			}
			if !seen {
				pos = len(c.calls)
				c.callPos[tc.Index] = pos
				c.calls = append(c.calls, ToolCall{ID: "call_" + c.s.cfg.RandomID(24), Type: "function",
					Function: FunctionCall{Name: tc.Name}})
			}
			c.calls[pos].Function.Arguments += tc.Arguments
			if n := len(d.ToolCalls); n > 0 && *d.ToolCalls[n-1].Index == pos {
				d.ToolCalls[n-1].Function.Arguments += tc.Arguments
				continue
			}
			out := ToolCall{Index: ptr(pos), Function: FunctionCall{Arguments: tc.Arguments}}
			if !seen {
				out.ID, out.Type, out.Function.Name = c.calls[pos].ID, "function", tc.Name
			}
			d.ToolCalls = append(d.ToolCalls, out)
		}
	}
	if content.Len() > 0 {
		d.Content = ptr(content.String())
	}
	return d, d.Content != nil || d.ReasoningContent != "" || len(d.ToolCalls) > 0
}

func (c *chatTurn) finishReason(f engine.FinishReason) string {
	if len(c.calls) > 0 && f == engine.FinishStop {
		return "tool_calls"
	}
	return string(f)
}

// handleChat serves POST /v1/chat/completions; n choices are generated one after the other (the
// prompt prefilled once: the later choices reuse it from the prompt cache).
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) error {
	var req ChatRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	job, err := s.prepareChat(&req)
	if err != nil {
		return err
	}
	g, er, turns := job.g, job.er, job.turns
	t, err := s.q.join()
	if err != nil {
		return err
	}
	defer t.release()
	resp := ChatResponse{ID: "chatcmpl-" + s.cfg.RandomID(24), Created: s.cfg.Now().Unix(), Model: s.m.Name}
	if g.returnIDs {
		resp.PromptTokenIDs = er.Prompt
	}
	if g.stream {
		return s.streamChat(w, r, t, g, turns, resp)
	}
	results := make([]*engine.Result, len(turns))
	for i, turn := range turns {
		res, err := s.generate(r.Context(), t, turn.er, func(st engine.Step) error {
			turn.apply(turn.parser.Add(st.Text))
			if req.Logprobs && st.Token != nil {
				turn.logprobs = append(turn.logprobs, s.chatLogprob(st.Token, g.x.idsAsTokens))
			}
			return nil
		})
		if err != nil {
			return err
		}
		results[i] = res
		turn.apply(turn.parser.Finish())
		msg := &ChatMessage{Role: "assistant", ReasoningContent: turn.reasoning.String(), ToolCalls: turn.calls}
		if content := turn.content.String(); content != "" || len(turn.calls) == 0 {
			msg.Content = &content
		}
		choice := ChatChoice{Index: i, Message: msg, FinishReason: ptr(turn.finishReason(res.Finish))}
		if req.Logprobs {
			choice.Logprobs = &ChatLogprobs{Content: turn.logprobs}
		}
		if g.returnIDs {
			choice.TokenIDs = res.Tokens
		}
		resp.Choices = append(resp.Choices, choice)
	}
	resp.Object, resp.Usage = "chat.completion", usage(len(er.Prompt), results...)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// chatJob is a validated chat request ready to run: one turn per choice.
type chatJob struct {
	g     genParams
	er    *engine.Request
	turns []*chatTurn
}

// startTurn prepares a one-choice chat request (prepareChat) and joins the engine's queue, for
// the APIs that answer with one turn (Responses, Messages); the caller releases the ticket.
func (s *Server) startTurn(req *ChatRequest) (*chatJob, *ticket, error) {
	job, err := s.prepareChat(req)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.q.join()
	if err != nil {
		return nil, nil, err
	}
	return job, t, nil
}

// runTurn generates turn on ticket t and passes emit the chat deltas parsed from the text as it
// comes, then the parser's remainder once generation ends.
func (s *Server) runTurn(ctx context.Context, t *ticket, turn *chatTurn, emit func(ChatDelta) error) (*engine.Result, error) {
	res, err := s.generate(ctx, t, turn.er, func(st engine.Step) error {
		d, _ := turn.apply(turn.parser.Add(st.Text))
		return emit(d)
	})
	if err != nil {
		return nil, err
	}
	d, _ := turn.apply(turn.parser.Finish())
	return res, emit(d)
}

// prepareChat validates a chat request, renders and encodes its prompt, and sets up each choice's
// request, constraint and parser. The Responses and Messages APIs map onto it.
func (s *Server) prepareChat(req *ChatRequest) (*chatJob, error) {
	maxTok, maxParam := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		maxTok, maxParam = req.MaxCompletionTokens, "max_completion_tokens"
	}
	g, err := s.params(&req.SamplingParams, maxTok, maxParam, 1)
	if err != nil {
		return nil, err
	}
	opt, err := CheckChatInput(req.Messages, req.Tools, req.ChatTemplateKwargs)
	if err != nil {
		return nil, err
	}
	if err := checkParts(req.Messages); err != nil {
		return nil, err
	}
	tp, err := parseTools(req.Tools, req.ToolChoice, req.ParallelToolCalls)
	if err != nil {
		return nil, err
	}
	top := 0
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > maxTopLogprobs {
			return nil, &ParamError{Param: "top_logprobs", Message: "must be between 0 and 20"}
		}
		top = *req.TopLogprobs
	}
	text, err := s.m.Chat.Render(req.Messages, req.Tools, opt)
	if err != nil {
		return nil, &TemplateError{Err: err}
	}
	if err := s.checkTextFits(text, 1); err != nil {
		return nil, err
	}
	er := &engine.Request{
		Prompt:      s.m.Tok.Encode(text),
		Stop:        g.stop,
		Sampling:    g.sampling,
		Logprobs:    req.Logprobs,
		TopLogprobs: top,
	}
	s.apply(er, g.x)
	er.LogitBias = s.ban(tp, er.LogitBias)
	if s.imStart >= 0 {
		// Cache up to the last turn's start: the history re-renders identically next time.
		er.CachePrefix = lastIndex(er.Prompt, s.imStart)
	}
	if err := s.fit(er, g, 1); err != nil {
		return nil, err
	}
	thinking := opt.EnableThinking == nil || *opt.EnableThinking
	fresh, err := s.chatConstraint(g.x.format, tp, thinking, er.StopIDs)
	if err != nil {
		return nil, err
	}
	turns := make([]*chatTurn, g.x.n)
	for i := range turns {
		parser, err := s.m.Chat.NewParser(tp.parserTools(g.x.format != nil), thinking)
		if err != nil {
			return nil, &TemplateError{Err: err}
		}
		turns[i] = &chatTurn{s: s, index: i, parser: parser, callPos: map[int]int{}, er: s.choiceRequest(er, i, g.x, fresh),
			maxCalls: maxCalls(tp)}
	}
	return &chatJob{g: g, er: er, turns: turns}, nil
}

// maxCalls is the most tool calls a turn may keep: one when parallel_tool_calls is false.
func maxCalls(tp *toolPolicy) int {
	if tp.parallel {
		return 0
	}
	return 1
}

// streamChat writes the choices one after the other as SSE chunks: for each, the role, one chunk
// per step that has something to say and the finish reason; then the usage (when asked) and [DONE].
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, t *ticket, g genParams, turns []*chatTurn, base ChatResponse) error {
	base.Object = "chat.completion.chunk"
	promptIDs := base.PromptTokenIDs
	base.PromptTokenIDs = nil
	chunk := func(c ChatChoice) ChatResponse {
		out := base
		out.Choices = []ChatChoice{c}
		return out
	}
	sse := startSSE(w, s.cfg.KeepAlive)
	defer sse.close()
	results := make([]*engine.Result, len(turns))
	for i, turn := range turns {
		first := chunk(ChatChoice{Index: i, Delta: &ChatDelta{Role: "assistant", Content: ptr("")}})
		if i == 0 {
			first.PromptTokenIDs = promptIDs
		}
		if err := sse.event(first); err != nil {
			return nil
		}
		send := func(d ChatDelta, ok bool, tok *engine.Token) error {
			c := ChatChoice{Index: i, Delta: &d}
			if turn.er.Logprobs && tok != nil {
				c.Logprobs = &ChatLogprobs{Content: []TokenLogprob{s.chatLogprob(tok, g.x.idsAsTokens)}}
				ok = true
			}
			if g.returnIDs && tok != nil {
				c.TokenIDs = []int32{tok.ID}
				ok = true
			}
			if !ok {
				return nil
			}
			return sse.event(chunk(c))
		}
		res, err := s.generate(r.Context(), t, turn.er, func(st engine.Step) error {
			d, ok := turn.apply(turn.parser.Add(st.Text))
			return send(d, ok, st.Token)
		})
		if err != nil {
			if r.Context().Err() == nil {
				_ = sse.event(s.streamErrorBody(r, err))
				sse.done()
			}
			return nil
		}
		results[i] = res
		d, ok := turn.apply(turn.parser.Finish())
		if err := send(d, ok, nil); err != nil {
			return nil
		}
		if err := sse.event(chunk(ChatChoice{Index: i, Delta: &ChatDelta{}, FinishReason: ptr(turn.finishReason(res.Finish))})); err != nil {
			return nil
		}
	}
	if g.includeUsage {
		u := base
		u.Choices, u.Usage = []ChatChoice{}, usage(len(turns[0].er.Prompt), results...)
		_ = sse.event(u)
	}
	sse.done()
	return nil
}
