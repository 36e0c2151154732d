package server_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// nanBackend is the fake backend with every logit NaN, as NaN weights make them.
type nanBackend struct{ engine.Backend }

func (b nanBackend) NewSession() (engine.Session, error) {
	s, err := b.Backend.NewSession()
	return nanSession{s}, err
}

type nanSession struct{ engine.Session }

func nanAll(l []float32) []float32 {
	for i := range l {
		l[i] = float32(math.NaN())
	}
	return l
}

// Prefill and Decode ask the wrapped session for the full logits, make them NaN and return what
// o asks of those.
func (s nanSession) Prefill(ctx context.Context, t []int32, o engine.StepOptions, each func(int, []float32) error) (engine.StepResult, error) {
	if each != nil {
		inner := each
		each = func(i int, l []float32) error { return inner(i, nanAll(l)) }
	}
	l, err := engine.Logits(s.Session.Prefill(ctx, t, engine.StepOptions{Full: true}, each))
	if err != nil {
		return engine.StepResult{}, err
	}
	return engine.NewStepResult(nanAll(l), o), nil
}

func (s nanSession) Decode(ctx context.Context, t int32, o engine.StepOptions) (engine.StepResult, error) {
	l, err := engine.Logits(s.Session.Decode(ctx, t, engine.StepOptions{Full: true}))
	if err != nil {
		return engine.StepResult{}, err
	}
	return engine.NewStepResult(nanAll(l), o), nil
}

// TestNaNLogprobsEncode: non-finite logprobs are sent as engine.LogprobFloor (valid JSON, every
// route and stream), with one warning in the log.
func TestNaNLogprobsEncode(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.Model.Backend = nanBackend{c.Model.Backend} })
	for _, req := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"logprobs":true,"top_logprobs":2,"temperature":0}`},
		{"/v1/completions", `{"prompt":"Hi","max_tokens":2,"logprobs":2,"echo":true,"temperature":0}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"logprobs":true,"stream":true,"temperature":0}`},
		{"/v1/completions", `{"prompt":"Hi","max_tokens":2,"logprobs":1,"stream":true,"temperature":0}`},
	} {
		code, body := e.Post(req.path, req.body)
		if code != 200 || !strings.Contains(body, "-9999") || strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %d %s", req.body, code, body)
		}
		docs := []string{body}
		if strings.Contains(req.body, `"stream":true`) {
			docs = servertest.SSEEvents(body)
			docs = docs[:len(docs)-1] // [DONE]
		}
		for _, d := range docs {
			if !json.Valid([]byte(d)) {
				t.Fatalf("invalid JSON: %s", d)
			}
		}
	}
	if n := strings.Count(e.Logs.String(), "non-finite log-probability"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, e.Logs.String())
	}
}
