package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server/servertest"
)

const answerSchema = `{"type":"object","properties":{"answer":{"type":"string","maxLength":20},"n":{"type":"integer"},
	"ok":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["x","y"]},"maxItems":3}},"required":["answer","n"],
	"additionalProperties":false}`

// TestStructuredOutputSampled: sampled answers from the fake model (its scores follow no grammar)
// always parse and fit the schema, with thinking on and off, within max_tokens.
func TestStructuredOutputSampled(t *testing.T) {
	e := servertest.New(t)
	e.B.Script = nil
	for seed := range 30 {
		think := seed%2 == 0
		maxTok := 40 + seed*3
		body := fmt.Sprintf(`{%s,"temperature":1.5,"top_k":0,"top_p":1,"seed":%d,"max_tokens":%d,
			"chat_template_kwargs":{"enable_thinking":%v},
			"response_format":{"type":"json_schema","json_schema":{"name":"a","strict":true,"schema":%s}}}`,
			userHi, seed, maxTok, think, answerSchema)
		code, out := e.Post("/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("seed %d: %d %s", seed, code, out)
		}
		r := decodeChat(t, out)
		content := str(r.Choices[0].Message.Content)
		var doc struct {
			Answer *string   `json:"answer"`
			N      *int64    `json:"n"`
			Ok     *bool     `json:"ok"`
			Tags   []string  `json:"tags"`
			Extra  *struct{} `json:"extra"`
		}
		dec := json.NewDecoder(strings.NewReader(content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil || doc.Answer == nil || doc.N == nil || len([]rune(*doc.Answer)) > 20 || len(doc.Tags) > 3 {
			t.Fatalf("seed %d (thinking %v, max %d): %q does not fit the schema: %v", seed, think, maxTok, content, err)
		}
		for _, tag := range doc.Tags {
			if tag != "x" && tag != "y" {
				t.Fatalf("seed %d: tag %q", seed, tag)
			}
		}
	}
	// json_object on completions: any object.
	for seed := range 10 {
		code, out := e.Post("/v1/completions", fmt.Sprintf(`{"prompt":"q","temperature":1.5,"top_k":0,"seed":%d,
			"max_tokens":30,"response_format":{"type":"json_object"}}`, seed))
		var obj map[string]any
		if c := decodeCompletion(t, out).Choices[0]; code != 200 || json.Unmarshal([]byte(c.Text), &obj) != nil {
			t.Fatalf("json_object seed %d: %d %s", seed, code, out)
		}
	}
}

func TestStructuredOutputRefusesUnsupportedSchema(t *testing.T) {
	e := servertest.New(t)
	code, out := e.Post("/v1/chat/completions", `{`+userHi+`,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"string","pattern":"^a"}}}}`)
	if code != 400 || !strings.Contains(out, `"param":"response_format.json_schema.schema"`) || !strings.Contains(out, "pattern") {
		t.Fatalf("%d %s", code, out)
	}
}

// TestToolChoiceForced: "required" and a named function always yield the call asked for, with
// arguments that fit the tool's parameters, whatever the model would have said.
func TestToolChoiceForced(t *testing.T) {
	e := servertest.New(t)
	e.B.Script = nil
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
		"properties":{"city":{"type":"string","maxLength":8}},"required":["city"]}}},
		{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}]`
	for seed := range 20 {
		choice, want := `"required"`, ""
		if seed%2 == 1 {
			choice, want = `{"type":"function","function":{"name":"add"}}`, "add"
		}
		code, out := e.Post("/v1/chat/completions", fmt.Sprintf(`{%s%s,"tool_choice":%s,"temperature":1.5,"top_k":0,"seed":%d,"max_tokens":60,
			"parallel_tool_calls":%v}`, userHi, tools, choice, seed, seed%3 == 0))
		c := decodeChat(t, out).Choices[0]
		// With parallel calls the random model may go on calling until max_tokens ("length").
		if code != 200 || len(c.Message.ToolCalls) == 0 || str(c.FinishReason) != "tool_calls" && (seed%3 != 0 || str(c.FinishReason) != "length") {
			t.Fatalf("seed %d: %d %s", seed, code, out)
		}
		if seed%3 != 0 && len(c.Message.ToolCalls) != 1 {
			t.Fatalf("seed %d: parallel_tool_calls false gave %d calls", seed, len(c.Message.ToolCalls))
		}
		for _, tc := range c.Message.ToolCalls {
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
				t.Fatalf("seed %d: arguments %q: %v", seed, tc.Function.Arguments, err)
			}
			switch {
			case want != "" && tc.Function.Name != want:
				t.Fatalf("seed %d: called %s, want %s", seed, tc.Function.Name, want)
			case tc.Function.Name == "add" && args["a"] == nil, tc.Function.Name == "get_weather" && args["city"] == nil:
				t.Fatalf("seed %d: %s without its required argument: %s", seed, tc.Function.Name, tc.Function.Arguments)
			}
		}
	}
}
