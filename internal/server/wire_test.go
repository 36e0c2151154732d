package server

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestStringListDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    StringList
		wantErr bool
	}{
		{`"a"`, StringList{"a"}, false},
		{`["a","b"]`, StringList{"a", "b"}, false},
		{`[]`, StringList{}, false},
		{`null`, nil, false},
		{`5`, nil, true},
		{`[1]`, nil, true},
		{`{"a":1}`, nil, true},
	}
	for _, tt := range tests {
		var got struct {
			Stop StringList `json:"stop"`
		}
		err := json.Unmarshal([]byte(`{"stop":`+tt.in+`}`), &got)
		var pe *ParamError
		if tt.wantErr {
			if !errors.As(err, &pe) || pe.Param != "stop" {
				t.Errorf("%s: error %v, want a ParamError on stop", tt.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got.Stop, tt.want) {
			t.Errorf("%s: %v %v", tt.in, got.Stop, err)
		}
	}
}

func TestPromptDecode(t *testing.T) {
	tests := []struct {
		in   string
		want Prompt
		err  bool
	}{
		{`"hello"`, Prompt{Text: "hello"}, false},
		{`[1,2,3]`, Prompt{IDs: []int32{1, 2, 3}, IsIDs: true}, false},
		{`["hello"]`, Prompt{Text: "hello"}, false},
		{`[[4,5]]`, Prompt{IDs: []int32{4, 5}, IsIDs: true}, false},
		{`["a","b"]`, Prompt{Multiple: true}, false},
		{`[[1],[2]]`, Prompt{Multiple: true}, false},
		{`[]`, Prompt{IsIDs: true}, false},
		{`null`, Prompt{Absent: true}, false},
		{`[1,"a"]`, Prompt{}, true},
		{`[1.5]`, Prompt{}, true},
		{`[99999999999]`, Prompt{}, true},
		{`{}`, Prompt{}, true},
		{`true`, Prompt{}, true},
	}
	for _, tt := range tests {
		var p Prompt
		err := p.UnmarshalJSON([]byte(tt.in))
		if tt.err {
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != "prompt" {
				t.Errorf("%s: error %v", tt.in, err)
			}
			continue
		}
		if err != nil || p.Text != tt.want.Text || !slices.Equal(p.IDs, tt.want.IDs) || p.IsIDs != tt.want.IsIDs ||
			p.Multiple != tt.want.Multiple || p.Absent != tt.want.Absent {
			t.Errorf("%s: %+v %v, want %+v", tt.in, p, err, tt.want)
		}
	}
}

func TestChatRequestDecode(t *testing.T) {
	var r ChatRequest
	err := decodeJSON([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":5,
		"temperature":0.3,"top_k":4,"seed":9,"stop":"END","stream":true,"stream_options":{"include_usage":true},
		"logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":false,"foo":[1]},"return_token_ids":true,
		"unknown_field":{"ignored":true}}`), &r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || *r.MaxCompletionTokens != 5 || r.MaxTokens != nil || *r.Temperature != 0.3 || *r.TopK != 4 ||
		*r.Seed != 9 || !slices.Equal(r.Stop, StringList{"END"}) || !r.Stream || !r.StreamOptions.IncludeUsage ||
		!r.Logprobs || *r.TopLogprobs != 3 || !r.ReturnTokenIDs || r.TopP != nil || string(r.ChatTemplateKwargs["foo"]) != "[1]" {
		t.Fatalf("%+v", r)
	}
	for body, want := range map[string]string{
		`{"temperature":"x"}`:        "invalid_type",
		`{"messages":[],}`:           "invalid_json",
		`{} {}`:                      "invalid_json",
		`"str"`:                      "invalid_json",
		``:                           "invalid_json",
		`{"stop":{"x":1}}`:           "invalid_value",
		`{"max_tokens":1.5}`:         "invalid_type",
		`{"n":"2"}`:                  "invalid_type",
		`{"stream_options":"x"}`:     "invalid_type",
		`{"chat_template_kwargs":1}`: "invalid_type",
	} {
		var r ChatRequest
		err := decodeJSON([]byte(body), &r)
		status, er := errorInfo(err)
		if status != 400 || er.Error.Code == nil || *er.Error.Code != want {
			t.Errorf("%s: %d %+v (%v), want %s", body, status, er, err, want)
		}
	}
}

// The response shapes clients depend on: null where OpenAI has null, absent where it omits.
func TestResponseShapes(t *testing.T) {
	content := "hi"
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"chat choice", ChatChoice{Message: &ChatMessage{Role: "assistant", Content: &content}, FinishReason: ptr("stop")},
			`{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":"stop"}`},
		{"tool-only message", ChatMessage{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Type: "function",
			Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`},
		{"streamed tool delta", ChatDelta{ToolCalls: []ToolCall{{Index: ptr(0), Function: FunctionCall{Arguments: `{"a"`}}}},
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}`},
		{"empty delta", ChatChoice{Delta: &ChatDelta{}}, `{"index":0,"delta":{},"logprobs":null,"finish_reason":null}`},
		{"usage chunk", ChatResponse{ID: "x", Object: "chat.completion.chunk", Choices: []ChatChoice{}, Usage: &Usage{PromptTokens: 1, TotalTokens: 1}},
			`{"id":"x","object":"chat.completion.chunk","created":0,"model":"","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`},
		{"error", ErrorResponse{Error: ErrorBody{Message: "m", Type: "t"}}, `{"error":{"message":"m","type":"t","param":null,"code":null}}`},
		{"completion logprobs", CompletionLogprobs{Tokens: []string{"a"}, TokenLogprobs: []*float64{nil}, TopLogprobs: []map[string]float64{nil}, TextOffset: []int{0}},
			`{"tokens":["a"],"token_logprobs":[null],"top_logprobs":[null],"text_offset":[0]}`},
	}
	for _, tt := range tests {
		b, err := marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, b, tt.want)
		}
	}
}
