package server_test

import (
	"encoding/json"
	"github.com/lily-engine/lily/internal/server/servertest"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server"
)

func decodeChat(t *testing.T, body string) server.ChatResponse {
	t.Helper()
	var r server.ChatResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return r
}

const userHi = `"messages":[{"role":"user","content":"hi"}]`

func TestChatReasoningAndContent(t *testing.T) {
	e := servertest.New(t)
	e.Script("Let me think.</think>\n\nHello, world!")
	code, body := e.Post("/v1/chat/completions", `{"model":"qwen-test",`+userHi+`,"return_token_ids":true}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	r := decodeChat(t, body)
	c := r.Choices[0]
	m := c.Message
	if m.ReasoningContent != "Let me think." || str(m.Content) != "Hello, world!" || str(c.FinishReason) != "stop" {
		t.Fatalf("message %+v finish %s", m, str(c.FinishReason))
	}
	script := e.Tok.Encode("Let me think.</think>\n\nHello, world!")
	if !slices.Equal(c.TokenIDs, append(script, servertest.IDIMEnd)) {
		t.Fatalf("token_ids %v", c.TokenIDs)
	}
	prompt := e.Tok.Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
	if !slices.Equal(r.PromptTokenIDs, prompt) {
		t.Fatalf("prompt_token_ids %v, want %v", r.PromptTokenIDs, prompt)
	}
	if u := r.Usage; u.PromptTokens != len(prompt) || u.CompletionTokens != len(script)+1 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}
	if r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl-") || r.Model != servertest.ModelName {
		t.Fatalf("envelope %+v", r)
	}
	// Without return_token_ids the fields are absent.
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`}`)
	if strings.Contains(body, "token_ids") {
		t.Fatalf("token ids without asking: %s", body)
	}
}

func TestChatThinkingOff(t *testing.T) {
	e := servertest.New(t)
	e.Script("Plain answer.")
	code, body := e.Post("/v1/chat/completions", `{`+userHi+`,"chat_template_kwargs":{"enable_thinking":false},"return_token_ids":true}`)
	r := decodeChat(t, body)
	if code != 200 || str(r.Choices[0].Message.Content) != "Plain answer." || r.Choices[0].Message.ReasoningContent != "" {
		t.Fatalf("%d %s", code, body)
	}
	if !slices.Equal(r.PromptTokenIDs[len(r.PromptTokenIDs)-4:], e.Tok.Encode("\n</think>\n\n")[:4]) {
		t.Fatalf("thinking-off prompt not rendered: %v", r.PromptTokenIDs)
	}
}

func TestChatLengthAndStop(t *testing.T) {
	e := servertest.New(t)
	e.Script("abc</think>Hello there, STOP here.")
	_, body := e.Post("/v1/chat/completions", `{`+userHi+`,"max_completion_tokens":5,"max_tokens":100}`)
	r := decodeChat(t, body)
	if str(r.Choices[0].FinishReason) != "length" || r.Usage.CompletionTokens != 5 {
		t.Fatalf("length: %s", body)
	}
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`,"stop":"STOP"}`)
	r = decodeChat(t, body)
	if str(r.Choices[0].FinishReason) != "stop" || str(r.Choices[0].Message.Content) != "Hello there, " {
		t.Fatalf("stop string: %s", body)
	}
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`,"stop":["zzz","re,"]}`)
	if r = decodeChat(t, body); str(r.Choices[0].Message.Content) != "Hello the" {
		t.Fatalf("stop array: %s", body)
	}
}

func TestChatToolCalls(t *testing.T) {
	e := servertest.New(t)
	e.Script(`Weather needed.</think>Checking.<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	_, body := e.Post("/v1/chat/completions", `{`+userHi+tools+`}`)
	r := decodeChat(t, body)
	c := r.Choices[0]
	if str(c.FinishReason) != "tool_calls" || len(c.Message.ToolCalls) != 1 || str(c.Message.Content) != "Checking." {
		t.Fatalf("%s", body)
	}
	tc := c.Message.ToolCalls[0]
	if tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` ||
		len(tc.ID) != len("call_")+24 || !strings.HasPrefix(tc.ID, "call_") || tc.Index != nil {
		t.Fatalf("tool call %+v", tc)
	}
	// Only tool calls: content is null.
	e.Script(`x</think><tool_call>{"name":"f","arguments":{}}</tool_call>`)
	_, body = e.Post("/v1/chat/completions", `{`+userHi+tools+`}`)
	if !strings.Contains(body, `"content":null`) {
		t.Fatalf("content should be null: %s", body)
	}
}

func TestChatLogprobs(t *testing.T) {
	e := servertest.New(t)
	e.Script("a</think>Yes")
	_, body := e.Post("/v1/chat/completions", `{`+userHi+`,"logprobs":true,"top_logprobs":2}`)
	r := decodeChat(t, body)
	lp := r.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != r.Usage.CompletionTokens {
		t.Fatalf("logprobs: %s", body)
	}
	first := lp.Content[0]
	// The fake's scores fall by 0.25 per id from the scripted token: the top two differ by 0.25.
	if first.Token != "a" || len(first.TopLogprobs) != 2 || first.TopLogprobs[0].Token != "a" ||
		math.Abs(first.TopLogprobs[0].Logprob-first.TopLogprobs[1].Logprob-0.25) > 1e-6 || first.Logprob >= 0 ||
		!slices.Equal(first.Bytes, []int{'a'}) {
		t.Fatalf("first logprob %+v", first)
	}
	if last := lp.Content[len(lp.Content)-1]; last.Token != "<|im_end|>" {
		t.Fatalf("last logprob %+v", last)
	}
	// Not asked: null.
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`}`)
	if r = decodeChat(t, body); r.Choices[0].Logprobs != nil {
		t.Fatalf("unasked logprobs: %s", body)
	}
}

func TestChatSamplingSeed(t *testing.T) {
	e := servertest.New(t) // unscripted: the fake's rule, with a spread for sampling
	get := func(extra string) string {
		code, body := e.Post("/v1/chat/completions", `{`+userHi+`,"max_tokens":30`+extra+`}`)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		return decodeChat(t, body).Choices[0].Message.ReasoningContent
	}
	greedy := get("")
	if greedy != get(`,"temperature":0`) {
		t.Fatal("omitted temperature is not greedy")
	}
	a := get(`,"temperature":1,"seed":7`)
	if a != get(`,"temperature":1,"seed":7`) {
		t.Fatal("same seed, different output")
	}
	if a == get(`,"temperature":1,"seed":8`) || a == greedy {
		t.Fatal("seeds do not matter")
	}
	if get(`,"temperature":1,"top_k":1,"seed":3`) != greedy {
		t.Fatal("top_k 1 is not greedy")
	}
}

func TestChatPrefixCache(t *testing.T) {
	e := servertest.New(t)
	e.Script("ok</think>Sure.")
	turn1 := `{"messages":[{"role":"user","content":"first question"}]}`
	_, body := e.Post("/v1/chat/completions", turn1)
	if r := decodeChat(t, body); r.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("cold: %s", body)
	}
	turn2 := `{"messages":[{"role":"user","content":"first question"},{"role":"assistant","content":"Sure."},{"role":"user","content":"more"}]}`
	_, body = e.Post("/v1/chat/completions", turn2)
	r := decodeChat(t, body)
	// The cache point is the last <|im_start|> of turn 1: everything before the assistant header.
	want := len(e.Tok.Encode("<|im_start|>user\nfirst question<|im_end|>\n"))
	if got := r.Usage.PromptTokensDetails.CachedTokens; got != want {
		t.Fatalf("cached %d, want %d", got, want)
	}
	if str(r.Choices[0].Message.Content) != "Sure." {
		t.Fatalf("%s", body)
	}
}

// An omitted max_tokens uses the rest of the context window, and no more.
func TestChatDefaultMaxIsRestOfContext(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 60 })
	e.B.Script = nil // never stops by itself
	code, body := e.Post("/v1/chat/completions", `{`+userHi+`}`)
	r := decodeChat(t, body)
	if code != 200 || str(r.Choices[0].FinishReason) != "length" || r.Usage.TotalTokens != 60 {
		t.Fatalf("%d %s", code, body)
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	e := servertest.New(t)
	hs := e.Srv.HTTPServer("127.0.0.1:0")
	if hs.ReadHeaderTimeout <= 0 || hs.Handler != e.Srv || hs.WriteTimeout != 0 {
		t.Fatalf("%+v", hs)
	}
}
