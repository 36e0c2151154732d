package server

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/lily-engine/lily/internal/engine"
)

// AnthropicMessage is a Messages API response (and message_start's message).
type AnthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        AnthropicUsage   `json:"usage"`
}

// AnthropicUsage counts a message's tokens.
type AnthropicUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

// anthropicError answers err in Anthropic's error envelope with the status errorInfo gives it.
func anthropicError(w http.ResponseWriter, err error) {
	status, body := errorInfo(err)
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 503: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": body.Error.Message}})
}

// handleMessages serves POST /v1/messages on the chat pipeline; its errors use Anthropic's envelope.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) error {
	if err := s.messages(w, r); err != nil {
		anthropicError(w, err)
	}
	return nil
}

// handleCountTokens serves POST /v1/messages/count_tokens: the rendered prompt's token count.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) error {
	var req MessagesRequest
	if err := decodeBody(r, &req); err != nil {
		anthropicError(w, err)
		return nil
	}
	req.MaxTokens = ptr(1)
	c, err := toChatFromMessages(&req)
	if err == nil {
		var job *chatJob
		if job, err = s.prepareChat(c); err == nil {
			writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(job.er.Prompt)})
			return nil
		}
	}
	anthropicError(w, err)
	return nil
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) error {
	var req MessagesRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	c, err := toChatFromMessages(&req)
	if err != nil {
		return err
	}
	job, t, err := s.startTurn(c)
	if err != nil {
		return err
	}
	defer t.release()
	turn := job.turns[0]
	ms := &messageStream{s: s, msg: AnthropicMessage{ID: "msg_" + s.cfg.RandomID(24), Type: "message", Role: "assistant",
		Model: s.m.Name, Content: []map[string]any{}, Usage: AnthropicUsage{InputTokens: len(job.er.Prompt)}}, open: -1}
	if req.Stream {
		ms.sse = startSSE(w, s.cfg.KeepAlive)
		defer ms.sse.close()
		ms.event("message_start", map[string]any{"message": ms.msg})
	}
	res, err := s.runTurn(r.Context(), t, turn, ms.delta)
	if err != nil {
		if !req.Stream {
			return err
		}
		if r.Context().Err() == nil {
			_, body := errorInfo(err)
			ms.event("error", map[string]any{"error": map[string]string{"type": "api_error", "message": body.Error.Message}})
		}
		return nil
	}
	ms.close()
	reason := "end_turn"
	switch {
	case res.Finish == engine.FinishLength:
		reason = "max_tokens"
	case len(turn.calls) > 0:
		reason = "tool_use"
	case len(res.Tokens) > 0 && !slices.Contains(turn.er.StopIDs, res.Tokens[len(res.Tokens)-1]):
		reason = "stop_sequence"
	}
	ms.msg.StopReason = &reason
	ms.msg.Usage.OutputTokens, ms.msg.Usage.CacheReadInputTokens = len(res.Tokens), res.CachedTokens
	if !req.Stream {
		writeJSON(w, http.StatusOK, ms.msg)
		return nil
	}
	ms.event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": len(res.Tokens)}})
	ms.event("message_stop", map[string]any{})
	return nil
}

// messageStream builds a message's content blocks from the chat turn's deltas and, when
// streaming, sends the Messages API's events for them. One goroutine owns it.
type messageStream struct {
	s     *Server
	sse   *sseWriter
	msg   AnthropicMessage
	open  int // index of the block being written, -1 none
	calls map[int]int
}

func (ms *messageStream) event(typ string, m map[string]any) error {
	if ms.sse == nil {
		return nil
	}
	m["type"] = typ
	return ms.sse.named(typ, m)
}

func (ms *messageStream) start(b map[string]any) error {
	ms.close()
	ms.msg.Content = append(ms.msg.Content, b)
	ms.open = len(ms.msg.Content) - 1
	start := map[string]any{}
	for k, v := range b {
		start[k] = v
	}
	if b["type"] == "tool_use" {
		start["input"] = map[string]any{} // the arguments follow as input_json_delta
	}
	return ms.event("content_block_start", map[string]any{"index": ms.open, "content_block": start})
}

func (ms *messageStream) close() {
	if ms.open < 0 {
		return
	}
	b := ms.msg.Content[ms.open]
	if b["type"] == "tool_use" {
		args := b["input"].(string)
		if args == "" {
			args = "{}"
		}
		b["input"] = json.RawMessage(args)
	}
	_ = ms.event("content_block_stop", map[string]any{"index": ms.open})
	ms.open = -1
}

func (ms *messageStream) add(typ, key, deltaType, text string) error {
	if ms.open < 0 || ms.msg.Content[ms.open]["type"] != typ {
		b := map[string]any{"type": typ, key: ""}
		if typ == "thinking" {
			b["signature"] = ""
		}
		if err := ms.start(b); err != nil {
			return err
		}
	}
	b := ms.msg.Content[ms.open]
	b[key] = b[key].(string) + text
	return ms.event("content_block_delta", map[string]any{"index": ms.open, "delta": map[string]any{"type": deltaType, key: text}})
}

func (ms *messageStream) delta(d ChatDelta) error {
	if ms.calls == nil {
		ms.calls = map[int]int{}
	}
	if d.ReasoningContent != "" {
		if err := ms.add("thinking", "thinking", "thinking_delta", d.ReasoningContent); err != nil {
			return err
		}
	}
	if d.Content != nil && *d.Content != "" {
		if err := ms.add("text", "text", "text_delta", *d.Content); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		idx, seen := ms.calls[*tc.Index]
		if !seen {
			if err := ms.start(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": ""}); err != nil {
				return err
			}
			idx = ms.open
			ms.calls[*tc.Index] = idx
		}
		b := ms.msg.Content[idx]
		b["input"] = b["input"].(string) + tc.Function.Arguments
		if err := ms.event("content_block_delta", map[string]any{"index": idx,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Function.Arguments}}); err != nil {
			return err
		}
	}
	return nil
}
