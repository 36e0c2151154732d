package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MessagesRequest is the body of POST /v1/messages (Anthropic's Messages API) and of
// /v1/messages/count_tokens.
type MessagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      json.RawMessage `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	StopSequences StringList      `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Stream        bool            `json:"stream"`
	Thinking      *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}

// block is one Anthropic content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blocks reads content: a string is one text block.
func blocks(raw json.RawMessage, param string) ([]block, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}, nil
	}
	var bs []block
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, &ParamError{Param: param, Message: "must be a string or an array of content blocks"}
	}
	return bs, nil
}

// blockText is the text of text blocks (tool_result content); other blocks are refused.
func blockText(raw json.RawMessage, param string) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", nil
	}
	bs, err := blocks(raw, param)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for i, b := range bs {
		if b.Type != "text" {
			return "", &ParamError{Param: fmt.Sprintf("%s[%d]", param, i), Message: fmt.Sprintf("%s blocks are not supported here", b.Type)}
		}
		sb.WriteString(b.Text)
	}
	return sb.String(), nil
}

// toChatMessages maps system and messages onto chat messages.
func toChatMessages(req *MessagesRequest) ([]msg, error) {
	var out []msg
	if len(bytes.TrimSpace(req.System)) > 0 && string(bytes.TrimSpace(req.System)) != "null" {
		sys, err := blockText(req.System, "system")
		if err != nil {
			return nil, err
		}
		out = append(out, msg{"role": "system", "content": sys})
	}
	var list []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(req.Messages, &list); err != nil || len(list) == 0 {
		return nil, &ParamError{Param: "messages", Message: "must be a non-empty array of messages"}
	}
	for i, m := range list {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, &ParamError{Param: param + ".role", Message: fmt.Sprintf(`must be "user" or "assistant", got %q`, m.Role)}
		}
		bs, err := blocks(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		var text, thinking strings.Builder
		var calls []msg
		for j, b := range bs {
			bp := fmt.Sprintf("%s.content[%d]", param, j)
			switch {
			case b.Type == "text":
				text.WriteString(b.Text)
			case b.Type == "thinking" && m.Role == "assistant":
				thinking.WriteString(b.Thinking)
			case b.Type == "redacted_thinking" && m.Role == "assistant":
			case b.Type == "tool_use" && m.Role == "assistant":
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, msg{"id": b.ID, "type": "function", "function": msg{"name": b.Name, "arguments": args}})
			case b.Type == "tool_result" && m.Role == "user":
				res, err := blockText(b.Content, bp+".content")
				if err != nil {
					return nil, err
				}
				out = append(out, msg{"role": "tool", "tool_call_id": b.ToolUseID, "content": res})
			default:
				return nil, &ParamError{Param: bp, Message: fmt.Sprintf("%s blocks are not supported in a %s message (the served model reads text only)", b.Type, m.Role)}
			}
		}
		if m.Role == "user" && text.Len() == 0 && len(bs) > 0 {
			continue // only tool results
		}
		cm := msg{"role": m.Role, "content": text.String()}
		if thinking.Len() > 0 {
			cm["reasoning_content"] = thinking.String()
		}
		if len(calls) > 0 {
			cm["tool_calls"] = calls
		}
		out = append(out, cm)
	}
	return out, nil
}

// toChatFromMessages maps a Messages request onto a chat request.
func toChatFromMessages(req *MessagesRequest) (*ChatRequest, error) {
	if req.MaxTokens == nil {
		return nil, &ParamError{Param: "max_tokens", Message: "is required"}
	}
	msgs, err := toChatMessages(req)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(msgs)
	c := &ChatRequest{Messages: b}
	c.Model, c.MaxTokens, c.Stop = req.Model, req.MaxTokens, req.StopSequences
	c.Temperature, c.TopP, c.TopK = req.Temperature, req.TopP, req.TopK
	if err := inRange("temperature", req.Temperature, 0, 1); err != nil {
		return nil, err
	}
	thinking := req.Thinking != nil && req.Thinking.Type == "enabled"
	c.ChatTemplateKwargs = map[string]json.RawMessage{"enable_thinking": json.RawMessage(fmt.Sprint(thinking))}
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" {
		var tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &tools); err != nil {
			return nil, &ParamError{Param: "tools", Message: "must be an array of tools"}
		}
		out := make([]msg, len(tools))
		for i, tl := range tools {
			if tl.Type != "" && tl.Type != "custom" {
				return nil, &ParamError{Param: fmt.Sprintf("tools[%d].type", i), Message: fmt.Sprintf("tool type %q is not supported", tl.Type)}
			}
			fn := msg{"name": tl.Name, "description": tl.Description}
			if len(tl.InputSchema) > 0 {
				fn["parameters"] = tl.InputSchema
			}
			out[i] = msg{"type": "function", "function": fn}
		}
		c.Tools, _ = json.Marshal(out)
	}
	if t := bytes.TrimSpace(req.ToolChoice); len(t) > 0 && string(t) != "null" {
		var tc struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
		}
		if err := json.Unmarshal(t, &tc); err != nil {
			return nil, &ParamError{Param: "tool_choice", Message: "must be an object with a type"}
		}
		switch tc.Type {
		case "auto", "none":
			c.ToolChoice, _ = json.Marshal(tc.Type)
		case "any":
			c.ToolChoice, _ = json.Marshal("required")
		case "tool":
			c.ToolChoice, _ = json.Marshal(msg{"type": "function", "function": msg{"name": tc.Name}})
		default:
			return nil, &ParamError{Param: "tool_choice.type", Message: fmt.Sprintf(`must be "auto", "any", "tool" or "none", got %q`, tc.Type)}
		}
		if tc.DisableParallelToolUse {
			c.ParallelToolCalls = ptr(false)
		}
	}
	return c, nil
}
