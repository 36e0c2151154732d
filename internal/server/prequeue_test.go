package server_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// countingTok counts Encode calls and the most that ran at once.
type countingTok struct {
	*servertest.Tokenizer
	calls, running, peak atomic.Int64
}

func (c *countingTok) Encode(text string) []int32 {
	c.calls.Add(1)
	n := c.running.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	time.Sleep(20 * time.Millisecond) // a long word
	defer c.running.Add(-1)
	return c.Tokenizer.Encode(text)
}

func withCounting(tok *countingTok) func(*server.Config) {
	return func(c *server.Config) { c.Model.Tok = tok }
}

// TestDeepPromptLinear: a prompt nested thousands of arrays deep is refused without the work
// that grew with the square of the depth (seconds of CPU for a 20 KB body).
func TestDeepPromptLinear(t *testing.T) {
	e := servertest.New(t)
	const depth = 9990 // under encoding/json's nesting limit
	body := `{"prompt":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	start := time.Now()
	for range 4 {
		if code, resp := e.Post("/v1/completions", body); code != 400 || !strings.Contains(resp, `"param":"prompt"`) {
			t.Fatalf("%d %s", code, resp)
		}
	}
	// A safety bound, not a speed claim: the quadratic decode took seconds per request.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("4 deep prompts took %v", d)
	}
	if code, resp := e.Post("/v1/completions", `{"prompt":[[1,2]],"max_tokens":1}`); code != 200 {
		t.Fatalf("[[ids]]: %d %s", code, resp)
	}
}

// TestLongPromptRefusedBeforeTokenizing: a prompt whose byte length alone proves it cannot fit the
// context is refused without tokenizing it.
func TestLongPromptRefusedBeforeTokenizing(t *testing.T) {
	tok := &countingTok{Tokenizer: servertest.NewTokenizer()}
	e := servertest.New(t, withCounting(tok), func(c *server.Config) { c.CtxSize = 32 })
	long := strings.Repeat("a", 1<<20)
	for _, req := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"` + long + `"}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`},
	} {
		code, body := e.Post(req.path, req.body)
		if code != 400 || !strings.Contains(body, "context_length_exceeded") {
			t.Fatalf("%s: %d %.200s", req.path, code, body)
		}
	}
	if n := tok.calls.Load(); n != 0 {
		t.Fatalf("tokenized %d oversized prompts", n)
	}
	e.Script("ok")
	if code, body := e.Post("/v1/completions", `{"prompt":"Hi","max_tokens":2}`); code != 200 || tok.calls.Load() != 1 {
		t.Fatalf("a short prompt: %d %s", code, body)
	}
}

// TestPreQueueWorkBounded: however many requests arrive at once, at most two decode, render and
// tokenize at the same time (the queue does not bound that work).
func TestPreQueueWorkBounded(t *testing.T) {
	tok := &countingTok{Tokenizer: servertest.NewTokenizer()}
	e := servertest.New(t, withCounting(tok))
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			if code, body := e.Post("/tokenize", `{"prompt":"Hello"}`); code != 200 {
				t.Errorf("%d %s", code, body)
			}
		})
	}
	wg.Wait()
	if p := tok.peak.Load(); p > 2 || tok.calls.Load() != 12 {
		t.Fatalf("%d tokenizations at once (of %d)", p, tok.calls.Load())
	}
}
