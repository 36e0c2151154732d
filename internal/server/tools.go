package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Tool-choice modes.
const (
	toolAuto     = "auto"
	toolNone     = "none"
	toolRequired = "required"
	toolNamed    = "function" // one named function
)

// toolPolicy is a request's validated tools, tool_choice and parallel_tool_calls.
type toolPolicy struct {
	tools    json.RawMessage // nil: no tools
	names    []string        // the tools' function names, in order
	mode     string
	name     string // toolNamed: the function
	parallel bool
}

// parseTools validates tools (each {"type":"function","function":{"name":…}}), tool_choice and
// parallel_tool_calls.
func parseTools(tools, choice json.RawMessage, parallel *bool) (*toolPolicy, error) {
	tp := &toolPolicy{mode: toolAuto, parallel: parallel == nil || *parallel}
	if t := bytes.TrimSpace(tools); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var list []struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &list); err != nil {
			return nil, &ParamError{Param: "tools", Message: "must be an array of tool objects"}
		}
		for i, tl := range list {
			if tl.Type != "function" {
				return nil, &ParamError{Param: fmt.Sprintf("tools[%d].type", i), Message: `must be "function"`}
			}
			if tl.Function == nil || tl.Function.Name == "" {
				return nil, &ParamError{Param: fmt.Sprintf("tools[%d].function", i), Message: "is required, with a name"}
			}
			tp.names = append(tp.names, tl.Function.Name)
		}
		if len(list) > 0 {
			tp.tools = t
		}
	}
	c := bytes.TrimSpace(choice)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return tp, nil
	}
	const param = "tool_choice"
	if c[0] == '"' {
		var mode string
		_ = json.Unmarshal(c, &mode)
		switch mode {
		case toolAuto, toolNone, toolRequired:
			tp.mode = mode
		default:
			return nil, &ParamError{Param: param, Message: fmt.Sprintf(`must be "none", "auto", "required" or a named function, got %q`, mode)}
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(c, &named); err != nil || named.Type != "function" || named.Function == nil {
			return nil, &ParamError{Param: param, Message: `must be "none", "auto", "required" or {"type":"function","function":{"name":…}}`}
		}
		tp.mode, tp.name = toolNamed, named.Function.Name
		found := false
		for _, n := range tp.names {
			found = found || n == tp.name
		}
		if !found {
			return nil, &ParamError{Param: param, Message: fmt.Sprintf("names function %q, which is not among the tools", tp.name)}
		}
	}
	if (tp.mode == toolRequired) && tp.tools == nil {
		return nil, &ParamError{Param: param, Message: `"required" needs tools`}
	}
	return tp, nil
}

// parserTools is the tools the output parser recognizes: none under tool_choice "none", so that
// no tool call can come out, nor for a structured answer (response_format), which is content.
func (tp *toolPolicy) parserTools(structured bool) json.RawMessage {
	if tp.mode == toolNone || structured && tp.mode != toolRequired && tp.mode != toolNamed {
		return nil
	}
	return tp.tools
}

// ban returns logit biases that make the tool-call opening tag impossible under "none" (nil
// otherwise), merged with the client's.
func (s *Server) ban(tp *toolPolicy, bias map[int32]float32) map[int32]float32 {
	if tp.mode != toolNone {
		return bias
	}
	id, ok := s.m.Tok.TokenID("<tool_call>")
	if !ok {
		return bias
	}
	out := map[int32]float32{id: float32(math.Inf(-1))}
	for k, v := range bias {
		if k != id {
			out[k] = v
		}
	}
	return out
}

// checkParts rejects content parts the text-only model cannot take (images, audio, video, files),
// naming the part, instead of rendering a placeholder the model cannot see.
func checkParts(messages json.RawMessage) error {
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(messages, &msgs) != nil {
		return nil // checkMessages reports the shape
	}
	for i, m := range msgs {
		var parts []map[string]json.RawMessage
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for j, p := range parts {
			var typ string
			_ = json.Unmarshal(p["type"], &typ)
			_, img := p["image"]
			_, url := p["image_url"]
			_, vid := p["video"]
			switch {
			case img || url || vid, typ != "" && typ != "text":
				kind := typ
				if kind == "" {
					kind = "image"
				}
				return &ParamError{Param: fmt.Sprintf("messages[%d].content[%d]", i, j),
					Message: fmt.Sprintf("%s input is not supported: the served model reads text only", kind)}
			}
		}
	}
	return nil
}
