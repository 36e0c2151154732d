package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/server/servertest"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/server"
)

func chunksOf(t *testing.T, body string) ([]server.ChatResponse, bool) {
	t.Helper()
	var out []server.ChatResponse
	done := false
	for _, d := range servertest.SSEEvents(body) {
		if d == "[DONE]" {
			done = true
			continue
		}
		var c server.ChatResponse
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("%v: %s", err, d)
		}
		out = append(out, c)
	}
	return out, done
}

func TestChatStream(t *testing.T) {
	e := servertest.New(t)
	e.Script(`Hmm.</think>Calling.<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	code, hdr, body := e.Do("POST", "/v1/chat/completions", `{`+userHi+`,"stream":true,"stream_options":{"include_usage":true},
		"tools":[{"type":"function","function":{"name":"get_weather"}}],"return_token_ids":true}`)
	if code != 200 || hdr.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", code, hdr)
	}
	chunks, done := chunksOf(t, body)
	if !done {
		t.Fatal("no [DONE]")
	}
	if d := chunks[0].Choices[0].Delta; d.Role != "assistant" || len(chunks[0].PromptTokenIDs) == 0 {
		t.Fatalf("first chunk %+v", chunks[0])
	}
	var reasoning, content, args strings.Builder
	var ids []int32
	var callID, name string
	var finish string
	for i, c := range chunks[:len(chunks)-1] {
		if c.Object != "chat.completion.chunk" || c.ID != chunks[0].ID || len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		ch := c.Choices[0]
		reasoning.WriteString(ch.Delta.ReasoningContent)
		if ch.Delta.Content != nil {
			content.WriteString(*ch.Delta.Content)
		}
		ids = append(ids, ch.TokenIDs...)
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Fatalf("tool call index %+v", tc)
			}
			if tc.ID != "" {
				if callID != "" {
					t.Fatal("tool call id sent twice")
				}
				callID, name = tc.ID, tc.Function.Name
			} else if tc.Function.Name != "" {
				t.Fatal("name repeated in a later delta")
			}
			args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
			if i != len(chunks)-2 {
				t.Fatalf("finish reason in chunk %d of %d", i, len(chunks))
			}
		}
	}
	if reasoning.String() != "Hmm." || content.String() != "Calling." || name != "get_weather" ||
		args.String() != `{"city":"Paris"}` || !strings.HasPrefix(callID, "call_") || finish != "tool_calls" {
		t.Fatalf("reasoning %q content %q call %q %q %q finish %q", reasoning.String(), content.String(), callID, name, args.String(), finish)
	}
	usage := chunks[len(chunks)-1]
	if usage.Usage == nil || len(usage.Choices) != 0 || usage.Usage.CompletionTokens != len(ids) ||
		!strings.Contains(body, `"choices":[]`) {
		t.Fatalf("usage chunk %+v", usage)
	}
}

func TestCompletionStream(t *testing.T) {
	e := servertest.New(t)
	e.Script("xyz")
	_, body := e.Post("/v1/completions", `{"prompt":"ab","stream":true,"echo":true,"logprobs":0}`)
	var text strings.Builder
	var tokens []string
	finish := ""
	for _, d := range servertest.SSEEvents(body) {
		if d == "[DONE]" {
			continue
		}
		var c server.CompletionResponse
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		text.WriteString(c.Choices[0].Text)
		if lp := c.Choices[0].Logprobs; lp != nil {
			tokens = append(tokens, lp.Tokens...)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if text.String() != "abxyz" || finish != "stop" || strings.Join(tokens, "") != "abxyz<|im_end|>" {
		t.Fatalf("text %q finish %q tokens %q", text.String(), finish, tokens)
	}
	if strings.Contains(body, "usage") {
		t.Fatal("usage without include_usage")
	}
}

func TestStreamKeepAlive(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.KeepAlive = 10 * time.Millisecond })
	e.B.PrefillDelay = 4 * time.Millisecond // ~30 prompt tokens: a 120 ms prefill
	e.Script("ok")
	_, body := e.Post("/v1/chat/completions", `{`+userHi+`,"stream":true}`)
	if !strings.Contains(body, "\n: keep-alive\n\n") && !strings.HasPrefix(body, ": keep-alive\n\n") {
		t.Fatalf("no keep-alive during a long prefill: %q", body)
	}
	if _, done := chunksOf(t, body); !done {
		t.Fatal("stream not finished")
	}
}

// streamUntil starts a streamed chat and returns once a chunk carrying generated text arrived.
func streamUntil(t *testing.T, e *servertest.Env, ctx context.Context, wantText bool) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.TS.URL+"/v1/chat/completions",
		strings.NewReader(`{`+userHi+`,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") && (!wantText || strings.Contains(line, "reasoning_content")) {
			return resp, br
		}
	}
}

// A client that disconnects mid-generation stops its work within one decode step: the next request
// starts at once.
func TestDisconnectCancelsGeneration(t *testing.T) {
	const step = 50 * time.Millisecond
	e := servertest.New(t)
	e.B.DecodeDelay = step // unscripted: generates until the context is full (~20 s)
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := streamUntil(t, e, ctx, true)
	cancel()
	resp.Body.Close()
	start := time.Now()
	code, body := e.Post("/v1/chat/completions", `{`+userHi+`,"max_tokens":1}`)
	latency := time.Since(start)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	// One step for the running decode to finish, plus slack for a loaded machine.
	if latency > step+200*time.Millisecond {
		t.Fatalf("next request waited %v (decode step %v)", latency, step)
	}
	t.Logf("cancel latency: next request answered %v after the disconnect (decode step %v)", latency, step)
	decodes := e.B.Decodes.Load()
	time.Sleep(3 * step)
	if e.B.Decodes.Load() != decodes {
		t.Fatal("decoding went on after the disconnect")
	}
}

// A client that disconnects while queued leaves the queue.
func TestDisconnectWhileQueued(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.QueueSize = 1 })
	e.B.DecodeDelay = 10 * time.Millisecond
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	respA, _ := streamUntil(t, e, ctxA, true) // running
	defer respA.Body.Close()
	ctxB, cancelB := context.WithCancel(context.Background())
	respB, _ := streamUntil(t, e, ctxB, false) // queued (its role chunk is out)
	if code, _ := e.Post("/v1/chat/completions", `{`+userHi+`,"max_tokens":1}`); code != http.StatusServiceUnavailable {
		t.Fatalf("queue of 1 with one waiting: %d", code)
	}
	cancelB()
	respB.Body.Close()
	// B's place frees up; a new request may queue (and runs once A is gone).
	deadline := time.Now().Add(2 * time.Second)
	for {
		req, _ := http.NewRequest("POST", e.TS.URL+"/v1/chat/completions", strings.NewReader(`{`+userHi+`,"max_tokens":1}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.TS.Client().Do(withTimeout(req, 50*time.Millisecond))
		if err == nil {
			code := resp.StatusCode
			resp.Body.Close()
			if code != http.StatusServiceUnavailable {
				t.Fatalf("unexpected %d", code)
			}
		} else {
			break // it was queued (and timed out waiting): B's place was free
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled waiter still holds its queue place")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancelA()
	// The probe that timed out above may hold its queue place until the server sees it gone: 503
	// is allowed while that lasts, then the request must succeed.
	deadline = time.Now().Add(2 * time.Second)
	for {
		code, _ := e.Post("/v1/chat/completions", `{`+userHi+`,"max_tokens":1}`)
		if code == 200 {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after: %d", code)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withTimeout(r *http.Request, d time.Duration) *http.Request {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	_ = cancel // released by the timeout
	return r.WithContext(ctx)
}

func TestQueueFull503(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.QueueSize = 1 })
	e.B.DecodeDelay = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	respA, _ := streamUntil(t, e, ctx, true)
	defer respA.Body.Close()
	respB, _ := streamUntil(t, e, ctx, false)
	defer respB.Body.Close()
	code, hdr, body := e.Do("POST", "/v1/completions", `{"prompt":"x","max_tokens":1}`)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || str(errorOf(t, body).Code) != "server_busy" {
		t.Fatalf("%d %v %s", code, hdr, body)
	}
}

func TestBurst(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.QueueSize = 3 })
	e.B.DecodeDelay = time.Millisecond
	const n = 24
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := `{` + userHi + `,"max_tokens":4}`
			if i%2 == 1 {
				body = `{` + userHi + `,"max_tokens":4,"stream":true}`
			}
			req, _ := http.NewRequest("POST", e.TS.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.TS.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b := new(strings.Builder)
			_, _ = bufio.NewReader(resp.Body).WriteTo(b)
			codes[i] = resp.StatusCode
			if resp.StatusCode == 200 && i%2 == 1 && !strings.Contains(b.String(), "[DONE]") {
				t.Errorf("stream %d unfinished", i)
			}
		})
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		switch c {
		case 200:
			ok++
		case 503:
		default:
			t.Errorf("request %d: status %d", i, c)
		}
	}
	if ok < 4 {
		t.Fatalf("only %d of %d answered", ok, n)
	}
	if code, _ := e.Post("/v1/chat/completions", `{`+userHi+`,"max_tokens":2}`); code != 200 {
		t.Fatalf("unhealthy after the burst: %d", code)
	}
	t.Logf("burst: %d of %d answered 200, the rest 503", ok, n)
}

type failingDecoder struct{}

func (failingDecoder) Add(int32) (string, error) { return "", errors.New("detokenizer broke") }
func (failingDecoder) Flush() string             { return "" }

// An error after the stream started arrives as an error event, then [DONE]; the server stays up.
func TestStreamErrorEvent(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) {
		c.Model.NewDecoder = func(bool) engine.TextDecoder { return failingDecoder{} }
	})
	e.Script("abc")
	code, body := e.Post("/v1/chat/completions", `{`+userHi+`,"stream":true}`)
	ev := servertest.SSEEvents(body)
	if code != 200 || len(ev) < 2 || ev[len(ev)-1] != "[DONE]" || !strings.Contains(ev[len(ev)-2], `"internal_error"`) ||
		strings.Contains(ev[len(ev)-2], "detokenizer broke") { // the cause is logged, not sent
		t.Fatalf("%d %q", code, ev)
	}
	if !strings.Contains(e.Logs.String(), "detokenizer broke") {
		t.Fatalf("%d %q", code, ev)
	}
	if code, body := e.Post("/v1/chat/completions", `{`+userHi+`}`); code != 500 || !strings.Contains(body, "internal_error") ||
		strings.Contains(body, "detokenizer broke") {
		t.Fatalf("non-stream: %d %s", code, body)
	}
	if !strings.Contains(e.Logs.String(), "request failed") {
		t.Fatal("a 500 without a log line")
	}
}
