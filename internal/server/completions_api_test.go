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

func decodeCompletion(t *testing.T, body string) server.CompletionResponse {
	t.Helper()
	var r server.CompletionResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return r
}

func TestCompletionStringAndIDs(t *testing.T) {
	e := servertest.New(t)
	e.Script("world")
	code, body := e.Post("/v1/completions", `{"model":"qwen-test","prompt":"Hello ","return_token_ids":true}`)
	r := decodeCompletion(t, body)
	c := r.Choices[0]
	if code != 200 || c.Text != "world" || str(c.FinishReason) != "stop" || r.Object != "text_completion" {
		t.Fatalf("%d %s", code, body)
	}
	if !slices.Equal(c.PromptTokenIDs, e.Tok.Encode("Hello ")) || !slices.Equal(c.TokenIDs, append(e.Tok.Encode("world"), servertest.IDIMEnd)) {
		t.Fatalf("ids %v %v", c.PromptTokenIDs, c.TokenIDs)
	}
	ids, _ := json.Marshal(e.Tok.Encode("Hello "))
	_, body2 := e.Post("/v1/completions", `{"prompt":`+string(ids)+`,"return_token_ids":true}`)
	if r2 := decodeCompletion(t, body2); r2.Choices[0].Text != "world" || !slices.Equal(r2.Choices[0].PromptTokenIDs, c.PromptTokenIDs) {
		t.Fatalf("id prompt: %s", body2)
	}
	_, body3 := e.Post("/v1/completions", `{"prompt":[`+string(ids)+`]}`)
	if r3 := decodeCompletion(t, body3); r3.Choices[0].Text != "world" {
		t.Fatalf("nested id prompt: %s", body3)
	}
	_, body4 := e.Post("/v1/completions", `{"prompt":"Hello ","max_tokens":3,"echo":true}`)
	if r4 := decodeCompletion(t, body4); r4.Choices[0].Text != "Hello wor" || str(r4.Choices[0].FinishReason) != "length" {
		t.Fatalf("echo: %s", body4)
	}
}

func TestCompletionScoring(t *testing.T) {
	e := servertest.New(t)
	e.B.Script = nil // the fake's rule scores every position
	code, body := e.Post("/v1/completions", `{"prompt":"abcd","max_tokens":0,"echo":true,"logprobs":1}`)
	r := decodeCompletion(t, body)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	c := r.Choices[0]
	lp := c.Logprobs
	if c.Text != "abcd" || str(c.FinishReason) != "length" || r.Usage.CompletionTokens != 0 || lp == nil {
		t.Fatalf("%s", body)
	}
	if !slices.Equal(lp.Tokens, []string{"a", "b", "c", "d"}) || !slices.Equal(lp.TextOffset, []int{0, 1, 2, 3}) ||
		lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil || len(lp.TokenLogprobs) != 4 {
		t.Fatalf("logprobs %+v", lp)
	}
	// Token i is scored by the logits at i-1, which peak at the fake's Next(prev, i-1).
	ids := e.Tok.Encode("abcd")
	for i := 1; i < 4; i++ {
		target := e.B.Next(ids[i-1], i-1)
		l := e.B.Logits(target)
		var z float64
		for _, x := range l {
			z += math.Exp(float64(x))
		}
		want := float64(l[ids[i]]) - math.Log(z)
		if got := *lp.TokenLogprobs[i]; math.Abs(got-want) > 1e-9 {
			t.Fatalf("token %d: logprob %v, want %v", i, got, want)
		}
		if len(lp.TopLogprobs[i]) != 1 {
			t.Fatalf("top %v", lp.TopLogprobs[i])
		}
	}
	// Generation after echo continues the offsets and scores.
	_, body = e.Post("/v1/completions", `{"prompt":"abcd","max_tokens":2,"echo":true,"logprobs":0}`)
	r = decodeCompletion(t, body)
	if lp := r.Choices[0].Logprobs; len(lp.Tokens) != 6 || lp.TokenLogprobs[5] == nil || lp.TextOffset[5] != 5 ||
		!strings.HasPrefix(r.Choices[0].Text, "abcd") {
		t.Fatalf("echo+gen: %s", body)
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 300 })
	code, body := e.Post("/tokenize", `{"prompt":"hi<|im_end|>","return_token_strs":true}`)
	var tr server.TokenizeResponse
	if err := json.Unmarshal([]byte(body), &tr); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if tr.Count != 3 || !slices.Equal(tr.Tokens, e.Tok.Encode("hi<|im_end|>")) || tr.MaxModelLen != 300 ||
		!slices.Equal(tr.TokenStrs, []string{"h", "i", "<|im_end|>"}) {
		t.Fatalf("%+v", tr)
	}
	_, body = e.Post("/tokenize", `{"messages":[{"role":"user","content":"x"}],"add_generation_prompt":false}`)
	if err := json.Unmarshal([]byte(body), &tr); err != nil || !slices.Equal(tr.Tokens, e.Tok.Encode("<|im_start|>user\nx<|im_end|>\n")) {
		t.Fatalf("chat tokenize: %s", body)
	}
	ids, _ := json.Marshal(e.Tok.Encode("a<|im_end|>b"))
	_, body = e.Post("/detokenize", `{"tokens":`+string(ids)+`}`)
	if body != `{"prompt":"a<|im_end|>b"}`+"\n" {
		t.Fatalf("detokenize: %s", body)
	}
}

func TestModelsAndHealth(t *testing.T) {
	e := servertest.New(t)
	code, _, body := e.Do("GET", "/v1/models", "")
	var ml server.ModelList
	if err := json.Unmarshal([]byte(body), &ml); err != nil || code != 200 || len(ml.Data) != 1 || ml.Data[0].ID != servertest.ModelName ||
		ml.Data[0].MaxModelLen != 512 || ml.Object != "list" {
		t.Fatalf("%d %s", code, body)
	}
	if code, _, body := e.Do("GET", "/health", ""); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("%d %s", code, body)
	}
	if !strings.Contains(e.Logs.String(), "path=/health status=200") {
		t.Fatalf("no request log: %s", e.Logs.String())
	}
}
