package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// paddedEnv serves a model with 8 more logit rows than the tokenizer has ids, as the real
// checkpoint does (248,320 rows).
func paddedEnv(t *testing.T) (*servertest.Env, *enginetest.Backend) {
	tok := servertest.NewTokenizer()
	b := &enginetest.Backend{Vocab: tok.VocabSize() + 8, Context: 512, MinID: servertest.FirstPlain + 4, End: servertest.IDIMEnd}
	e := servertest.New(t, func(c *server.Config) { c.Model.Backend = b })
	return e, b
}

// TestPaddedIDs: an id the model has but the tokenizer lacks is kept (token_ids, logprobs) and
// decodes as nothing, in chat, completions, streams, echo and /detokenize (defect 1).
func TestPaddedIDs(t *testing.T) {
	e, b := paddedEnv(t)
	pad := int32(e.Tok.VocabSize() + 3)
	b.Script = append(e.Tok.Encode("a</think>x"), pad, e.Tok.ID("y"))
	code, body := e.Post("/v1/chat/completions", `{`+userHi+`,"return_token_ids":true,"logprobs":true}`)
	r := decodeChat(t, body)
	if code != 200 || str(r.Choices[0].Message.Content) != "xy" || !slices.Contains(r.Choices[0].TokenIDs, pad) {
		t.Fatalf("chat: %d %s", code, body)
	}
	code, _, body = e.Do("POST", "/v1/chat/completions", `{`+userHi+`,"stream":true}`)
	if code != 200 || strings.Contains(body, "error") {
		t.Fatalf("chat stream: %d %s", code, body)
	}
	b.Script = []int32{pad, e.Tok.ID("z")}
	code, body = e.Post("/v1/completions", `{"prompt":"q","return_token_ids":true,"logprobs":1}`)
	c := decodeCompletion(t, body).Choices[0]
	if code != 200 || c.Text != "z" || c.TokenIDs[0] != pad || c.Logprobs.Tokens[0] != "" {
		t.Fatalf("completion: %d %s", code, body)
	}
	// Echo scoring of a prompt holding the id is accepted like the same prompt without echo.
	prompt := fmt.Sprintf("[%d,%d]", e.Tok.ID("q"), pad)
	for _, echo := range []string{"false", "true"} {
		code, body = e.Post("/v1/completions", `{"prompt":`+prompt+`,"max_tokens":0,"logprobs":0,"echo":`+echo+`}`)
		if code != 200 {
			t.Fatalf("echo %s: %d %s", echo, code, body)
		}
	}
	// One valid range: the model's rows.
	code, body = e.Post("/detokenize", fmt.Sprintf(`{"tokens":[%d,%d]}`, e.Tok.ID("q"), pad))
	if code != 200 || !strings.Contains(body, `"prompt":"q"`) {
		t.Fatalf("detokenize: %d %s", code, body)
	}
	for _, path := range []string{"/detokenize", "/v1/completions"} {
		field := "tokens"
		if path != "/detokenize" {
			field = "prompt"
		}
		code, _ = e.Post(path, fmt.Sprintf(`{%q:[%d]}`, field, b.Vocab))
		if code != 400 {
			t.Fatalf("%s: id %d past the model accepted", path, b.Vocab)
		}
	}
}

// TestTopLogprobsDistinct: byte tokens that each show as U+FFFD keep their own top_logprobs
// entries (defect 2), and return_tokens_as_token_ids spells every token as token_id:N.
func TestTopLogprobsDistinct(t *testing.T) {
	e := servertest.New(t)
	f0, _ := e.Tok.TokenID("\xf0")
	e.B.Script = []int32{f0}
	_, body := e.Post("/v1/completions", `{"prompt":"q","max_tokens":1,"logprobs":4}`)
	c := decodeCompletion(t, body).Choices[0]
	if top := c.Logprobs.TopLogprobs[0]; len(top) != 4 || top[fmt.Sprintf("token_id:%d", f0)] == 0 || top[fmt.Sprintf("token_id:%d", f0+1)] == 0 {
		t.Fatalf("top_logprobs %v: want 4 entries, the byte tokens by id", top)
	}
	_, body = e.Post("/v1/completions", `{"prompt":"q","max_tokens":1,"logprobs":2,"return_tokens_as_token_ids":true}`)
	c = decodeCompletion(t, body).Choices[0]
	if c.Logprobs.Tokens[0] != fmt.Sprintf("token_id:%d", f0) {
		t.Fatalf("tokens %v", c.Logprobs.Tokens)
	}
	// Chat: the bytes are the token's own, not U+FFFD's.
	e.B.Script = append(e.Tok.Encode("a</think>"), f0)
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`,"logprobs":true,"top_logprobs":2}`)
	lp := decodeChat(t, body).Choices[0].Logprobs.Content
	last := lp[len(lp)-2]
	if !slices.Equal(last.Bytes, []int{0xf0}) || !slices.Equal(last.TopLogprobs[1].Bytes, []int{0x9f}) {
		t.Fatalf("bytes %+v", last)
	}
}

// TestNChoices: n sequential choices, distinct under a seed, usage summed, the prompt reused.
func TestNChoices(t *testing.T) {
	e := servertest.New(t)
	e.B.Script = nil
	code, body := e.Post("/v1/completions", `{"prompt":"hello","max_tokens":4,"n":3,"temperature":1,"seed":7}`)
	r := decodeCompletion(t, body)
	if code != 200 || len(r.Choices) != 3 || r.Usage.CompletionTokens != 12 || r.Usage.PromptTokens != 5 {
		t.Fatalf("%d %s", code, body)
	}
	if r.Choices[0].Text == r.Choices[1].Text && r.Choices[1].Text == r.Choices[2].Text {
		t.Fatalf("3 seeded choices are equal: %s", body)
	}
	for i, c := range r.Choices {
		if c.Index != i {
			t.Fatalf("choice %d has index %d", i, c.Index)
		}
	}
	before := e.B.PrefilledTokens.Load()
	_, body = e.Post("/v1/chat/completions", `{`+userHi+`,"n":2,"max_tokens":3}`)
	cr := decodeChat(t, body)
	prompt := int64(cr.Usage.PromptTokens)
	if len(cr.Choices) != 2 || cr.Choices[1].Index != 1 || e.B.PrefilledTokens.Load()-before >= 2*prompt {
		t.Fatalf("chat n=2 prefilled %d tokens for a %d-token prompt: %s", e.B.PrefilledTokens.Load()-before, prompt, body)
	}
	_, _, body = e.Do("POST", "/v1/chat/completions", `{`+userHi+`,"n":2,"max_tokens":3,"stream":true}`)
	if !strings.Contains(body, `"index":1,"delta":{"role":"assistant"`) || strings.Count(body, `"finish_reason":"length"`) != 2 {
		t.Fatalf("stream n=2: %s", body)
	}
}

func TestStopControls(t *testing.T) {
	e := servertest.New(t)
	e.Script("abcdef")
	post := func(extra string) server.CompletionChoice {
		t.Helper()
		code, body := e.Post("/v1/completions", `{"prompt":"q","return_token_ids":true`+extra+`}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", extra, code, body)
		}
		return decodeCompletion(t, body).Choices[0]
	}
	if c := post(fmt.Sprintf(`,"stop_token_ids":[%d]`, e.Tok.ID("c"))); c.Text != "ab" || str(c.FinishReason) != "stop" {
		t.Fatalf("stop_token_ids: %+v", c)
	}
	if c := post(`,"stop":["cd"],"include_stop_str_in_output":true`); c.Text != "abcd" {
		t.Fatalf("include_stop_str_in_output: %q", c.Text)
	}
	if c := post(`,"ignore_eos":true,"max_tokens":9`); c.Text != "abcdef" || len(c.TokenIDs) != 9 || str(c.FinishReason) != "length" {
		t.Fatalf("ignore_eos: %+v", c)
	}
	if c := post(`,"skip_special_tokens":false,"ignore_eos":true,"max_tokens":7`); c.Text != "abcdef<|im_end|>" {
		t.Fatalf("skip_special_tokens false: %q", c.Text)
	}
	if c := post(`,"min_tokens":8,"max_tokens":12`); len(c.TokenIDs) < 9 || c.TokenIDs[6] == servertest.IDIMEnd {
		t.Fatalf("min_tokens: %+v", c)
	}
	z := e.Tok.ID("z")
	if c := post(fmt.Sprintf(`,"logit_bias":{"%d":100},"max_tokens":2`, z)); c.Text != "zz" {
		t.Fatalf("logit_bias: %q", c.Text)
	}
	// The fake scores the scripted "a" 0 and "b" -0.25; raised by 1, a penalty of 2 puts "a" after
	// its first time below "b".
	e.Script("aaaa")
	raise := fmt.Sprintf(`,"max_tokens":2,"logit_bias":{"%d":1,"%d":1}`, e.Tok.ID("a"), e.Tok.ID("b"))
	if c := post(raise); c.Text != "aa" {
		t.Fatalf("without repetition_penalty: %q", c.Text)
	}
	if c := post(raise + `,"repetition_penalty":2`); c.Text != "ab" {
		t.Fatalf("repetition_penalty: %q", c.Text)
	}
}

// TestToolChoiceNoneAndSingle: "none" yields no tool call even when the model wants one;
// parallel_tool_calls false keeps one call and ends the turn after it.
func TestToolChoiceNoneAndSingle(t *testing.T) {
	e := servertest.New(t)
	tools := `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	e.Script(`x</think><tool_call>{"name":"f","arguments":{}}</tool_call>`)
	_, body := e.Post("/v1/chat/completions", `{`+userHi+tools+`,"tool_choice":"none","max_tokens":30}`)
	c := decodeChat(t, body).Choices[0]
	if len(c.Message.ToolCalls) != 0 || str(c.FinishReason) == "tool_calls" {
		t.Fatalf("none: %s", body)
	}
	e.Script(`x</think><tool_call>{"name":"f","arguments":{"a":1}}</tool_call><tool_call>{"name":"f","arguments":{"a":2}}</tool_call>`)
	_, body = e.Post("/v1/chat/completions", `{`+userHi+tools+`,"parallel_tool_calls":false,"return_token_ids":true}`)
	c = decodeChat(t, body).Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Arguments != `{"a":1}` || str(c.FinishReason) != "tool_calls" {
		t.Fatalf("parallel_tool_calls false: %s", body)
	}
	if n := len(c.TokenIDs); c.TokenIDs[n-1] > servertest.IDIMEnd || slices.Index(c.TokenIDs, e.Tok.ID("</tool_call>")) != n-2 {
		t.Fatalf("the turn goes on after the call: %v", c.TokenIDs)
	}
}

func TestOpsEndpoints(t *testing.T) {
	e := servertest.New(t)
	if code, _, body := e.Do("HEAD", "/health", ""); code != 200 || body != "" {
		t.Fatalf("HEAD /health: %d %q", code, body)
	}
	code, _, body := e.Do("GET", "/v1/models/"+servertest.ModelName, "")
	var m server.ModelInfo
	if err := json.Unmarshal([]byte(body), &m); code != 200 || err != nil || m.ID != servertest.ModelName || m.Object != "model" {
		t.Fatalf("GET /v1/models/{id}: %d %s", code, body)
	}
	if code, _, body = e.Do("GET", "/v1/models/other", ""); code != 404 || !strings.Contains(body, "model_not_found") {
		t.Fatalf("unknown model: %d %s", code, body)
	}
	code, _, body = e.Do("GET", "/version", "")
	var v server.VersionInfo
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil || v.GoVersion == "" || v.Backend != "fake" {
		t.Fatalf("/version: %d %s", code, body)
	}
}

func TestMetrics(t *testing.T) {
	e := servertest.New(t)
	e.Script("hello")
	for range 2 {
		if code, body := e.Post("/v1/chat/completions", `{`+userHi+`}`); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	e.Post("/v1/chat/completions", `{"messages":[]}`)
	code, hdr, body := e.Do("GET", "/metrics", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %v", code, hdr)
	}
	for _, want := range []string{
		`lily_requests_total{route="/v1/chat/completions",status="200"} 2`,
		`lily_requests_total{route="/v1/chat/completions",status="400"} 1`,
		"lily_generation_tokens_total 12", // twice "hello" and <|im_end|>, one token a character
		"lily_prompt_cache_hits_total 1",
		`lily_time_to_first_token_seconds_bucket{le="+Inf"} 2`,
		"lily_time_to_first_token_seconds_count 2",
		"lily_queue_waiting 0",
		"# TYPE lily_decode_tokens_per_second gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
}
