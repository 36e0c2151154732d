package server

import (
	"github.com/lily-engine/lily/internal/engine"
)

// responseStream builds a response's output items from the chat turn's deltas and, when
// streaming, sends the Responses API's typed events for them. One goroutine owns it.
type responseStream struct {
	s     *Server
	sse   *sseWriter // nil: not streaming
	resp  Response
	seq   int
	open  int         // index in resp.Output of the item being written, -1 none
	calls map[int]int // the turn's call position → index in resp.Output
}

// event sends one typed event (nothing when not streaming).
func (rs *responseStream) event(typ string, payload any) error {
	if rs.sse == nil {
		return nil
	}
	m, ok := payload.(map[string]any)
	if !ok {
		m = map[string]any{"error": payload}
	}
	m["type"], m["sequence_number"] = typ, rs.seq
	rs.seq++
	return rs.sse.named(typ, m)
}

func (rs *responseStream) item() *OutputItem { return &rs.resp.Output[rs.open] }

// start opens a new output item and announces it.
func (rs *responseStream) start(it OutputItem) error {
	if err := rs.close(); err != nil {
		return err
	}
	rs.resp.Output = append(rs.resp.Output, it)
	rs.open = len(rs.resp.Output) - 1
	return rs.event("response.output_item.added", map[string]any{"output_index": rs.open, "item": it})
}

// close finishes the open item, if any.
func (rs *responseStream) close() error {
	if rs.open < 0 {
		return nil
	}
	it, idx := rs.item(), rs.open
	rs.open = -1
	at := map[string]any{"item_id": it.ID, "output_index": idx}
	with := func(k string, v any) map[string]any {
		m := map[string]any{k: v}
		for a, b := range at {
			m[a] = b
		}
		return m
	}
	var err error
	switch it.Type {
	case "reasoning":
		c := with("text", it.Content[0].Text)
		c["content_index"] = 0
		err = rs.event("response.reasoning_text.done", c)
	case "message":
		it.Status = "completed"
		c := with("text", it.Content[0].Text)
		c["content_index"] = 0
		if err = rs.event("response.output_text.done", c); err == nil {
			p := with("part", it.Content[0])
			p["content_index"] = 0
			err = rs.event("response.content_part.done", p)
		}
	case "function_call":
		it.Status = "completed"
		err = rs.event("response.function_call_arguments.done", with("arguments", *it.Arguments))
	}
	if err != nil {
		return err
	}
	return rs.event("response.output_item.done", map[string]any{"output_index": idx, "item": *it})
}

// delta folds one chat delta into the output.
func (rs *responseStream) delta(d ChatDelta) error {
	if rs.calls == nil {
		rs.calls, rs.open = map[int]int{}, -1
	}
	if d.ReasoningContent != "" {
		if rs.open < 0 || rs.item().Type != "reasoning" {
			if err := rs.start(OutputItem{Type: "reasoning", ID: "rs_" + rs.s.cfg.RandomID(24), Summary: []ContentPart{},
				Content: []ContentPart{{Type: "reasoning_text"}}}); err != nil {
				return err
			}
		}
		rs.item().Content[0].Text += d.ReasoningContent
		if err := rs.event("response.reasoning_text.delta", map[string]any{"item_id": rs.item().ID, "output_index": rs.open,
			"content_index": 0, "delta": d.ReasoningContent}); err != nil {
			return err
		}
	}
	if d.Content != nil && *d.Content != "" {
		if rs.open < 0 || rs.item().Type != "message" {
			if err := rs.start(OutputItem{Type: "message", ID: "msg_" + rs.s.cfg.RandomID(24), Status: "in_progress",
				Role: "assistant", Content: []ContentPart{}}); err != nil {
				return err
			}
			part := ContentPart{Type: "output_text", Annotations: []any{}}
			rs.item().Content = []ContentPart{part}
			if err := rs.event("response.content_part.added", map[string]any{"item_id": rs.item().ID, "output_index": rs.open,
				"content_index": 0, "part": part}); err != nil {
				return err
			}
		}
		rs.item().Content[0].Text += *d.Content
		if err := rs.event("response.output_text.delta", map[string]any{"item_id": rs.item().ID, "output_index": rs.open,
			"content_index": 0, "delta": *d.Content}); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		idx, seen := rs.calls[*tc.Index]
		if !seen {
			if err := rs.start(OutputItem{Type: "function_call", ID: "fc_" + rs.s.cfg.RandomID(24), Status: "in_progress",
				CallID: tc.ID, Name: tc.Function.Name, Arguments: ptr("")}); err != nil {
				return err
			}
			idx = rs.open
			rs.calls[*tc.Index] = idx
		}
		it := &rs.resp.Output[idx]
		*it.Arguments += tc.Function.Arguments
		if err := rs.event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": idx,
			"delta": tc.Function.Arguments}); err != nil {
			return err
		}
	}
	return nil
}

// finish closes the output and sets the status and usage.
func (rs *responseStream) finish(res *engine.Result, prompt int) {
	_ = rs.close()
	rs.resp.Status = "completed"
	if res.Finish == engine.FinishLength {
		rs.resp.Status = "incomplete"
		rs.resp.IncompleteDetails = &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	}
	u := &ResponseUsage{InputTokens: prompt, OutputTokens: len(res.Tokens), TotalTokens: prompt + len(res.Tokens)}
	u.InputTokensDetails.CachedTokens = res.CachedTokens
	rs.resp.Usage = u
}
