package server

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CheckChatInput validates the parts of a conversation the same way for every caller (the chat
// and /tokenize routes, lily tokenize --chat): messages, tools and chat_template_kwargs. It
// returns the render options the kwargs give (AddGenerationPrompt true; callers may change it).
// Its errors are *ParamError naming the field.
func CheckChatInput(messages, tools json.RawMessage, kwargs map[string]json.RawMessage) (RenderOptions, error) {
	if err := checkMessages(messages); err != nil {
		return RenderOptions{}, err
	}
	if err := checkToolList(tools); err != nil {
		return RenderOptions{}, err
	}
	return chatOptions(kwargs)
}

// checkToolList makes sure tools, when present, is an array of function tools:
// {"type":"function","function":{"name":"…",…}}.
func checkToolList(raw json.RawMessage) error {
	if err := checkTools(raw); err != nil {
		return err
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(t, &tools) // checkTools made sure it is an array
	for i, tool := range tools {
		var f struct {
			Type     *string `json:"type"`
			Function *struct {
				Name *string `json:"name"`
			} `json:"function"`
		}
		tt := bytes.TrimSpace(tool)
		if len(tt) == 0 || tt[0] != '{' || json.Unmarshal(tt, &f) != nil {
			return &ParamError{Param: fmt.Sprintf("tools[%d]", i), Message: "must be a tool object"}
		}
		if f.Type == nil || *f.Type != "function" {
			return &ParamError{Param: fmt.Sprintf("tools[%d].type", i), Message: `must be "function"`}
		}
		if f.Function == nil {
			return &ParamError{Param: fmt.Sprintf("tools[%d].function", i), Message: "is required (an object with a name)"}
		}
		if f.Function.Name == nil || *f.Function.Name == "" {
			return &ParamError{Param: fmt.Sprintf("tools[%d].function.name", i), Message: "is required (a non-empty string)"}
		}
	}
	return nil
}
