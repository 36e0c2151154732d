package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// FuzzDecodeChatRequest feeds arbitrary bodies to the chat endpoint: the decoder and validation
// must answer every one with a 2xx or a 4xx in the OpenAI envelope, never a 5xx or a panic.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"qwen-test","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stop":["a","b"],"temperature":0.5,"seed":-1,"top_k":-1}`,
		`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":5,"chat_template_kwargs":{"enable_thinking":false}}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"n":1}`,
		`{"messages":"nope"}`, `{"stop":5}`, `[]`, `null`, `{"messages":[{"role":1}]}`, `{"max_tokens":1e99}`,
		`{"messages":[{"role":"user","content":"x"}],"top_p":NaN}`, `{"temperature":-0}`, "{\"messages\":[]}\n{}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		e := newFuzzServer(t)
		checkFuzzAnswer(t, e, "/v1/chat/completions", body)
	})
}

// FuzzDecodeCompletionRequest does the same for the completions and tokenize endpoints: the
// prompt's string, id and nested forms, echo and logprobs.
func FuzzDecodeCompletionRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":2}`, `{"prompt":[1,2,3],"echo":true,"logprobs":2,"max_tokens":0}`,
		`{"prompt":[[5,6]],"return_token_ids":true}`, `{"prompt":["text"],"stream":true}`, `{"prompt":[["a"]]}`,
		`{"prompt":[[[1]]]}`, `{"prompt":["a","b"]}`, `{"prompt":[]}`, `{"prompt":null}`, `{"prompt":[-1]}`,
		`{"prompt":"x","max_tokens":9223372036854775807}`, `{"prompt":"x","logprobs":21}`,
		`{"prompt":"hi","n":2,"logit_bias":{"5":3},"min_tokens":1,"stop_token_ids":[7],"ignore_eos":true}`,
		`{"prompt":[5,6],"echo":true,"logprobs":3,"return_tokens_as_token_ids":true,"repetition_penalty":1.2}`,
		`{"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"enum":[1,"b"]}}}}}}`,
		`{"prompt":"x","response_format":{"type":"json_object"},"max_tokens":9}`, `{"prompt":"x","suffix":"y","best_of":3}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		e := newFuzzServer(t)
		checkFuzzAnswer(t, e, "/v1/completions", body)
		checkFuzzAnswer(t, e, "/tokenize", body)
	})
}

// FuzzDecodeResponsesRequest does the same for the Responses API.
func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"input":"hi","instructions":"be brief","max_output_tokens":8}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"input":"x","stream":true,"text":{"format":{"type":"json_schema","name":"a","schema":{"type":"integer"}}}}`,
		`{"input":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"r"}]}],"previous_response_id":"resp_x"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkFuzzAnswer(t, newFuzzServer(t), "/v1/responses", body)
	})
}

// FuzzDecodeMessagesRequest does the same for the Anthropic Messages API (its errors use
// Anthropic's envelope).
func FuzzDecodeMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"max_tokens":8,"system":"s","messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":8,"stream":true,"thinking":{"type":"enabled"},"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"max_tokens":8,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"messages":[]}`, `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		e := newFuzzServer(t)
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			req.Host = "localhost" // past the DNS-rebinding guard, to the decoder
			req.Header.Set("Content-Type", "application/json")
			e.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d for %q: %s", path, rec.Code, body, rec.Body.String())
			}
			if rec.Code >= 400 {
				var er struct {
					Type  string
					Error struct{ Message string }
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Type != "error" || er.Error.Message == "" {
					t.Fatalf("%s: status %d without Anthropic's error envelope: %s", path, rec.Code, rec.Body.String())
				}
				if rec.Code == http.StatusUnsupportedMediaType {
					t.Fatalf("%s: 415 for a JSON request", path)
				}
			}
		}
	})
}

// checkFuzzAnswer posts body as JSON to path: the answer must be 200 or a 4xx in the OpenAI
// envelope, never a 5xx or a panic.
func checkFuzzAnswer(t *testing.T, e *server.Server, path, body string) {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Host = "localhost"                             // else the DNS-rebinding guard answers 403
	req.Header.Set("Content-Type", "application/json") // else every body is a 415
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s: status %d for %q: %s", path, rec.Code, body, rec.Body.String())
	}
	if rec.Code >= 400 {
		var er server.ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error.Message == "" {
			t.Fatalf("%s: status %d without an error envelope: %s", path, rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusUnsupportedMediaType || rec.Code == http.StatusForbidden {
			t.Fatalf("%s: %d: the request never reached the decoder", path, rec.Code)
		}
	} else if rec.Code != http.StatusOK {
		t.Fatalf("%s: status %d", path, rec.Code)
	}
}

func newFuzzServer(t *testing.T) *server.Server {
	t.Helper()
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 64 })
	e.Script("a</think>b")
	return e.Srv
}
