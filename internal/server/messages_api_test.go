package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

func decodeMessage(t *testing.T, body string) server.AnthropicMessage {
	t.Helper()
	var m server.AnthropicMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

func TestMessagesTextAndThinking(t *testing.T) {
	e := servertest.New(t)
	e.Script("Let me think.</think>\n\nHi!")
	code, body := e.Post("/v1/messages", `{"model":"qwen-test","max_tokens":50,"system":"Be kind.",
		"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hello"}]}`)
	m := decodeMessage(t, body)
	if code != 200 || m.Type != "message" || len(m.Content) != 2 || m.Content[0]["type"] != "thinking" ||
		m.Content[0]["thinking"] != "Let me think." || m.Content[1]["text"] != "Hi!" || *m.StopReason != "end_turn" || m.Usage.OutputTokens == 0 {
		t.Fatalf("%d %s", code, body)
	}
	// Without thinking the template's empty think block is rendered and no thinking block returned.
	e.Script("Hi!")
	_, body = e.Post("/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	if m = decodeMessage(t, body); len(m.Content) != 1 || m.Content[0]["text"] != "Hi!" {
		t.Fatalf("%s", body)
	}
	_, body = e.Post("/v1/messages", `{"max_tokens":2,"messages":[{"role":"user","content":"hello"}]}`)
	if m = decodeMessage(t, body); *m.StopReason != "max_tokens" {
		t.Fatalf("%s", body)
	}
	e.Script("abcdef")
	_, body = e.Post("/v1/messages", `{"max_tokens":20,"stop_sequences":["cd"],"messages":[{"role":"user","content":"x"}]}`)
	if m = decodeMessage(t, body); *m.StopReason != "stop_sequence" || m.Content[0]["text"] != "ab" {
		t.Fatalf("%s", body)
	}
}

func TestMessagesTools(t *testing.T) {
	e := servertest.New(t)
	e.Script(`<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	tools := `"tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	code, body := e.Post("/v1/messages", `{"max_tokens":80,`+tools+`,"messages":[{"role":"user","content":"weather?"}]}`)
	m := decodeMessage(t, body)
	if code != 200 || *m.StopReason != "tool_use" || m.Content[len(m.Content)-1]["type"] != "tool_use" {
		t.Fatalf("%d %s", code, body)
	}
	use := m.Content[len(m.Content)-1]
	if in, _ := json.Marshal(use["input"]); use["name"] != "get_weather" || string(in) != `{"city":"Paris"}` || use["id"] == "" {
		t.Fatalf("tool_use %v", use)
	}
	// The result goes back as a tool_result block; the history renders.
	e.Script("Sunny.")
	hist := `"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},
		{"type":"tool_use","id":"` + use["id"].(string) + `","name":"get_weather","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + use["id"].(string) + `","content":"sunny"}]}]`
	code, body = e.Post("/v1/messages", `{"max_tokens":20,`+tools+`,`+hist+`}`)
	if m = decodeMessage(t, body); code != 200 || m.Content[0]["text"] != "Sunny." {
		t.Fatalf("%d %s", code, body)
	}
	// tool_choice "tool" forces the call whatever the model says.
	e.B.Script = nil
	code, body = e.Post("/v1/messages", `{"max_tokens":60,"temperature":1,`+tools+`,"tool_choice":{"type":"tool","name":"get_weather"},
		"messages":[{"role":"user","content":"x"}]}`)
	if m = decodeMessage(t, body); code != 200 || m.Content[len(m.Content)-1]["name"] != "get_weather" {
		t.Fatalf("%d %s", code, body)
	}
}

func TestMessagesStream(t *testing.T) {
	e := servertest.New(t)
	e.Script(`Hm.</think>Ok.<tool_call>{"name":"f","arguments":{"a":1}}</tool_call>`)
	code, _, body := e.Do("POST", "/v1/messages", `{"max_tokens":80,"stream":true,"thinking":{"type":"enabled","budget_tokens":100},
		"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var types []string
	var text, thinking, args strings.Builder
	for _, data := range servertest.SSEEvents(body) {
		var ev struct {
			Type  string
			Delta struct {
				Type, Text, Thinking string
				PartialJSON          string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		types = append(types, ev.Type)
		text.WriteString(ev.Delta.Text)
		thinking.WriteString(ev.Delta.Thinking)
		args.WriteString(ev.Delta.PartialJSON)
	}
	if types[0] != "message_start" || types[len(types)-1] != "message_stop" || text.String() != "Ok." || thinking.String() != "Hm." ||
		args.String() != `{"a":1}` || !strings.Contains(body, "event: content_block_start") || !strings.Contains(body, `"stop_reason":"tool_use"`) {
		t.Fatalf("events %v\n%s", types, body)
	}
}

func TestMessagesCountTokensAndErrors(t *testing.T) {
	e := servertest.New(t)
	code, body := e.Post("/v1/messages/count_tokens", `{"model":"qwen-test","messages":[{"role":"user","content":"hello"}]}`)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal([]byte(body), &ct); code != 200 || err != nil || ct.InputTokens == 0 {
		t.Fatalf("%d %s", code, body)
	}
	_, tok := e.Post("/tokenize", `{"messages":[{"role":"user","content":"hello"}],"chat_template_kwargs":{"enable_thinking":false}}`)
	var tr server.TokenizeResponse
	if err := json.Unmarshal([]byte(tok), &tr); err != nil || tr.Count != ct.InputTokens {
		t.Fatalf("count_tokens %d; /tokenize of the same prompt %s", ct.InputTokens, tok)
	}
	for _, c := range []struct{ body, want string }{
		{`{"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "image blocks are not supported"},
		{`{"max_tokens":5,"messages":[{"role":"robot","content":"x"}]}`, "robot"},
		{`{"max_tokens":5,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"x"}]}`, "sometimes"},
		{`{"max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature"},
	} {
		code, body := e.Post("/v1/messages", c.body)
		var er struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal([]byte(body), &er); code != 400 || err != nil || er.Type != "error" ||
			er.Error.Type != "invalid_request_error" || !strings.Contains(er.Error.Message, c.want) {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
}
