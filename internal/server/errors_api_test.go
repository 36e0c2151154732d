package server_test

import (
	"encoding/json"
	"github.com/lily-engine/lily/internal/server/servertest"
	"net/http"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server"
)

// errorOf decodes the OpenAI error envelope, failing the test when the body is not one.
func errorOf(t *testing.T, body string) server.ErrorBody {
	t.Helper()
	var e server.ErrorResponse
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an error envelope: %s", body)
	}
	return e.Error
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestErrorResponses(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 100; c.MaxBody = 4096 })
	e.Script("hi")
	chat := func(extra string) string {
		return `{"model":"` + servertest.ModelName + `","messages":[{"role":"user","content":"hello"}]` + extra + `}`
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		code, param, inMessage   string
	}{
		{"unknown route", "GET", "/v1/nothing", "", 404, "not_found", "<nil>", ""},
		{"wrong method", "GET", "/v1/chat/completions", "", 405, "method_not_allowed", "<nil>", "POST"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found", "model", "gpt-9"},
		{"invalid json", "POST", "/v1/chat/completions", `{"messages":`, 400, "invalid_json", "<nil>", ""},
		{"not an object", "POST", "/v1/completions", `[1,2]`, 400, "invalid_json", "<nil>", ""},
		{"wrong type", "POST", "/v1/chat/completions", chat(`,"temperature":"hot"`), 400, "invalid_type", "temperature", "temperature"},
		{"wrong nested type", "POST", "/v1/chat/completions", chat(`,"stream":true,"stream_options":{"include_usage":1}`), 400, "invalid_type", "stream_options.include_usage", ""},
		{"temperature range", "POST", "/v1/chat/completions", chat(`,"temperature":3`), 400, "invalid_value", "temperature", "between"},
		{"top_p range", "POST", "/v1/chat/completions", chat(`,"top_p":0`), 400, "invalid_value", "top_p", ""},
		{"n too large", "POST", "/v1/chat/completions", chat(`,"n":17`), 400, "invalid_value", "n", "between 1 and 16"},
		{"n zero", "POST", "/v1/completions", `{"prompt":"a","n":0}`, 400, "invalid_value", "n", ""},
		{"logit_bias key", "POST", "/v1/chat/completions", chat(`,"logit_bias":{"x":1}`), 400, "invalid_value", "logit_bias", "token id"},
		{"logit_bias id", "POST", "/v1/completions", `{"prompt":"a","logit_bias":{"99999":1}}`, 400, "invalid_value", "logit_bias", "token id"},
		{"logit_bias value", "POST", "/v1/completions", `{"prompt":"a","logit_bias":{"5":101}}`, 400, "invalid_value", "logit_bias", "-100 and 100"},
		{"stop_token_ids", "POST", "/v1/completions", `{"prompt":"a","stop_token_ids":[-1]}`, 400, "invalid_value", "stop_token_ids[0]", ""},
		{"min_tokens", "POST", "/v1/completions", `{"prompt":"a","min_tokens":-1}`, 400, "invalid_value", "min_tokens", ""},
		{"repetition_penalty", "POST", "/v1/chat/completions", chat(`,"repetition_penalty":0`), 400, "invalid_value", "repetition_penalty", ""},
		{"suffix", "POST", "/v1/completions", `{"prompt":"a","suffix":"z"}`, 400, "invalid_value", "suffix", "not supported"},
		{"best_of", "POST", "/v1/completions", `{"prompt":"a","best_of":2}`, 400, "invalid_value", "best_of", ""},
		{"response_format type", "POST", "/v1/chat/completions", chat(`,"response_format":{"type":"yaml"}`), 400, "invalid_value", "response_format", "yaml"},
		{"tool_choice bogus", "POST", "/v1/chat/completions", chat(`,"tool_choice":"bogus"`), 400, "invalid_value", "tool_choice", "bogus"},
		{"tool_choice unknown function", "POST", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`), 400, "invalid_value", "tool_choice", `"g"`},
		{"tool_choice required without tools", "POST", "/v1/chat/completions", chat(`,"tool_choice":"required"`), 400, "invalid_value", "tool_choice", "needs tools"},
		{"tool without function", "POST", "/v1/chat/completions", chat(`,"tools":[{"type":"function"}]`), 400, "invalid_value", "tools[0].function", ""},
		{"image part", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, 400, "invalid_value", "messages[0].content[1]", "image_url input is not supported"},
		{"max_tokens 0 in chat", "POST", "/v1/chat/completions", chat(`,"max_tokens":0`), 400, "invalid_value", "max_tokens", ""},
		{"max_completion_tokens", "POST", "/v1/chat/completions", chat(`,"max_completion_tokens":-1`), 400, "invalid_value", "max_completion_tokens", ""},
		{"stop type", "POST", "/v1/chat/completions", chat(`,"stop":5`), 400, "invalid_value", "stop", ""},
		{"empty stop", "POST", "/v1/chat/completions", chat(`,"stop":[""]`), 400, "invalid_value", "stop", ""},
		{"top_logprobs range", "POST", "/v1/chat/completions", chat(`,"logprobs":true,"top_logprobs":21`), 400, "invalid_value", "top_logprobs", ""},
		{"thinking kwarg type", "POST", "/v1/chat/completions", chat(`,"chat_template_kwargs":{"enable_thinking":"no"}`), 400, "invalid_value", "chat_template_kwargs.enable_thinking", ""},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"qwen-test"}`, 400, "invalid_value", "messages", ""},
		{"empty messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_value", "messages", ""},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "invalid_value", "messages[0].role", ""},
		{"tools not array", "POST", "/v1/chat/completions", chat(`,"tools":{}`), 400, "invalid_value", "tools", ""},
		{"template error", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"RAISE"}]}`, 400, "invalid_value", "messages", "template raised"},
		{"context exceeded", "POST", "/v1/chat/completions", chat(`,"max_tokens":90`), 400, "context_length_exceeded", "messages", "100"},
		{"prompt over context", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 101) + `"}`, 400, "context_length_exceeded", "prompt", ""},
		{"prompt fills context", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 90) + `"}]}`, 400, "context_length_exceeded", "messages", ""},
		{"token out of vocab", "POST", "/v1/completions", `{"prompt":[1,2,9999],"max_tokens":1}`, 400, "invalid_value", "prompt", "9999"},
		{"empty prompt", "POST", "/v1/completions", `{"prompt":""}`, 400, "invalid_value", "prompt", ""},
		{"no prompt", "POST", "/v1/completions", `{"max_tokens":1}`, 400, "invalid_value", "prompt", ""},
		{"batched prompts", "POST", "/v1/completions", `{"prompt":["a","b"]}`, 400, "invalid_value", "prompt", "one prompt"},
		{"prompt type", "POST", "/v1/completions", `{"prompt":{"a":1}}`, 400, "invalid_value", "prompt", ""},
		{"completion logprobs range", "POST", "/v1/completions", `{"prompt":"a","logprobs":30}`, 400, "invalid_value", "logprobs", ""},
		{"body too large", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 5000) + `"}`, 413, "request_too_large", "<nil>", "4096"},
		{"detokenize range", "POST", "/detokenize", `{"tokens":[-1]}`, 400, "invalid_value", "tokens[0]", ""},
		{"tokenize nothing", "POST", "/tokenize", `{}`, 400, "invalid_value", "prompt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := e.Do(tt.method, tt.path, tt.body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			er := errorOf(t, body)
			if str(er.Code) != tt.code || str(er.Param) != tt.param || !strings.Contains(er.Message, tt.inMessage) {
				t.Fatalf("error %+v (code %s, param %s); want code %s param %s message containing %q",
					er, str(er.Code), str(er.Param), tt.code, tt.param, tt.inMessage)
			}
			if hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", hdr.Get("Content-Type"))
			}
			if code == 405 && hdr.Get("Allow") != "POST" {
				t.Fatalf("Allow %q", hdr.Get("Allow"))
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.APIKey = "sekrit" })
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "sekrit"}} {
		code, hdr, body := e.Do("GET", "/v1/models", "", h...)
		if code != http.StatusUnauthorized || str(errorOf(t, body).Code) != "invalid_api_key" || hdr.Get("WWW-Authenticate") == "" {
			t.Fatalf("%v: %d %s", h, code, body)
		}
	}
	if code, _, body := e.Do("GET", "/v1/models", "", "Authorization", "Bearer sekrit"); code != 200 {
		t.Fatalf("with key: %d %s", code, body)
	}
	if code, _, _ := e.Do("GET", "/health", ""); code != 200 {
		t.Fatalf("health needs no key: %d", code)
	}
}

func TestHostAllowlist(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.AllowHosts = []string{"lily.internal"} })
	for host, want := range map[string]int{
		"localhost:8080": 200, "127.0.0.1": 200, "[::1]:9": 200, "LOCALHOST": 200, "lily.internal:80": 200,
		"evil.example:8080": 403, "127.0.0.1.evil.example": 403,
	} {
		req, _ := http.NewRequest("GET", e.TS.URL+"/health", nil)
		req.Host = host
		resp, err := e.TS.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
	// Not bound to loopback: no allowlist.
	open := servertest.New(t, func(c *server.Config) { c.Loopback = false })
	req, _ := http.NewRequest("GET", open.TS.URL+"/health", nil)
	req.Host = "evil.example"
	resp, err := open.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("non-loopback server checked Host: %d", resp.StatusCode)
	}
}

func TestCORS(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CORSOrigins = []string{"https://app.example"} })
	for origin, allowed := range map[string]bool{
		"http://localhost:3000": true, "http://127.0.0.1": true, "https://app.example": true,
		"https://evil.example": false, "null": false, "http://localhost.evil.example": false,
	} {
		_, hdr, _ := e.Do("GET", "/v1/models", "", "Origin", origin)
		if got := hdr.Get("Access-Control-Allow-Origin"); (got == origin) != allowed || (!allowed && got != "") {
			t.Errorf("origin %q: allow-origin %q", origin, got)
		}
	}
	code, hdr, _ := e.Do("OPTIONS", "/v1/chat/completions", "", "Origin", "http://localhost:5173",
		"Access-Control-Request-Method", "POST")
	if code != http.StatusNoContent || !strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", code, hdr)
	}
}

func TestPanicBecomes500(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.Model.Chat = panicChat{} })
	code, body := e.Post("/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if code != 500 || str(errorOf(t, body).Code) != "internal_error" {
		t.Fatalf("%d %s", code, body)
	}
	if !strings.Contains(e.Logs.String(), "panic in handler") {
		t.Fatalf("no log line for the panic: %s", e.Logs.String())
	}
	if code, _, _ := e.Do("GET", "/health", ""); code != 200 {
		t.Fatalf("unhealthy after panic: %d", code)
	}
}

type panicChat struct{ servertest.Chat }

func (panicChat) Render(json.RawMessage, json.RawMessage, server.RenderOptions) (string, error) {
	panic("boom")
}
