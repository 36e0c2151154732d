package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// ResponsesRequest is the body of POST /v1/responses (OpenAI's Responses API).
type ResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             bool            `json:"stream"`
	PreviousResponseID string          `json:"previous_response_id"`
	Reasoning          *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
	Text *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
}

// msg is one chat message as the template reads it.
type msg = map[string]any

// toChat maps a Responses request onto a chat request: instructions as the system message, the
// stored conversation of previous_response_id, then the input items.
func (s *Server) toChat(req *ResponsesRequest) (*ChatRequest, []msg, error) {
	var history []msg
	if req.PreviousResponseID != "" {
		h, ok := s.responses.get(req.PreviousResponseID)
		if !ok {
			return nil, nil, &ParamError{Param: "previous_response_id", Message: fmt.Sprintf("no stored response %q (lily keeps the last %d in memory)", req.PreviousResponseID, maxStoredResponses)}
		}
		history = h
	}
	input, err := inputMessages(req.Input)
	if err != nil {
		return nil, nil, err
	}
	conv := append(append([]msg{}, history...), input...)
	all := conv
	if req.Instructions != nil && *req.Instructions != "" {
		all = append([]msg{{"role": "system", "content": *req.Instructions}}, conv...)
	}
	messages, _ := json.Marshal(all)
	c := &ChatRequest{Messages: messages, ParallelToolCalls: req.ParallelToolCalls}
	c.Model, c.MaxTokens, c.Temperature, c.TopP = req.Model, req.MaxOutputTokens, req.Temperature, req.TopP
	if c.Tools, err = chatTools(req.Tools); err != nil {
		return nil, nil, err
	}
	if c.ToolChoice, err = chatToolChoice(req.ToolChoice); err != nil {
		return nil, nil, err
	}
	if req.Text != nil {
		if c.ResponseFormat, err = chatFormat(req.Text.Format); err != nil {
			return nil, nil, err
		}
	}
	if r := req.Reasoning; r != nil && r.Effort != nil && (*r.Effort == "none" || *r.Effort == "minimal") {
		c.ChatTemplateKwargs = map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}
	}
	return c, conv, nil
}

// inputMessages turns `input` (a string or a list of items) into chat messages.
func inputMessages(raw json.RawMessage) ([]msg, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, &ParamError{Param: "input", Message: "is required"}
	}
	if t[0] == '"' {
		var s string
		_ = json.Unmarshal(t, &s)
		return []msg{{"role": "user", "content": s}}, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, &ParamError{Param: "input", Message: "must be a string or an array of items"}
	}
	var out []msg
	reasoning := ""
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		str := func(k string) string { var s string; _ = json.Unmarshal(it[k], &s); return s }
		typ := str("type")
		switch {
		case typ == "function_call":
			call := msg{"id": str("call_id"), "type": "function", "function": msg{"name": str("name"), "arguments": str("arguments")}}
			if n := len(out); n > 0 && out[n-1]["role"] == "assistant" && out[n-1]["tool_calls"] != nil {
				out[n-1]["tool_calls"] = append(out[n-1]["tool_calls"].([]msg), call)
				continue
			}
			m := msg{"role": "assistant", "content": "", "tool_calls": []msg{call}}
			if reasoning != "" {
				m["reasoning_content"], reasoning = reasoning, ""
			}
			out = append(out, m)
		case typ == "function_call_output":
			out = append(out, msg{"role": "tool", "tool_call_id": str("call_id"), "content": str("output")})
		case typ == "reasoning":
			var r struct {
				Content []struct{ Text string } `json:"content"`
				Summary []struct{ Text string } `json:"summary"`
			}
			b, _ := json.Marshal(it)
			_ = json.Unmarshal(b, &r)
			for _, c := range append(r.Content, r.Summary...) {
				reasoning += c.Text
			}
		case typ == "message" || typ == "":
			role := str("role")
			switch role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, &ParamError{Param: param + ".role", Message: fmt.Sprintf("unknown role %q", role)}
			}
			text, err := inputText(it["content"], param+".content")
			if err != nil {
				return nil, err
			}
			m := msg{"role": role, "content": text}
			if role == "assistant" && reasoning != "" {
				m["reasoning_content"], reasoning = reasoning, ""
			}
			out = append(out, m)
		default:
			return nil, &ParamError{Param: param + ".type", Message: fmt.Sprintf("item type %q is not supported", typ)}
		}
	}
	if len(out) == 0 {
		return nil, &ParamError{Param: "input", Message: "has no message"}
	}
	return out, nil
}

// inputText is a message's text: a string, or input_text/output_text parts (others are refused).
func inputText(raw json.RawMessage, param string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", &ParamError{Param: param, Message: "must be a string or an array of content parts"}
	}
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			s += p.Text
		default:
			return "", &ParamError{Param: fmt.Sprintf("%s[%d]", param, i), Message: fmt.Sprintf("%s input is not supported: the served model reads text only", p.Type)}
		}
	}
	return s, nil
}

// chatTools maps Responses function tools ({"type":"function","name",…}) to chat tools.
func chatTools(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(t, &tools); err != nil {
		return nil, &ParamError{Param: "tools", Message: "must be an array of tool objects"}
	}
	out := make([]msg, len(tools))
	for i, tl := range tools {
		var typ string
		_ = json.Unmarshal(tl["type"], &typ)
		if typ != "function" {
			return nil, &ParamError{Param: fmt.Sprintf("tools[%d].type", i), Message: fmt.Sprintf("tool type %q is not supported (only function)", typ)}
		}
		fn := msg{}
		for _, k := range []string{"name", "description", "parameters"} {
			if v, ok := tl[k]; ok {
				fn[k] = v
			}
		}
		out[i] = msg{"type": "function", "function": fn}
	}
	b, _ := json.Marshal(out)
	return b, nil
}

// chatToolChoice maps {"type":"function","name":N} to the chat form; strings pass as they are.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return t, nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(t, &c); err != nil || c.Type != "function" {
		return nil, &ParamError{Param: "tool_choice", Message: `must be "none", "auto", "required" or {"type":"function","name":…}`}
	}
	b, _ := json.Marshal(msg{"type": "function", "function": msg{"name": c.Name}})
	return b, nil
}

// chatFormat maps text.format ({"type":"json_schema","name","schema","strict"}) to response_format.
func chatFormat(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(t, &f); err != nil {
		return nil, &ParamError{Param: "text.format", Message: "must be an object"}
	}
	if string(f["type"]) != `"json_schema"` {
		return t, nil
	}
	inner := msg{}
	for _, k := range []string{"name", "schema", "strict"} {
		if v, ok := f[k]; ok {
			inner[k] = v
		}
	}
	b, _ := json.Marshal(msg{"type": "json_schema", "json_schema": inner})
	return b, nil
}

// maxStoredResponses bounds the conversations kept for previous_response_id.
const maxStoredResponses = 256

// responseStore keeps the conversation of recent responses (input and output as chat messages),
// the oldest dropped first. Safe for concurrent use.
type responseStore struct {
	mu    sync.Mutex
	order []string
	conv  map[string][]msg
}

func newResponseStore() *responseStore { return &responseStore{conv: map[string][]msg{}} }

func (r *responseStore) get(id string) ([]msg, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.conv[id]
	return c, ok
}

func (r *responseStore) put(id string, conv []msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) >= maxStoredResponses {
		delete(r.conv, r.order[0])
		r.order = r.order[1:]
	}
	r.order = append(r.order, id)
	r.conv[id] = conv
}
