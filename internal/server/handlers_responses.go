package server

import "net/http"

// Response is a Responses API response object.
type Response struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	CreatedAt         int64        `json:"created_at"`
	Status            string       `json:"status"`
	Model             string       `json:"model"`
	Output            []OutputItem `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	PreviousResponseID *string        `json:"previous_response_id"`
	Usage              *ResponseUsage `json:"usage,omitempty"`
	Error              any            `json:"error"`
}

// OutputItem is one item of a response's output: a reasoning item, a message or a function call.
type OutputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Status    string        `json:"status,omitempty"`
	Role      string        `json:"role,omitempty"`
	Content   []ContentPart `json:"content,omitzero"` // present (maybe empty) on messages and reasoning
	Summary   []ContentPart `json:"summary,omitzero"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments *string       `json:"arguments,omitempty"`
}

// ContentPart is output_text (a message's) or reasoning_text (a reasoning item's).
type ContentPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations,omitempty"`
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// handleResponses serves POST /v1/responses on the chat pipeline: the same template, engine,
// constraints and parser; the conversation is kept for previous_response_id.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) error {
	var req ResponsesRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	creq, conv, err := s.toChat(&req)
	if err != nil {
		return err
	}
	job, t, err := s.startTurn(creq)
	if err != nil {
		return err
	}
	defer t.release()
	base := Response{ID: "resp_" + s.cfg.RandomID(24), Object: "response", CreatedAt: s.cfg.Now().Unix(),
		Status: "in_progress", Model: s.m.Name, Output: []OutputItem{}}
	if req.PreviousResponseID != "" {
		base.PreviousResponseID = &req.PreviousResponseID
	}
	rs := &responseStream{s: s, resp: base}
	turn := job.turns[0]
	if req.Stream {
		rs.sse = startSSE(w, s.cfg.KeepAlive)
		defer rs.sse.close()
		rs.event("response.created", map[string]any{"response": rs.resp})
		rs.event("response.in_progress", map[string]any{"response": rs.resp})
	}
	res, err := s.runTurn(r.Context(), t, turn, rs.delta)
	if err != nil {
		if !req.Stream {
			return err
		}
		if r.Context().Err() == nil {
			_, body := errorInfo(err)
			rs.event("error", body)
		}
		return nil
	}
	rs.finish(res, len(job.er.Prompt))
	s.responses.put(rs.resp.ID, append(conv, turnMessage(turn)))
	if req.Stream {
		rs.event("response.completed", map[string]any{"response": rs.resp})
		return nil
	}
	writeJSON(w, http.StatusOK, rs.resp)
	return nil
}

// turnMessage is the assistant turn as a chat message, for the stored conversation.
func turnMessage(turn *chatTurn) msg {
	m := msg{"role": "assistant", "content": turn.content.String()}
	if turn.reasoning.Len() > 0 {
		m["reasoning_content"] = turn.reasoning.String()
	}
	if len(turn.calls) > 0 {
		m["tool_calls"] = turn.calls
	}
	return m
}
