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
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		e := newFuzzServer(t)
		checkFuzzAnswer(t, e, "/v1/completions", body)
		checkFuzzAnswer(t, e, "/tokenize", body)
	})
}

// checkFuzzAnswer posts body as JSON to path: the answer must be 200 or a 4xx in the OpenAI
// envelope, never a 5xx or a panic.
func checkFuzzAnswer(t *testing.T, e *server.Server, path, body string) {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
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
		if rec.Code == http.StatusUnsupportedMediaType {
			t.Fatalf("%s: 415 for a JSON request", path)
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
