package server

import (
	"bytes"
	"encoding/json"
	"github.com/lily-engine/lily/internal/engine"
)

// responseFormat is a parsed response_format.
type responseFormat struct {
	Type   string // "json_object" or "json_schema"
	Schema json.RawMessage
}

// parseResponseFormat reads response_format: absent, null or {"type":"text"} is free text.
func parseResponseFormat(raw json.RawMessage) (*responseFormat, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(t, &f); err != nil {
		return nil, &ParamError{Param: "response_format", Message: "must be an object with a type"}
	}
	switch f.Type {
	case "text":
		return nil, nil
	}
	return nil, &ParamError{Param: "response_format", Message: "type " + quote(f.Type) + " is not supported (want text)"}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// constraint returns a maker of a fresh constraint per choice for the response format and tool
// policy, or nil when the output is free.
func (s *Server) constraint(f *responseFormat, tp *toolPolicy) (func() engine.Constraint, error) {
	return nil, nil
}

// chatConstraint is constraint for chat: the response format or the tool policy's call, after the
// reasoning block when thinking is on.
func (s *Server) chatConstraint(f *responseFormat, tp *toolPolicy, thinking bool, stops []int32) (func() engine.Constraint, error) {
	if f == nil && (tp.mode == toolAuto || tp.mode == toolNone) {
		close, ok := s.m.Tok.TokenID("</tool_call>")
		if tp.parallel || tp.tools == nil || !ok {
			return nil, nil
		}
		return func() engine.Constraint { return &endAfter{after: close, stops: stops} }, nil
	}
	return s.constraint(f, tp)
}
